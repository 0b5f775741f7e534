package framework

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	busv1alpha1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Annotations understood by the local cluster's KWOK stages.
const (
	SucceedAfter = localcluster.SucceedAfterAnnotation
	FailAfter    = localcluster.FailAfterAnnotation
)

// FailPod makes KWOK end a running pod as Failed with exit code 1 (the
// FailAfter stage), as a crashed process would.
func FailPod(t *testing.T, c *localcluster.Cluster, ns, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"annotations":{"` + FailAfter + `":"0s"}}}`)
	if _, err := c.Kube.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Task describes one task of a test job.
type Task struct {
	Name     string
	Replicas int32
	CPU      string
	GPUs     int
	// SucceedAfter makes the task's pods finish successfully this long after
	// they start ("" keeps them running).
	SucceedAfter string
	// CompleteJob adds the policy TaskCompleted -> CompleteJob to the task.
	CompleteJob bool
}

// NewJob builds a Volcano Job in the shape users write: schedulerName
// volcano, a gang via minAvailable, restart policies on failure.
func NewJob(ns, name string, minAvailable int32, tasks ...Task) *batchv1alpha1.Job {
	job := &batchv1alpha1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1alpha1.JobSpec{
			SchedulerName: "volcano",
			MinAvailable:  minAvailable,
			Policies: []batchv1alpha1.LifecyclePolicy{
				{Event: busv1alpha1.PodEvictedEvent, Action: busv1alpha1.RestartJobAction},
				{Event: busv1alpha1.PodFailedEvent, Action: busv1alpha1.RestartJobAction},
			},
		},
	}
	for _, tk := range tasks {
		cpu := tk.CPU
		if cpu == "" {
			cpu = "1"
		}
		res := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse("1Gi"),
		}
		if tk.GPUs > 0 {
			res[gputopology.ResourceName] = *resource.NewQuantity(int64(tk.GPUs), resource.DecimalSI)
		}
		spec := batchv1alpha1.TaskSpec{
			Name:     tk.Name,
			Replicas: tk.Replicas,
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:      "paddle",
						Image:     "registry.example.com/paddle:2.6",
						Resources: corev1.ResourceRequirements{Requests: res, Limits: res},
					}},
				},
			},
		}
		if tk.SucceedAfter != "" {
			spec.Template.Annotations = map[string]string{SucceedAfter: tk.SucceedAfter}
		}
		if tk.CompleteJob {
			spec.Policies = []batchv1alpha1.LifecyclePolicy{{Event: busv1alpha1.TaskCompletedEvent, Action: busv1alpha1.CompleteJobAction}}
		}
		job.Spec.Tasks = append(job.Spec.Tasks, spec)
	}
	return job
}

// CreateJob submits a job and fails the test on error.
func CreateJob(t *testing.T, c *localcluster.Cluster, job *batchv1alpha1.Job) *batchv1alpha1.Job {
	t.Helper()
	out, err := c.Volcano.BatchV1alpha1().Jobs(job.Namespace).Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating job %s/%s: %v", job.Namespace, job.Name, err)
	}
	return out
}

// WaitJobPhase waits until the job reaches phase, failing with the job's
// last state and its pods when it does not.
func WaitJobPhase(t *testing.T, c *localcluster.Cluster, ns, name string, phase batchv1alpha1.JobPhase, timeout time.Duration) *batchv1alpha1.Job {
	t.Helper()
	var job *batchv1alpha1.Job
	err := Poll(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		job = j
		return j.Status.State.Phase == phase, nil
	})
	if err != nil {
		last := "unknown"
		if job != nil {
			last = fmt.Sprintf("%s (%s: %s)", job.Status.State.Phase, job.Status.State.Reason, job.Status.State.Message)
		}
		t.Fatalf("job %s/%s did not reach %s within %s: last phase %s\npods:\n%s", ns, name, phase, timeout, last, DescribePods(c, ns))
	}
	return job
}

// WaitPodGroup waits until the PodGroup of a Volcano Job (the one it owns)
// satisfies cond, failing with its last Unschedulable condition and the
// namespace's pods when it does not.
func WaitPodGroup(t *testing.T, c *localcluster.Cluster, ns, job string, timeout time.Duration, cond func(*schedulingv1beta1.PodGroup) bool) *schedulingv1beta1.PodGroup {
	t.Helper()
	var last *schedulingv1beta1.PodGroup
	err := Poll(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		pgs, err := c.Volcano.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range pgs.Items {
			pg := &pgs.Items[i]
			for _, o := range pg.OwnerReferences {
				if o.Kind == "Job" && o.Name == job {
					last = pg
					return cond(pg), nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("PodGroup of job %s/%s: %v (%s)\npods:\n%sevents:\n%sscheduler log lines naming the job:\n%scontroller manager log lines naming it:\n%s",
			ns, job, err, describePodGroup(last), DescribePods(c, ns), DescribeEvents(c, ns),
			LogLines(c, localcluster.Scheduler, ns+"/"+job, 30), LogLines(c, localcluster.ControllerManager, ns+"/"+job, 20))
	}
	return last
}

// describePodGroup is a PodGroup's phase and conditions, for failure
// messages: a gang Volcano never enqueued has phase Pending and no
// condition, one it judged has an Unschedulable condition.
func describePodGroup(pg *schedulingv1beta1.PodGroup) string {
	if pg == nil {
		return "no PodGroup"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", pg.Status.Phase)
	for _, cond := range pg.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	return b.String()
}

// DescribeEvents is a one-line-per-event view of a namespace's events
// (the Volcano scheduler's enqueue refusals are PodGroup events), for
// failure messages.
func DescribeEvents(c *localcluster.Cluster, ns string) string {
	events, err := c.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return "  " + err.Error() + "\n"
	}
	var b strings.Builder
	for _, e := range events.Items {
		fmt.Fprintf(&b, "  %s %s/%s %s x%d: %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Count, e.Message)
	}
	if b.Len() == 0 {
		return "  (no events)\n"
	}
	return b.String()
}

// LogLines is the last max lines of a component's log that contain substr,
// for failure messages (the logs stay on the machine that ran the test).
func LogLines(c *localcluster.Cluster, component, substr string, max int) string {
	data, err := os.ReadFile(c.LogPath(component))
	if err != nil {
		return "  " + err.Error() + "\n"
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, substr) {
			lines = append(lines, l)
		}
	}
	if len(lines) > max {
		lines = lines[len(lines)-max:]
	}
	if len(lines) == 0 {
		return "  (none)\n"
	}
	return "  " + strings.Join(lines, "\n  ") + "\n"
}

// Held is the PodGroup's paddle hold condition (paddleapi.HeldCondition),
// nil when it has none.
func Held(pg *schedulingv1beta1.PodGroup) *schedulingv1beta1.PodGroupCondition {
	for i := range pg.Status.Conditions {
		if string(pg.Status.Conditions[i].Type) == paddleapi.HeldCondition {
			return &pg.Status.Conditions[i]
		}
	}
	return nil
}

// WaitJobEvent waits until an Event with that reason is posted on the
// Volcano Job and returns it.
func WaitJobEvent(t *testing.T, c *localcluster.Cluster, ns, job, reason string, timeout time.Duration) corev1.Event {
	t.Helper()
	var found corev1.Event
	err := Poll(context.Background(), timeout, func(ctx context.Context) (bool, error) {
		events, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Job,involvedObject.name=" + job + ",reason=" + reason})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.APIVersion == batchv1alpha1.SchemeGroupVersion.String() {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s Event on Job %s/%s: %v\nevents:\n%s", reason, ns, job, err, DescribeEvents(c, ns))
	}
	return found
}

// Unschedulable is the message of the PodGroup's Unschedulable condition
// (Volcano's gang plugin writes the job's fit errors there), "" when it has
// none.
func Unschedulable(pg *schedulingv1beta1.PodGroup) string {
	for _, cond := range pg.Status.Conditions {
		if cond.Type == schedulingv1beta1.PodGroupUnschedulableType && cond.Status == corev1.ConditionTrue {
			return cond.Message
		}
	}
	return ""
}

// JobPods lists the pods of a job sorted by name.
func JobPods(t *testing.T, c *localcluster.Cluster, ns, job string) []corev1.Pod {
	t.Helper()
	pods, err := c.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: batchv1alpha1.JobNameKey + "=" + job})
	if err != nil {
		t.Fatalf("listing pods of %s/%s: %v", ns, job, err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	return pods.Items
}

// DescribePods is a one-line-per-pod view of a namespace for failure messages.
func DescribePods(c *localcluster.Cluster, ns string) string {
	pods, err := c.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "  %s phase=%s node=%q\n", p.Name, p.Status.Phase, p.Spec.NodeName)
	}
	if b.Len() == 0 {
		return "  (no pods)\n"
	}
	return b.String()
}
