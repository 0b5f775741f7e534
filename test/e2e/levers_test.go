package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	paddleplugin "github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// leversNode is the one node the levers tests leave room on; every other
// node is filled with pods bound straight to it.
const leversNode = "gpu-r0-n0"

// fillAllBut fills every GPU of every node but one with a pod bound to it
// (no scheduler), so that what the test creates can only go to that node.
func fillAllBut(t *testing.T, c *localcluster.Cluster, ns, keep string) {
	t.Helper()
	var names []string
	for _, n := range localcluster.DefaultTopology().Nodes() {
		if n.Name != keep {
			createBoundPod(t, c, ns, "full-"+n.Name, n.Name, 8)
			names = append(names, "full-"+n.Name)
		}
	}
	waitStarted(t, c, ns, names)
}

// podOf is the job's pod of that name; ok false when it does not exist.
func podOf(ctx context.Context, c *localcluster.Cluster, ns, name string) (*corev1.Pod, bool, error) {
	p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return p, err == nil, err
}

// untouched fails when a pod is gone, replaced (another UID) or being
// deleted: what a preemption would do to it.
func untouched(ctx context.Context, c *localcluster.Cluster, ns string, want map[string]types.UID) error {
	for name, uid := range want {
		p, ok, err := podOf(ctx, c, ns, name)
		if err != nil {
			return err
		}
		if !ok || p.UID != uid || p.DeletionTimestamp != nil {
			return fmt.Errorf("pod %s was taken (exists %t)", name, ok)
		}
	}
	return nil
}

// waitElastic waits until the elastic job has exactly running workers
// running and pending ones waiting for a node, none being deleted, and
// returns the workers by name.
func waitElastic(t *testing.T, c *localcluster.Cluster, ns, job string, running, pending int) map[string]corev1.Pod {
	t.Helper()
	var pods map[string]corev1.Pod
	err := framework.Poll(context.Background(), 90*time.Second, func(ctx context.Context) (bool, error) {
		pods = workerPods(t, c, ns, job)
		r, p := 0, 0
		for _, pod := range pods {
			switch {
			case pod.DeletionTimestamp != nil:
				return false, nil
			case pod.Status.Phase == corev1.PodRunning && pod.Spec.NodeName != "":
				r++
			case pod.Spec.NodeName == "":
				p++
			}
		}
		return r == running && p == pending, nil
	})
	if err != nil {
		t.Fatalf("%s: want %d workers running and %d pending: %v\n%s", job, running, pending, err, framework.DescribePods(c, ns))
	}
	return pods
}

