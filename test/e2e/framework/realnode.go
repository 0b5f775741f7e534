package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	busv1alpha1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/harness/paddleprobe"
	"github.com/volcano-paddle/volcano-paddle/internal/dnsbarrier"
)

// RealNodeCluster returns the cluster with the real node real-0 shared by
// the tests of this binary (the default KWOK topology plus real-0, CoreDNS
// with `cache 30` and kubernetes `ttl 30`), starting it on first use with
// the images of `make images` (.local/images) imported. It fails the test
// with what is missing when the machine cannot run a real node (root and
// the packages of hack/realnode-deps.sh).
func RealNodeCluster(t *testing.T) *localcluster.Cluster {
	t.Helper()
	return realNodeCluster.get(t)
}

// Image is the reference of one of our images imported into the real node.
func Image(t *testing.T, c *localcluster.Cluster, name string) string {
	t.Helper()
	ref, ok := c.RealNodeImages()[name]
	if !ok {
		t.Fatalf("image %s is not on the real node (have %v); run `make images`", name, c.RealNodeImages())
	}
	return ref
}

// OnRealNode pins a pod template to real-0: selector, toleration, Volcano
// as scheduler, small requests (the node has the machine's 2 CPUs).
func OnRealNode(spec *corev1.PodSpec) {
	spec.SchedulerName = "volcano"
	spec.NodeSelector = map[string]string{localcluster.RealNodeLabel: "true"}
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: localcluster.RealNodeTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
	for i := range spec.Containers {
		spec.Containers[i].Resources = corev1.ResourceRequirements{Requests: small, Limits: small}
	}
}

// ProbeTask is one task of a probe job.
type ProbeTask struct {
	Name     string
	Replicas int32
	// CompleteJob adds TaskCompleted -> CompleteJob (a PS job's trainers).
	CompleteJob bool
}

// ProbeJob builds a Paddle job whose containers run paddle-probe on real-0
// with the given plugin arguments (plus --barrier-image of our build) and
// probe flags. Pod failures and evictions restart the job, up to maxRetry
// times.
func ProbeJob(t *testing.T, c *localcluster.Cluster, ns, name string, pluginArgs, probeArgs []string, maxRetry int32, tasks ...ProbeTask) *batchv1alpha1.Job {
	t.Helper()
	probe := Image(t, c, "paddle-probe")
	args := append([]string{"--barrier-image=" + Image(t, c, "paddle-barrier")}, pluginArgs...)
	job := &batchv1alpha1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1alpha1.JobSpec{
			SchedulerName: "volcano",
			MaxRetry:      maxRetry,
			Plugins:       map[string][]string{"paddle": args},
			Policies: []batchv1alpha1.LifecyclePolicy{
				{Event: busv1alpha1.PodEvictedEvent, Action: busv1alpha1.RestartJobAction},
				{Event: busv1alpha1.PodFailedEvent, Action: busv1alpha1.RestartJobAction},
			},
		},
	}
	for _, tk := range tasks {
		spec := corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "paddle", Image: probe, ImagePullPolicy: corev1.PullNever,
				// The trainer process is the container's PID 1, as when
				// the examples' commands exec it.
				Command: append([]string{"/usr/local/bin/paddle-probe"}, probeArgs...),
				Env: []corev1.EnvVar{
					{Name: "PROBE_POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "PROBE_POD_UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
					{Name: "PROBE_JOB_VERSION", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + batchv1alpha1.JobVersion + "']"}}},
				},
			}},
		}
		OnRealNode(&spec)
		ts := batchv1alpha1.TaskSpec{Name: tk.Name, Replicas: tk.Replicas, Template: corev1.PodTemplateSpec{Spec: spec}}
		if tk.CompleteJob {
			ts.Policies = []batchv1alpha1.LifecyclePolicy{{Event: busv1alpha1.TaskCompletedEvent, Action: busv1alpha1.CompleteJobAction}}
		}
		job.Spec.Tasks = append(job.Spec.Tasks, ts)
		job.Spec.MinAvailable += tk.Replicas
	}
	return job
}

