// Package testbuilders builds the Kubernetes and Volcano objects the
// project's tests need, fluently, in the style of kube-scheduler's
// st.MakePod() (k8s.io/kubernetes pkg/scheduler/testing/wrappers.go):
// MakeX returns a wrapper with sensible defaults, each method sets one
// thing and returns the wrapper, Obj returns the object.
package testbuilders

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	"volcano.sh/apis/pkg/apis/helpers"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

// Defaults of a task's container: what the examples of docs/ use.
const (
	DefaultContainerName = "paddle"
	DefaultImage         = "paddlepaddle/paddle:2.6.1"
)

// JobWrapper builds a Volcano batch Job.
type JobWrapper struct {
	batch.Job
	// minAvailableSet: MinAvailable was given; otherwise Obj sets it to
	// the sum of the tasks' replicas, the whole gang.
	minAvailableSet bool
}

// MakeJob is a Job of scheduler volcano, generation 1, with a UID derived
// from its namespace and name, and no tasks yet.
func MakeJob(namespace, name string) *JobWrapper {
	return &JobWrapper{Job: batch.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: batch.SchemeGroupVersion.String(), Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Generation: 1,
			UID: types.UID("uid-" + namespace + "-" + name)},
		Spec: batch.JobSpec{SchedulerName: "volcano"},
	}}
}

// UID sets the job's UID (plugins cache per UID: tests that build the
// same name twice give each its own).
func (j *JobWrapper) UID(uid string) *JobWrapper {
	j.Job.UID = types.UID(uid)
	return j
}

// Generation sets metadata.generation.
func (j *JobWrapper) Generation(g int64) *JobWrapper {
	j.Job.Generation = g
	return j
}

// Plugin sets spec.plugins[name] to args (nil when none are given, as
// `paddle: []` decodes).
func (j *JobWrapper) Plugin(name string, args ...string) *JobWrapper {
	if j.Spec.Plugins == nil {
		j.Spec.Plugins = map[string][]string{}
	}
	j.Spec.Plugins[name] = args
	return j
}

// Queue sets spec.queue.
func (j *JobWrapper) Queue(q string) *JobWrapper {
	j.Spec.Queue = q
	return j
}

// MinAvailable sets spec.minAvailable.
func (j *JobWrapper) MinAvailable(n int32) *JobWrapper {
	j.Spec.MinAvailable, j.minAvailableSet = n, true
	return j
}

// Policy adds a job-level lifecycle policy.
func (j *JobWrapper) Policy(event bus.Event, action bus.Action) *JobWrapper {
	j.Spec.Policies = append(j.Spec.Policies, batch.LifecyclePolicy{Event: event, Action: action})
	return j
}

// Task adds a task built with MakeTask.
func (j *JobWrapper) Task(t *TaskWrapper) *JobWrapper {
	j.Spec.Tasks = append(j.Spec.Tasks, *t.Obj())
	return j
}

// Version sets status.version, the incarnation Volcano writes on pods.
func (j *JobWrapper) Version(v int32) *JobWrapper {
	j.Status.Version = v
	return j
}

// Obj returns the job.
func (j *JobWrapper) Obj() *batch.Job {
	out := j.Job.DeepCopy()
	if !j.minAvailableSet {
		out.Spec.MinAvailable = 0
		for _, t := range out.Spec.Tasks {
			out.Spec.MinAvailable += t.Replicas
		}
	}
	return out
}

// TaskWrapper builds one task of a Job.
type TaskWrapper struct{ batch.TaskSpec }

// MakeTask is a task of replicas pods with restartPolicy Never and one
// container (DefaultContainerName, DefaultImage) asking for 1 CPU.
func MakeTask(name string, replicas int32) *TaskWrapper {
	cpu := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	return &TaskWrapper{batch.TaskSpec{Name: name, Replicas: replicas, Template: v1.PodTemplateSpec{
		Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: DefaultContainerName, Image: DefaultImage,
				Resources: v1.ResourceRequirements{Limits: cpu, Requests: cpu.DeepCopy()}}},
		},
	}}}
}

// MinAvailable sets the task's minAvailable.
func (t *TaskWrapper) MinAvailable(n int32) *TaskWrapper {
	t.TaskSpec.MinAvailable = &n
	return t
}

// Policy adds a task-level lifecycle policy.
func (t *TaskWrapper) Policy(event bus.Event, action bus.Action) *TaskWrapper {
	t.Policies = append(t.Policies, batch.LifecyclePolicy{Event: event, Action: action})
	return t
}