// An elastic job grows into GPUs another workload frees (its pending pods
// above minAvailable are bound), and shrinks back to its minimum for a
// gang that does not fit: the pods above the minimum are evicted and
// re-created Pending, the gang starts where they ran, the pods at the
// minimum keep running (same UIDs) and the job never restarts.
func TestLeversElasticGrowsAndShrinks(t *testing.T) {
	c := framework.Cluster(t)
	ctx := context.Background()
	ns := framework.Namespace(t, c)
	etcd := framework.StartEtcd(t)
	fillAllBut(t, c, ns, leversNode)
	// The node: 4 GPUs held for the whole test, 2 by a workload that ends
	// later, 2 free.
	createBoundPod(t, c, ns, "resident", leversNode, 4)
	createBoundPod(t, c, ns, "other-workload", leversNode, 2)
	waitStarted(t, c, ns, []string{"resident", "other-workload"})

	// minAvailable 2 of 4 one-GPU workers: two fit, two wait.
	framework.CreateJob(t, c, elasticJob(ns, "el", 2, 4, 4, etcd))
	framework.WaitJobPhase(t, c, ns, "el", batchv1alpha1.Running, 60*time.Second)
	phases := phaseWatch(t, c, ns, "el")
	atMin := waitElastic(t, c, ns, "el", 2, 2)
	if err := c.WaitSchedulerSessions(ctx, 3, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	waitElastic(t, c, ns, "el", 2, 2) // still: no GPU is free

	// The other workload ends: the job grows into its GPUs.
	deletePods(t, c, ns, "other-workload")
	grown := waitElastic(t, c, ns, "el", 4, 0)
	for n, p := range atMin {
		if p.Spec.NodeName != "" && grown[n].UID != p.UID {
			t.Errorf("%s was replaced while the job grew", n)
		}
	}
	for n, p := range grown {
		if p.Spec.NodeName != leversNode {
			t.Errorf("%s on %s, want %s", n, p.Spec.NodeName, leversNode)
		}
	}

	// A gang of two GPUs: the cluster is full, the job shrinks for it
	// (its two workers above the minimum go).
	gang := paddleJob(ns, "gang", nil, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 2})
	framework.CreateJob(t, c, gang)
	framework.WaitJobPhase(t, c, ns, "gang", batchv1alpha1.Running, 90*time.Second)
	if got := framework.JobPods(t, c, ns, "gang")[0].Spec.NodeName; got != leversNode {
		t.Errorf("gang placed on %s, want %s", got, leversNode)
	}
	// Two workers above the minimum went (re-created, Pending); the
	// minimum kept running.
	survivors := waitElastic(t, c, ns, "el", 2, 2)
	kept := 0
	for n, p := range survivors {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		if grown[n].UID != p.UID {
			t.Errorf("running worker %s is not one that ran before (uid %s -> %s): survivors must keep running", n, grown[n].UID, p.UID)
		}
		kept++
	}
	if kept != 2 {
		t.Errorf("%d workers kept running, want the minimum 2", kept)
	}
	for _, s := range phases() {
		if strings.HasPrefix(s, string(batchv1alpha1.Restarting)) || !strings.HasSuffix(s, " v0 retries 0") {
			t.Errorf("the elastic job showed %q; shrinking must not restart it", s)
		}
	}
}