// PodRecord is what a PodRecorder saw of one pod (one UID).
type PodRecord struct {
	Name, UID string
	// JobVersion is the pod's volcano.sh/job-version annotation.
	JobVersion string
	// IPAt is when the pod's IP was first seen; IPAtCondition is the
	// PodReadyToStartContainers transition the kubelet wrote (whole
	// seconds, so never later than the real moment).
	IP            string
	IPAt          time.Time
	IPAtCondition time.Time
	// DeletingAt is when a deletion timestamp was first seen, GoneAt when
	// the pod was deleted.
	DeletingAt, GoneAt time.Time
	// Last is the last state seen.
	Last *corev1.Pod
}

// PodRecorder watches the pods of a namespace and keeps every state change
// with the time it was seen, also of pods that are deleted meanwhile.
type PodRecorder struct {
	mu   sync.Mutex
	pods map[string]*PodRecord
	stop context.CancelFunc
	done chan struct{}
}

// RecordPods starts a recorder for ns, stopped when the test ends.
func RecordPods(t *testing.T, c *localcluster.Cluster, ns string) *PodRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Kube.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatalf("watching pods in %s: %v", ns, err)
	}
	r := &PodRecorder{pods: map[string]*PodRecord{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if p, ok := ev.Object.(*corev1.Pod); ok {
					r.observe(ev.Type, p, time.Now())
				}
			}
		}
	}()
	t.Cleanup(r.Stop)
	return r
}

func (r *PodRecorder) observe(typ watch.EventType, p *corev1.Pod, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.pods[string(p.UID)]
	if !ok {
		rec = &PodRecord{Name: p.Name, UID: string(p.UID), JobVersion: p.Annotations[batchv1alpha1.JobVersion]}
		r.pods[string(p.UID)] = rec
	}
	if rec.IP == "" && p.Status.PodIP != "" {
		rec.IP, rec.IPAt = p.Status.PodIP, now
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReadyToStartContainers && cond.Status == corev1.ConditionTrue {
				rec.IPAtCondition = cond.LastTransitionTime.Time
			}
		}
	}
	if p.DeletionTimestamp != nil && rec.DeletingAt.IsZero() {
		rec.DeletingAt = now
	}
	if typ == watch.Deleted {
		rec.GoneAt = now
	}
	rec.Last = p.DeepCopy()
}

// Stop ends the watch.
func (r *PodRecorder) Stop() {
	r.stop()
	<-r.done
}

// Pods returns what was recorded, by UID.
func (r *PodRecorder) Pods() map[string]PodRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]PodRecord{}
	for k, v := range r.pods {
		out[k] = *v
	}
	return out
}

// Of returns the records of the pods whose name starts with prefix (a job's
// pods: "<job>-"), sorted by name and job version.
func (r *PodRecorder) Of(prefix string) []PodRecord {
	var out []PodRecord
	for _, p := range r.Pods() {
		if strings.HasPrefix(p.Name, prefix) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].JobVersion != out[j].JobVersion {
			return out[i].JobVersion < out[j].JobVersion
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// ProbeReport parses the report paddle-probe left in a pod's status (its
// container's termination message); ok is false while it has none.
func ProbeReport(p *corev1.Pod) (r paddleprobe.Report, ok bool, err error) {
	ok, err = terminationMessage(p.Name, p.Status.ContainerStatuses, "paddle", &r)
	return r, ok, err
}

// BarrierReport parses the report paddle-barrier left in a pod's status.
func BarrierReport(p *corev1.Pod) (r dnsbarrier.Report, ok bool, err error) {
	ok, err = terminationMessage(p.Name, p.Status.InitContainerStatuses, "paddle-wait-peers", &r)
	return r, ok, err
}

func terminationMessage(pod string, statuses []corev1.ContainerStatus, container string, into interface{}) (bool, error) {
	for _, s := range statuses {
		if s.Name != container || s.State.Terminated == nil || s.State.Terminated.Message == "" {
			continue
		}
		if err := json.Unmarshal([]byte(s.State.Terminated.Message), into); err != nil {
			return false, fmt.Errorf("%s/%s: termination message %q: %w", pod, container, s.State.Terminated.Message, err)
		}
		return true, nil
	}
	return false, nil
}

// ContainerExit is the exit code of a pod's container, if it terminated.
func ContainerExit(p *corev1.Pod, name string) (int32, bool) {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name && s.State.Terminated != nil {
			return s.State.Terminated.ExitCode, true
		}
	}
	return 0, false
}