// RestartPolicy sets the template's restartPolicy ("" for unset).
func (t *TaskWrapper) RestartPolicy(p v1.RestartPolicy) *TaskWrapper {
	t.Template.Spec.RestartPolicy = p
	return t
}

// Hostname sets the template's hostname.
func (t *TaskWrapper) Hostname(h string) *TaskWrapper {
	t.Template.Spec.Hostname = h
	return t
}

// GPUs sets limits and requests of gputopology.ResourceName on the first
// container (0 removes them).
func (t *TaskWrapper) GPUs(n int64) *TaskWrapper {
	c := t.first()
	if n == 0 {
		delete(c.Resources.Limits, gputopology.ResourceName)
		delete(c.Resources.Requests, gputopology.ResourceName)
		return t
	}
	for _, l := range []*v1.ResourceList{&c.Resources.Limits, &c.Resources.Requests} {
		if *l == nil {
			*l = v1.ResourceList{}
		}
		(*l)[gputopology.ResourceName] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return t
}

// Env appends variables to the first container.
func (t *TaskWrapper) Env(env ...v1.EnvVar) *TaskWrapper {
	c := t.first()
	c.Env = append(c.Env, env...)
	return t
}

// Port declares a TCP port on the first container.
func (t *TaskWrapper) Port(name string, port int32) *TaskWrapper {
	c := t.first()
	c.Ports = append(c.Ports, v1.ContainerPort{Name: name, ContainerPort: port, Protocol: v1.ProtocolTCP})
	return t
}

// Command sets the first container's command.
func (t *TaskWrapper) Command(argv ...string) *TaskWrapper {
	t.first().Command = argv
	return t
}

// Container adds another container to the template.
func (t *TaskWrapper) Container(c v1.Container) *TaskWrapper {
	t.Template.Spec.Containers = append(t.Template.Spec.Containers, c)
	return t
}

// NoContainers removes every container (a task Paddle cannot run in).
func (t *TaskWrapper) NoContainers() *TaskWrapper {
	t.Template.Spec.Containers = nil
	return t
}

// Obj returns the task.
func (t *TaskWrapper) Obj() *batch.TaskSpec { return t.TaskSpec.DeepCopy() }

func (t *TaskWrapper) first() *v1.Container {
	if len(t.Template.Spec.Containers) == 0 {
		panic("testbuilders: task " + t.Name + " has no container")
	}
	return &t.Template.Spec.Containers[0]
}

// TaskPod is pod index of the named task as Volcano's job controller
// creates it (volcano.sh/volcano pkg/controllers/job/job_controller_util.go:
// createJobPod): named <job>-<task>-<index>, owned by the job, the
// template's spec, and the labels and annotations Volcano sets (task,
// index, job name, namespace, queue, job version, retry count). It panics
// when the job has no such task.
func TaskPod(job *batch.Job, task string, index int) *v1.Pod {
	var ts *batch.TaskSpec
	for i := range job.Spec.Tasks {
		if job.Spec.Tasks[i].Name == task {
			ts = &job.Spec.Tasks[i]
		}
	}
	if ts == nil {
		panic(fmt.Sprintf("testbuilders: job %s has no task %q", job.Name, task))
	}
	tmpl := ts.Template.DeepCopy()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("%s-%s-%d", job.Name, ts.Name, index),
			Namespace:       job.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, helpers.JobKind)},
			Labels:          map[string]string{},
			Annotations:     map[string]string{},
		},
		Spec: tmpl.Spec,
	}
	for k, v := range tmpl.Labels {
		pod.Labels[k] = v
	}
	for k, v := range tmpl.Annotations {
		pod.Annotations[k] = v
	}
	idx := strconv.Itoa(index)
	for k, v := range map[string]string{
		batch.TaskSpecKey:      ts.Name,
		batch.TaskIndex:        idx,
		batch.JobNameKey:       job.Name,
		batch.QueueNameKey:     job.Spec.Queue,
		batch.JobVersion:       strconv.Itoa(int(job.Status.Version)),
		batch.PodTemplateKey:   job.Name + "-" + ts.Name,
		batch.JobRetryCountKey: strconv.Itoa(int(job.Status.RetryCount)),
	} {
		pod.Annotations[k] = v
	}
	for k, v := range map[string]string{
		batch.TaskIndex:       idx,
		batch.JobNameKey:      job.Name,
		batch.TaskSpecKey:     ts.Name,
		batch.JobNamespaceKey: job.Namespace,
		batch.QueueNameKey:    job.Spec.Queue,
	} {
		pod.Labels[k] = v
	}
	return pod
}