// A job that did not opt in is never preempted, even the one that has had
// the most GPU time; a job that opted in as checkpointable is (it restarts
// from its checkpoint), for a gang that starves. Afterwards that job waits
// itself, starving, with only jobs that did not opt in beside it: over
// many scheduling sessions nothing is taken from them.
func TestLeversNeverPreemptWithoutOptIn(t *testing.T) {
	c := framework.Cluster(t)
	ctx := context.Background()
	useDeployConfWith(t, c, "paddle.starvationAfter: 16h", "paddle.starvationAfter: "+starvationAfterE2E.String())
	ns := framework.Namespace(t, c)
	fillAllBut(t, c, ns, leversNode)

	// The plain job starts first: it has had the most GPU time.
	framework.CreateJob(t, c, paddleJob(ns, "plain", nil, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 4}))
	framework.WaitJobPhase(t, c, ns, "plain", batchv1alpha1.Running, 60*time.Second)
	// A restart cost of 1s: the scheduler stops a checkpointable job only
	// once it has run that long, for a gang that has waited that long.
	framework.CreateJob(t, c, paddleJob(ns, "ck", []string{"--checkpointable", "--restart-cost=1s"}, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 4}))
	framework.WaitJobPhase(t, c, ns, "ck", batchv1alpha1.Running, 60*time.Second)
	plain, ck := framework.JobPods(t, c, ns, "plain")[0], framework.JobPods(t, c, ns, "ck")[0]
	if plain.Spec.NodeName != leversNode || ck.Spec.NodeName != leversNode {
		t.Fatalf("plain on %s, ck on %s; both must share %s", plain.Spec.NodeName, ck.Spec.NodeName, leversNode)
	}
	if plain.Annotations[schedulingv1beta1.PodPreemptable] != "false" || ck.Annotations[schedulingv1beta1.PodPreemptable] != "true" || ck.Labels[paddleapi.CheckpointableLabel] != "true" {
		t.Fatalf("opt-in marks: plain %v, ck %v %v", plain.Annotations, ck.Annotations, ck.Labels)
	}
	// What a stop costs it and how many it may take: its --restart-cost,
	// its spec.maxRetry (Volcano's webhook defaults it to 3) and Volcano's
	// retry count, so far none.
	if ck.Annotations[paddleapi.RestartCostAnnotation] != "1s" || ck.Annotations[paddleapi.MaxRetryAnnotation] != "3" || ck.Annotations[paddleapi.RetryCountAnnotation] != "0" {
		t.Errorf("ck's stop annotations: restart cost %q, max retry %q, retry count %q; want 1s, 3, 0",
			ck.Annotations[paddleapi.RestartCostAnnotation], ck.Annotations[paddleapi.MaxRetryAnnotation], ck.Annotations[paddleapi.RetryCountAnnotation])
	}

	// The gang starves and takes the checkpointable job's GPUs.
	framework.CreateJob(t, c, paddleJob(ns, "gang", nil, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 4}))
	framework.WaitJobPhase(t, c, ns, "gang", batchv1alpha1.Running, 90*time.Second)
	gangPod := framework.JobPods(t, c, ns, "gang")[0]
	if gangPod.Spec.NodeName != leversNode {
		t.Errorf("gang on %s, want %s", gangPod.Spec.NodeName, leversNode)
	}
	if p, ok, err := podOf(ctx, c, ns, ck.Name); err != nil || (ok && p.UID == ck.UID) {
		t.Errorf("the checkpointable job's pod %s was not preempted (err %v)", ck.Name, err)
	}
	keep := map[string]types.UID{plain.Name: plain.UID}
	if err := untouched(ctx, c, ns, keep); err != nil {
		t.Fatalf("%v: a job that did not opt in was preempted\n%s", err, framework.DescribePods(c, ns))
	}

	// The checkpointable job restarts and waits, starving, beside two jobs
	// that did not opt in: nothing is taken from them.
	framework.WaitPodGroup(t, c, ns, "ck", 60*time.Second, func(pg *schedulingv1beta1.PodGroup) bool {
		return time.Since(pg.CreationTimestamp.Time) > starvationAfterE2E+time.Second && framework.Unschedulable(pg) != ""
	})
	keep[gangPod.Name] = gangPod.UID
	start, err := c.SchedulerSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const sessions = 10
	err = framework.Poll(ctx, 120*time.Second, func(ctx context.Context) (bool, error) {
		if err := untouched(ctx, c, ns, keep); err != nil {
			return false, err
		}
		n, err := c.SchedulerSessions(ctx)
		return n >= start+sessions, err
	})
	if err != nil {
		t.Fatalf("while the checkpointable job starved: %v\n%s", err, framework.DescribePods(c, ns))
	}
	for _, p := range framework.JobPods(t, c, ns, "ck") {
		if p.Spec.NodeName != "" {
			t.Errorf("%s placed on %s while the node was full", p.Name, p.Spec.NodeName)
		}
		// The restarted job's pods count the stop: one restart used.
		if p.Annotations[paddleapi.RetryCountAnnotation] != "1" {
			t.Errorf("%s after the stop: Volcano's retry count %q, want 1", p.Name, p.Annotations[paddleapi.RetryCountAnnotation])
		}
	}
}

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
	useDeployConfWith(t, c, "paddle.starvationAfter: 16h", "paddle.starvationAfter: "+starvationAfterE2E.String())
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
	runSmallJobs(t, c, ns, "small")
	if got := framework.JobPods(t, c, ns, "small")[0].Spec.NodeName; got != old {
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
	// It fits on free GPUs: paddle holds it, and says so in the same
	// PodGroup update.
	held := framework.Held(pg2)
	if held == nil || held.Status != corev1.ConditionTrue || held.Reason != paddleplugin.ReasonReservedForStarvingGang || !strings.Contains(held.Message, "starving gang "+ns+"/big") {
		t.Fatalf("small-2, kept off the reserved node, has the hold condition %+v, want True, %s, naming %s/big", held, paddleplugin.ReasonReservedForStarvingGang, ns)
	}
	explained(t, c, ns, "small-2", pg2.Name, held)

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

// headroomAfterE2E is the starvation threshold of the headroom test: long
// enough to see the gang held, short enough to see the hold end.
const headroomAfterE2E = 30 * time.Second

// paddle.smallJobHeadroom on a real API server and our scheduler binary: a
// whole-node Paddle gang that would leave less than the headroom of the
// cluster's GPUs free waits and says why, a smaller Paddle job beside it
// starts at once, and the gang starts once it has waited
// paddle.starvationAfter, the headroom's bound, although nothing was freed.
func TestHeadroomHoldsWholeNodeGangUntilItStarves(t *testing.T) {
	// The headroom keeps 32 of the 32 free GPUs: an 8-GPU gang would
	// leave 24.
	c, ns := headroomCluster(t, headroomAfterE2E)

	whole, pg := createHeldGang(t, c, ns, "whole", "gang "+ns+"/whole needs 8 GPUs; starting it now would leave 24 of the cluster's 64 GPUs free, fewer than the 32")

	runSmallJobs(t, c, ns, "small")
	for _, p := range framework.JobPods(t, c, ns, whole.Name) {
		if p.Spec.NodeName != "" {
			t.Fatalf("whole-node gang bound to %s while the headroom holds it\n%s", p.Spec.NodeName, framework.DescribePods(c, ns))
		}
	}

	// Nothing is freed: the gang starts because it has waited its bound,
	// and its hold condition says the hold is over.
	framework.WaitJobPhase(t, c, ns, whole.Name, batchv1alpha1.Running, headroomAfterE2E+60*time.Second)
	framework.WaitPodGroup(t, c, ns, whole.Name, 30*time.Second, func(pg *schedulingv1beta1.PodGroup) bool {
		h := framework.Held(pg)
		return h != nil && h.Status == corev1.ConditionFalse && h.Reason == paddleplugin.ReasonNotHeld
	})
	framework.WaitJobEvent(t, c, ns, whole.Name, paddleplugin.ReasonNotHeld, 30*time.Second)
	// Condition times have a resolution of a second.
	if waited := boundAfter(t, c, ns, whole.Name, pg); waited < headroomAfterE2E-time.Second {
		t.Errorf("whole-node gang bound %s after its PodGroup was created, before paddle.starvationAfter (%s)", waited, headroomAfterE2E)
	}
}

// paddle.smallJobHeadroom.predictedAbove (deploy/paddle's 4h) on a real API
// server and our scheduler binary, with the run-time histories on the
// queues where paddle-history-controller keeps them: a whole-node gang
// whose queue's history says such jobs run 10 h is held, and says what was
// predicted; one whose queue's history says 20 min starts at once beside
// it, though it leaves as few GPUs free.
func TestHeadroomLetsPredictedShortGangGo(t *testing.T) {
	c := framework.Cluster(t)
	useDeployConfWith(t, c, "paddle.smallJobHeadroom: 0.2\n", "paddle.smallJobHeadroom: 0.5\n")
	short, long := coexistQueues(t, c)
	ns := framework.Namespace(t, c)
	setQueueHistory(t, c, short, ns, 20*time.Minute)
	setQueueHistory(t, c, long, ns, 10*time.Hour)
	fillHalfTheNodes(t, c, ns)

	slow := paddleJob(ns, "slow", nil, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 8})
	slow.Spec.Queue = long
	framework.CreateJob(t, c, slow)
	pg := framework.WaitPodGroup(t, c, ns, slow.Name, 60*time.Second, func(pg *schedulingv1beta1.PodGroup) bool {
		h := framework.Held(pg)
		return h != nil && h.Status == corev1.ConditionTrue && h.Reason == paddleplugin.ReasonHeldForHeadroom
	})
	// The prediction leans a little towards what the other queues' jobs
	// of that size ran (pkg/jobhistory: Predict), so not exactly 10 h.
	msg := framework.Held(pg).Message
	t.Logf("slow: %s", msg)
	if !regexp.MustCompile(`its queue's history predicts it runs ([5-9]|10)h[0-9]+m0s \(median\), at least 4h0m0s \(paddle\.smallJobHeadroom\.predictedAbove\)`).MatchString(msg) {
		t.Errorf("the held gang's condition does not say what was predicted: %q", msg)
	}

	quick := paddleJob(ns, "quick", nil, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 8})
	quick.Spec.Queue = short
	framework.CreateJob(t, c, quick)
	framework.WaitJobPhase(t, c, ns, quick.Name, batchv1alpha1.Running, 60*time.Second)
	for _, p := range framework.JobPods(t, c, ns, slow.Name) {
		if p.Spec.NodeName != "" {
			t.Errorf("the gang predicted to run 10 h was bound to %s while the headroom holds it\n%s", p.Spec.NodeName, framework.DescribePods(c, ns))
		}
	}
}

