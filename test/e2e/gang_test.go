package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// A gang that does not fit must not start at all: 9 trainers of 7 GPUs on 8
// nodes of 8 GPUs. The cluster has the 63 GPUs in total (the gang passes
// Volcano's enqueue and its pods are created), and each pod fits on any
// node, so a scheduler without gang semantics would bind 8 of them.
func TestGangAllOrNothing(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()

	job := framework.NewJob(ns, "too-big", 9, framework.Task{Name: "trainer", Replicas: 9, GPUs: 7, CPU: "8"})
	framework.CreateJob(t, c, job)

	// The scheduler has judged the gang once the PodGroup says it is
	// unschedulable; the pods exist by then (the gang passed enqueue).
	pg := framework.WaitPodGroup(t, c, ns, job.Name, 60*time.Second, func(pg *schedulingv1beta1.PodGroup) bool {
		return framework.Unschedulable(pg) != ""
	})
	t.Logf("PodGroup unschedulable: %s", lastCondition(pg))
	// Several more sessions, to be sure no later cycle binds part of it.
	if err := c.WaitSchedulerSessions(ctx, 3, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	pods := framework.JobPods(t, c, ns, job.Name)
	if len(pods) != 9 {
		t.Fatalf("want the 9 pods created and waiting, got %d:\n%s", len(pods), framework.DescribePods(c, ns))
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			t.Errorf("pod %s was bound to %s although the gang cannot be placed", p.Name, p.Spec.NodeName)
		}
	}
	j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status.State.Phase != batchv1alpha1.Pending {
		t.Errorf("job phase = %s, want Pending", j.Status.State.Phase)
	}
	if pg.Status.Phase == schedulingv1beta1.PodGroupRunning {
		t.Errorf("PodGroup phase = %s, want it not Running", pg.Status.Phase)
	}
}

// A gang that fits starts as a whole and the job completes when its
// trainers finish (TaskCompleted -> CompleteJob), the pserver still running.
func TestGangRunsToCompletion(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)

	job := framework.NewJob(ns, "fits", 3,
		framework.Task{Name: "pserver", Replicas: 1, CPU: "4"},
		framework.Task{Name: "trainer", Replicas: 2, GPUs: 4, CPU: "8", SucceedAfter: "3s", CompleteJob: true},
	)
	framework.CreateJob(t, c, job)

	running := framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 60*time.Second)
	if running.Status.Running+running.Status.Succeeded < 3 {
		t.Errorf("job Running with %d running and %d succeeded pods, want all 3 of the gang started", running.Status.Running, running.Status.Succeeded)
	}
	pods := framework.JobPods(t, c, ns, job.Name)
	if len(pods) != 3 {
		t.Fatalf("want 3 pods, got %d", len(pods))
	}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			t.Errorf("pod %s not bound while its job runs", p.Name)
		}
	}
	framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Completed, 90*time.Second)
	// Volcano resets its pod counters on completion; the pods tell: both
	// trainers succeeded, and the pserver, which never exits on its own,
	// was stopped by CompleteJob.
	succeeded := 0
	for _, p := range framework.JobPods(t, c, ns, job.Name) {
		switch {
		case p.Name == job.Name+"-pserver-0" && p.DeletionTimestamp == nil:
			t.Errorf("pserver pod %s still exists (phase %s) after CompleteJob", p.Name, p.Status.Phase)
		case p.Status.Phase == corev1.PodSucceeded:
			succeeded++
		}
	}
	if succeeded != 2 {
		t.Errorf("%d trainer pods Succeeded, want 2:\n%s", succeeded, framework.DescribePods(c, ns))
	}
}

func lastCondition(pg *schedulingv1beta1.PodGroup) string {
	if n := len(pg.Status.Conditions); n > 0 {
		return pg.Status.Conditions[n-1].Message
	}
	return ""
}
