// Package testbuilders makes the Kubernetes and Volcano objects tests
// need, fluently, in the style of kube-scheduler's test wrappers
// (k8s.io/kubernetes/pkg/scheduler/testing/wrappers.go: st.MakePod()...Obj()),
// so each test says only what matters to it and the labels, annotations and
// resource names the plugins read are written once, here.
package testbuilders

import (
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// PodWrapper builds a pod; Obj returns it.
type PodWrapper struct{ v1.Pod }

// MakePod starts a pod with one container, no requests, empty labels and
// annotations, in the Pending phase.
func MakePod() *PodWrapper {
	return &PodWrapper{v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{}}},
		Status:     v1.PodStatus{Phase: v1.PodPending},
	}}
}

// Obj returns the pod. Its UID defaults to "<namespace>-<name>", as
// Volcano's util.BuildPod makes it, so a pod is one task in a session.
func (p *PodWrapper) Obj() *v1.Pod {
	if p.GetUID() == "" {
		p.SetUID(types.UID(fmt.Sprintf("%s-%s", p.GetNamespace(), p.GetName())))
	}
	return &p.Pod
}

func (p *PodWrapper) Name(name string) *PodWrapper       { p.SetName(name); return p }
func (p *PodWrapper) Namespace(ns string) *PodWrapper    { p.SetNamespace(ns); return p }
func (p *PodWrapper) UID(uid string) *PodWrapper         { p.SetUID(types.UID(uid)); return p }
func (p *PodWrapper) Phase(ph v1.PodPhase) *PodWrapper   { p.Status.Phase = ph; return p }
func (p *PodWrapper) Label(k, v string) *PodWrapper      { p.Labels[k] = v; return p }
func (p *PodWrapper) Annotation(k, v string) *PodWrapper { p.Annotations[k] = v; return p }

// Node binds the pod to a node (Spec.NodeName) and marks it Running, as a
// pod the kubelet runs.
func (p *PodWrapper) Node(name string) *PodWrapper {
	p.Spec.NodeName = name
	p.Status.Phase = v1.PodRunning
	return p
}

// NodeSelector adds a node selector entry.
func (p *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

// Req adds requests of the first container: resource name, quantity.
func (p *PodWrapper) Req(name v1.ResourceName, quantity string) *PodWrapper {
	c := &p.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = v1.ResourceList{}
	}
	c.Resources.Requests[name] = resource.MustParse(quantity)
	return p
}

// CPU and Memory set the first container's requests.
func (p *PodWrapper) CPU(q string) *PodWrapper    { return p.Req(v1.ResourceCPU, q) }
func (p *PodWrapper) Memory(q string) *PodWrapper { return p.Req(v1.ResourceMemory, q) }

// GPUs requests n GPUs (gputopology.ResourceName); 0 requests none.
func (p *PodWrapper) GPUs(n int) *PodWrapper {
	if n <= 0 {
		return p
	}
	p.Req(gputopology.ResourceName, "0")
	p.Spec.Containers[0].Resources.Requests[gputopology.ResourceName] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	return p
}

// Scheduler sets the pod's scheduler name.
func (p *PodWrapper) Scheduler(name string) *PodWrapper {
	p.Spec.SchedulerName = name
	return p
}

// Container names the first container.
func (p *PodWrapper) Container(name string) *PodWrapper {
	p.Spec.Containers[0].Name = name
	return p
}

// Limited sets the first container's limits to its requests (set them
// first), as a Guaranteed pod has.
func (p *PodWrapper) Limited() *PodWrapper {
	c := &p.Spec.Containers[0]
	c.Resources.Limits = c.Resources.Requests.DeepCopy()
	return p
}

// PodGroup names the pod's Volcano PodGroup (the annotation Volcano's
// scheduler groups tasks into jobs by).
func (p *PodWrapper) PodGroup(name string) *PodWrapper {
	return p.Annotation(schedulingv1.KubeGroupNameAnnotationKey, name)
}

// Task marks the pod as replica index of Volcano task spec task, as
// Volcano's job controller does (label and annotation of the task spec,
// label of the index).
func (p *PodWrapper) Task(task string, index int) *PodWrapper {
	return p.Label(batch.TaskSpecKey, task).Annotation(batch.TaskSpecKey, task).Label(batch.TaskIndex, strconv.Itoa(index))
}

// Paddle marks the pod as the paddle job plugin does: role, index, mode.
func (p *PodWrapper) Paddle(role paddleapi.Role, index int, mode paddleapi.Mode) *PodWrapper {
	return p.Label(paddleapi.RoleLabel, string(role)).Label(paddleapi.IndexLabel, strconv.Itoa(index)).Label(paddleapi.ModeLabel, string(mode))
}

// Priority sets the pod's priority, as the admission of its
// PriorityClass does.
func (p *PodWrapper) Priority(v int32) *PodWrapper {
	p.Spec.Priority = &v
	return p
}

// Created sets the creation time.
func (p *PodWrapper) Created(t time.Time) *PodWrapper {
	p.CreationTimestamp = metav1.NewTime(t)
	return p
}

// Started sets the time the kubelet started the pod.
func (p *PodWrapper) Started(t time.Time) *PodWrapper {
	st := metav1.NewTime(t)
	p.Status.StartTime = &st
	return p
}

// Elastic marks the pod as a trainer of an elastic job, as the paddle job
// plugin does: the elastic label, and preemptable for Volcano so that its
// pods above the job's minimum may be taken back.
func (p *PodWrapper) Elastic() *PodWrapper {
	return p.Label(paddleapi.ElasticLabel, "true").Annotation(schedulingv1.PodPreemptable, "true")
}

// Checkpointable marks the pod as one of a job that opted in as
// checkpointable (the job plugin's --checkpointable): the label the
// scheduler plugin reads, and preemptable for Volcano.
func (p *PodWrapper) Checkpointable() *PodWrapper {
	return p.Label(paddleapi.CheckpointableLabel, "true").Annotation(schedulingv1.PodPreemptable, "true")
}

// RestartCost sets the job's --restart-cost as the job plugin writes it.
func (p *PodWrapper) RestartCost(d time.Duration) *PodWrapper {
	return p.Annotation(paddleapi.RestartCostAnnotation, d.String())
}

// Retries says the pod was created after the job had restarted retries
// times (Volcano's retry count) and that the job allows maxRetry
// (spec.maxRetry, as the job plugin writes it; negative: not written).
func (p *PodWrapper) Retries(retries, maxRetry int) *PodWrapper {
	p.Annotation(paddleapi.RetryCountAnnotation, strconv.Itoa(retries))
	if maxRetry >= 0 {
		p.Annotation(paddleapi.MaxRetryAnnotation, strconv.Itoa(maxRetry))
	}
	return p
}