// setQueueHistory writes on queue q the run-time history that
// paddle-history-controller would keep after five jobs of one 8-GPU
// trainer in namespace ns ran d each.
func setQueueHistory(t *testing.T, c *localcluster.Cluster, q, ns string, d time.Duration) {
	t.Helper()
	h, err := jobhistory.NewQueueHistory(q, "")
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(-time.Hour)
	for i := 0; i < 5; i++ {
		r := jobhistory.Record{SubmitTime: end.Add(-d - time.Minute), Start: end.Add(-d), Duration: d, Pods: 1, GPUsPerPod: 8,
			MinPods: 1, MaxPods: 1, Queue: q, Namespace: ns, Mode: jobhistory.ModeCollective}
		if !h.Record(fmt.Sprintf("%s-%d", q, i), r) {
			t.Fatalf("job %d not recorded", i)
		}
		end = end.Add(time.Minute)
	}
	ann, err := h.Annotation(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		queue, err := c.Volcano.SchedulingV1beta1().Queues().Get(ctx, q, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if queue.Annotations == nil {
			queue.Annotations = map[string]string{}
		}
		queue.Annotations[paddleapi.RunTimeHistoryAnnotation] = ann
		_, err = c.Volcano.SchedulingV1beta1().Queues().Update(ctx, queue, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("writing queue %s's history: %v", q, err)
	}
}

// runSmallJobs creates a 4-GPU Paddle job of each name and waits until
// they all run.
func runSmallJobs(t *testing.T, c *localcluster.Cluster, ns string, names ...string) {
	t.Helper()
	for _, name := range names {
		framework.CreateJob(t, c, smallJob(ns, name))
	}
	for _, name := range names {
		framework.WaitJobPhase(t, c, ns, name, batchv1alpha1.Running, 60*time.Second)
	}
}

// smallJob is a Paddle job of one 4-GPU trainer: smaller than a node.
func smallJob(ns, name string) *batchv1alpha1.Job {
	return paddleJob(ns, name, nil, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 4})
}

// createHeldGang creates a Paddle gang of one 8-GPU trainer, waits until
// the headroom holds it, and checks that its PodGroup's condition says
// want.
func createHeldGang(t *testing.T, c *localcluster.Cluster, ns, name, want string) (*batchv1alpha1.Job, *schedulingv1beta1.PodGroup) {
	t.Helper()
	gang := framework.CreateJob(t, c, paddleJob(ns, name, nil, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 8}))
	pg := framework.WaitPodGroup(t, c, ns, name, 60*time.Second, func(pg *schedulingv1beta1.PodGroup) bool {
		return strings.Contains(framework.Unschedulable(pg), "paddle.smallJobHeadroom")
	})
	msg := framework.Unschedulable(pg)
	t.Logf("%s: %s", name, msg)
	if !strings.Contains(msg, want) {
		t.Errorf("the held gang's condition lacks %q: %q", want, msg)
	}
	// The session that held it wrote the hold's own condition too, in the
	// same PodGroup update (the same session's ID).
	held := framework.Held(pg)
	if held == nil || held.Status != corev1.ConditionTrue || held.Reason != paddleplugin.ReasonHeldForHeadroom || !strings.Contains(held.Message, want) {
		t.Fatalf("the PodGroup Volcano marked held by the headroom has the hold condition %+v, want True, %s, %q", held, paddleplugin.ReasonHeldForHeadroom, want)
	}
	explained(t, c, ns, name, pg.Name, held)
	return gang, pg
}

