package e2e

import (
	"context"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/internal/localcluster"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// starvationAfterE2E is the threshold this test runs the scheduler with, so
// a gang starves within the test.
const starvationAfterE2E = 3 * time.Second

// A Paddle gang that has waited past paddle.starvationAfter reserves the
// node expected to drain first, the one whose pods started last (kubelet
// start times, here KWOK's), on a real API server and our scheduler
// binary. A job that would take the reserved GPUs goes to another node, or
// waits and says why; the gang starts on its node once that drains.
func TestStarvingGangReservesYoungestNode(t *testing.T) {
	c := framework.Cluster(t)
	ctx := context.Background()
	useDeployConfWith(t, c, "paddle.starvationAfter: 4h", "paddle.starvationAfter: "+starvationAfterE2E.String())
	ns := framework.Namespace(t, c)

	// Every GPU busy. The pods on the young node start last; every other
	// node's started earlier. By GPUs still busy all nodes are equal (the
	// former rule took the first rack's first node).
	const young, old = "gpu-r1-n3", "gpu-r1-n2"
	var first []string
	for _, n := range localcluster.DefaultTopology().Nodes() {
		switch n.Name {
		case young:
		case old:
			createBoundPod(t, c, ns, "old-a", old, 4)
			createBoundPod(t, c, ns, "old-b", old, 4)
			first = append(first, "old-a", "old-b")
		default:
			createBoundPod(t, c, ns, "full-"+n.Name, n.Name, 8)
			first = append(first, "full-"+n.Name)
		}
	}
	started := waitStarted(t, c, ns, first)
	// Start times have a resolution of a second: the young pods must start
	// in a later one.
	if err := framework.Poll(ctx, 10*time.Second, func(context.Context) (bool, error) {
		return time.Now().After(started.Add(1100 * time.Millisecond)), nil
	}); err != nil {
		t.Fatal(err)
	}
	createBoundPod(t, c, ns, "young-a", young, 4)
	createBoundPod(t, c, ns, "young-b", young, 4)
	waitStarted(t, c, ns, []string{"young-a", "young-b"})

	big := paddleJob(ns, "big", nil, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 8})
	framework.CreateJob(t, c, big)
	// Starving: waited past the threshold and still unschedulable; then a
	// few sessions so that the reservation is planned.
	pg := framework.WaitPodGroup(t, c, ns, "big", 60*time.Second, func(pg *schedulingv1beta1.PodGroup) bool {
		return time.Since(pg.CreationTimestamp.Time) > starvationAfterE2E+time.Second && framework.Unschedulable(pg) != ""
	})
	t.Logf("big: %s", framework.Unschedulable(pg))
	if err := c.WaitSchedulerSessions(ctx, 3, 60*time.Second); err != nil {
		t.Fatal(err)
	}

	// 4 GPUs free on both nodes; the gang still does not fit. A 4-GPU job
	// goes to the old node: the young one is reserved.
	deletePods(t, c, ns, "young-a", "old-a")
	small := paddleJob(ns, "small", nil, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 4})
	framework.CreateJob(t, c, small)
	framework.WaitJobPhase(t, c, ns, small.Name, batchv1alpha1.Running, 60*time.Second)
	if got := framework.JobPods(t, c, ns, small.Name)[0].Spec.NodeName; got != old {
		t.Fatalf("small job placed on %s, want %s (the reservation keeps %s's free GPUs for the starving gang)\n%s", got, old, young, framework.DescribePods(c, ns))
	}
	// A second one has nowhere else to go: it waits, and its PodGroup says
	// which gang holds the free GPUs.
	small2 := paddleJob(ns, "small-2", nil, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 4})
	framework.CreateJob(t, c, small2)
	// The Volcano Job's name, not its PodGroup's (big-<uid>); Volcano
	// joins node reasons with ", " and ends with ".".
	want := regexp.MustCompile(`reserved for starving gang ` + regexp.QuoteMeta(ns+"/big") + `[,.]`)
	pg2 := framework.WaitPodGroup(t, c, ns, "small-2", 60*time.Second, func(pg *schedulingv1beta1.PodGroup) bool {
		return want.MatchString(framework.Unschedulable(pg))
	})
	t.Logf("small-2: %s", framework.Unschedulable(pg2))

	// The young node drains: the gang starts there.
	deletePods(t, c, ns, "young-b")
	framework.WaitJobPhase(t, c, ns, big.Name, batchv1alpha1.Running, 60*time.Second)
	if got := framework.JobPods(t, c, ns, big.Name)[0].Spec.NodeName; got != young {
		t.Errorf("starving gang placed on %s, want its reserved node %s", got, young)
	}
	for _, p := range framework.JobPods(t, c, ns, small2.Name) {
		if p.Spec.NodeName != "" {
			t.Errorf("small-2 placed on %s, where the gang's GPUs were", p.Spec.NodeName)
		}
	}
}

// waitStarted waits until the pods run and returns the latest start time.
func waitStarted(t *testing.T, c *localcluster.Cluster, ns string, names []string) time.Time {
	t.Helper()
	var latest time.Time
	err := framework.Poll(context.Background(), 60*time.Second, func(ctx context.Context) (bool, error) {
		latest = time.Time{}
		for _, n := range names {
			p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Status.Phase != corev1.PodRunning || p.Status.StartTime == nil {
				return false, nil
			}
			if p.Status.StartTime.After(latest) {
				latest = p.Status.StartTime.Time
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("pods %v not running: %v\n%s", names, err, framework.DescribePods(c, ns))
	}
	return latest
}

// deletePods deletes pods and waits until they are gone.
func deletePods(t *testing.T, c *localcluster.Cluster, ns string, names ...string) {
	t.Helper()
	ctx := context.Background()
	zero := int64(0)
	for _, n := range names {
		if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			for _, n := range names {
				if p.Name == n {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("pods %v not deleted: %v", names, err)
	}
}