// explained checks that a hold is where users look: an Event on the
// Volcano Job with the hold's reason and message, and both in what
// `kubectl describe` prints for the Job and the PodGroup.
func explained(t *testing.T, c *localcluster.Cluster, ns, job, podGroup string, held *schedulingv1beta1.PodGroupCondition) {
	t.Helper()
	e := framework.WaitJobEvent(t, c, ns, job, held.Reason, 30*time.Second)
	if e.Message != held.Message {
		t.Errorf("the Event on Job %s says %q, its PodGroup's condition %q", job, e.Message, held.Message)
	}
	for _, obj := range [][2]string{{"jobs.batch.volcano.sh", job}, {"podgroups.scheduling.volcano.sh", podGroup}} {
		out, err := kubectl(t, c, "describe", "-n", ns, obj[0], obj[1])
		if err != nil {
			t.Fatalf("kubectl describe %s %s: %v\n%s", obj[0], obj[1], err, out)
		}
		// kubectl wraps long values; the reason and the message's start
		// are on one line.
		for _, want := range []string{held.Reason, held.Message[:40]} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl describe %s %s lacks %q:\n%s", obj[0], obj[1], want, out)
			}
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, held.Reason) || strings.Contains(line, paddleapi.HeldCondition) {
				t.Logf("kubectl describe %s %s: %s", obj[0], obj[1], strings.TrimSpace(line))
			}
		}
	}
}

// boundAfter is how long after its PodGroup (pg) was created the scheduler
// bound the first pod of the running job.
func boundAfter(t *testing.T, c *localcluster.Cluster, ns, job string, pg *schedulingv1beta1.PodGroup) time.Duration {
	t.Helper()
	pods := framework.JobPods(t, c, ns, job)
	bound := scheduledAt(pods[0])
	if bound.IsZero() {
		t.Fatalf("pod %s of the running gang has no PodScheduled condition", pods[0].Name)
	}
	waited := bound.Sub(pg.CreationTimestamp.Time)
	t.Logf("%s bound on %s, %s after its PodGroup was created", job, pods[0].Spec.NodeName, waited)
	return waited
}

// headroomCluster is the shared cluster with deploy/paddle's scheduler
// configuration at paddle.smallJobHeadroom 0.5 (holding every whole-node
// gang) and paddle.starvationAfter after, and a namespace in which 4 of the 8
// nodes are full (fillHalfTheNodes): 32 of 64 GPUs free, all of which the
// headroom keeps.
func headroomCluster(t *testing.T, after time.Duration) (*localcluster.Cluster, string) {
	t.Helper()
	c := framework.Cluster(t)
	// predictedAbove 0: the shared cluster's default queue may have a
	// history of short jobs by now (other tests' finished jobs), and
	// the gang must be held whatever it predicts.
	useDeployConfWith(t, c, "paddle.starvationAfter: 16h\n      paddle.smallJobHeadroom: 0.2\n      paddle.smallJobHeadroom.predictedAbove: 4h",
		"paddle.starvationAfter: "+after.String()+"\n      paddle.smallJobHeadroom: 0.5\n      paddle.smallJobHeadroom.predictedAbove: 0s")
	ns := framework.Namespace(t, c)
	fillHalfTheNodes(t, c, ns)
	return c, ns
}

// fillHalfTheNodes binds a running 8-GPU pod to each of the first 4 of the
// local cluster's 8 nodes: 32 of its 64 GPUs stay free, on 4 whole nodes.
func fillHalfTheNodes(t *testing.T, c *localcluster.Cluster, ns string) {
	t.Helper()
	var hogs []string
	for _, n := range localcluster.DefaultTopology().Nodes()[:4] {
		createBoundPod(t, c, ns, "hog-"+n.Name, n.Name, 8)
		hogs = append(hogs, "hog-"+n.Name)
	}
	waitStarted(t, c, ns, hogs)
}

// scheduledAt is when the scheduler bound the pod (its PodScheduled
// condition turned true).
func scheduledAt(p corev1.Pod) time.Time {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionTrue {
			return cond.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
