package e2e

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// These tests run Volcano's own preemption and reclaim for jobs that are
// not Paddle jobs, or that use none of paddle's levers, on the shared
// cluster with deploy/paddle's scheduler configuration: with paddle in
// the tiers, a higher-priority job still preempts a lower-priority one
// (priority plugin) and a queue still reclaims from a queue that took more
// than its share (proportion and gang plugins), as without paddle.

// Values of the PriorityClasses the tests create.
const (
	lowPriorityValue  = 10
	highPriorityValue = 1000
)

// coexistDeadline bounds how long Volcano may take to evict and place: a
// few scheduling sessions of one second.
const coexistDeadline = 30 * time.Second

// coexistPriorities creates a low and a high PriorityClass for
// one test and deletes them when it ends (after its namespace when created
// before it); it returns their names.
func coexistPriorities(t *testing.T, c *localcluster.Cluster) (low, high string) {
	t.Helper()
	ctx := context.Background()
	suffix := rand.String(5)
	low, high = "coexist-low-"+suffix, "coexist-high-"+suffix
	for name, value := range map[string]int32{low: lowPriorityValue, high: highPriorityValue} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := c.Kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating PriorityClass %s: %v", name, err)
		}
		t.Cleanup(func() {
			if err := c.Kube.SchedulingV1().PriorityClasses().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting PriorityClass %s: %v", name, err)
			}
		})
	}
	return low, high
}

// coexistQueues creates two open queues of weight 1 that others may reclaim
// from, and deletes them when the test ends (after its namespace when
// created before it: a queue goes once its jobs have); it returns their
// names.
func coexistQueues(t *testing.T, c *localcluster.Cluster) (a, b string) {
	t.Helper()
	ctx := context.Background()
	suffix := rand.String(5)
	a, b = "coexist-a-"+suffix, "coexist-b-"+suffix
	queues := c.Volcano.SchedulingV1beta1().Queues()
	for _, name := range []string{a, b} {
		reclaimable := true
		q := &schedulingv1beta1.Queue{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       schedulingv1beta1.QueueSpec{Weight: 1, Reclaimable: &reclaimable},
		}
		if _, err := queues.Create(ctx, q, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating queue %s: %v", name, err)
		}
		t.Cleanup(func() {
			var lastErr error
			err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
				lastErr = queues.Delete(ctx, name, metav1.DeleteOptions{})
				if lastErr != nil && !apierrors.IsNotFound(lastErr) {
					return false, nil
				}
				_, err := queues.Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			})
			if err != nil {
				t.Errorf("deleting queue %s: %v (last delete: %v)", name, err, lastErr)
			}
		})
	}
	// The job webhook admits jobs only into open queues.
	err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		for _, name := range []string{a, b} {
			q, err := queues.Get(ctx, name, metav1.GetOptions{})
			if err != nil || q.Status.State != schedulingv1beta1.QueueStateOpen {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("queues %s and %s not open: %v", a, b, err)
	}
	return a, b
}

// plainJob is a Volcano job without the paddle plugin: replicas workers of
// gpus GPUs each, a gang of min, in queue ("" the default queue) with
// priorityClass ("" none), on node ("" anywhere). It has no lifecycle
// policy: Volcano re-creates an evicted pod, and the job carries on.
func plainJob(ns, name, queue, priorityClass, node string, min, replicas int32, gpus int) *batchv1alpha1.Job {
	j := framework.NewJob(ns, name, min, framework.Task{Name: "worker", Replicas: replicas, GPUs: gpus})
	j.Spec.Policies = nil
	j.Spec.Queue = queue
	j.Spec.PriorityClassName = priorityClass
	if node != "" {
		pin(j, node)
	}
	return j
}

// pin confines every task of the job to one node.
func pin(j *batchv1alpha1.Job, node string) {
	for i := range j.Spec.Tasks {
		j.Spec.Tasks[i].Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	}
}

// runningPods waits until the job runs with n pods, all running on a node
// and none being deleted, and returns their UIDs by pod name.
func runningPods(t *testing.T, c *localcluster.Cluster, ns, job string, n int) map[string]types.UID {
	t.Helper()
	framework.WaitJobPhase(t, c, ns, job, batchv1alpha1.Running, 60*time.Second)
	var uids map[string]types.UID
	err := framework.Poll(context.Background(), 60*time.Second, func(ctx context.Context) (bool, error) {
		pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1alpha1.JobNameKey + "=" + job})
		if err != nil {
			return false, err
		}
		uids = map[string]types.UID{}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
				return false, nil
			}
			uids[p.Name] = p.UID
		}
		return len(uids) == n, nil
	})
	if err != nil {
		t.Fatalf("job %s: want %d pods running: %v\n%s", job, n, err, framework.DescribePods(c, ns))
	}
	return uids
}

// taken lists the victims (pods by name and UID) that are gone, replaced
// by a pod of another UID, or being deleted: what an eviction does.
func taken(ctx context.Context, c *localcluster.Cluster, ns string, victims map[string]types.UID) ([]string, error) {
	var out []string
	for name, uid := range victims {
		p, ok, err := podOf(ctx, c, ns, name)
		if err != nil {
			return nil, err
		}
		if !ok || p.UID != uid || p.DeletionTimestamp != nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// placed reports whether the job runs with n pods, each running (on node
// where node is not ""); it returns the pods' nodes.
func placed(ctx context.Context, c *localcluster.Cluster, ns, job string, n int, node string) (bool, []string, error) {
	j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
	if err != nil {
		return false, nil, err
	}
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1alpha1.JobNameKey + "=" + job})
	if err != nil {
		return false, nil, err
	}
	var nodes []string
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			return false, nil, nil
		}
		if node != "" && p.Spec.NodeName != node {
			return false, nil, fmt.Errorf("pod %s runs on %s, not on %s", p.Name, p.Spec.NodeName, node)
		}
		nodes = append(nodes, p.Spec.NodeName)
	}
	return j.Status.State.Phase == batchv1alpha1.Running && len(nodes) == n, nodes, nil
}

// waitTakenFor waits until at least evicted of the victims are evicted and
// the job preemptor runs with n pods (on node where node is not ""), and
// returns the victims taken. It fails with the preemptor's PodGroup
// condition and the namespace's pods when that does not happen within
// coexistDeadline.
func waitTakenFor(t *testing.T, c *localcluster.Cluster, ns string, victims map[string]types.UID, evicted int, preemptor string, n int, node string) []string {
	t.Helper()
	start := time.Now()
	var gone []string
	var ok bool
	err := framework.Poll(context.Background(), coexistDeadline, func(ctx context.Context) (bool, error) {
		var err error
		if gone, err = taken(ctx, c, ns, victims); err != nil {
			return false, err
		}
		var nodes []string
		if ok, nodes, err = placed(ctx, c, ns, preemptor, n, node); err != nil {
			return false, err
		}
		if ok {
			t.Logf("%s runs on %v, %s after it was created; victims evicted: %v", preemptor, nodes, time.Since(start).Round(100*time.Millisecond), gone)
		}
		return ok && len(gone) >= evicted, nil
	})
	if err != nil {
		t.Fatalf("within %s: want at least %d of %d victims evicted and %s running with %d pods; evicted %v, %s running %t: %v\n%s: %s\npods:\n%s",
			coexistDeadline, evicted, len(victims), preemptor, n, gone, preemptor, ok, err, preemptor, podGroupCondition(c, ns, preemptor), framework.DescribePods(c, ns))
	}
	return gone
}

// podGroupCondition is the Unschedulable condition of the job's PodGroup
// and its phase, for failure messages.
func podGroupCondition(c *localcluster.Cluster, ns, job string) string {
	pgs, err := c.Volcano.SchedulingV1beta1().PodGroups(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for _, pg := range pgs.Items {
		for _, o := range pg.OwnerReferences {
			if o.Kind == "Job" && o.Name == job {
				return fmt.Sprintf("PodGroup %s phase %s, unschedulable: %q", pg.Name, pg.Status.Phase, framework.Unschedulable(&pg))
			}
		}
	}
	return "no PodGroup"
}

// A plain Volcano job of a high PriorityClass preempts a plain job of a low
// one that holds every GPU of the node both are confined to (Volcano's
// priority plugin; paddle abstains): the low job's pods are evicted and
// the high job runs on that node.
func TestCoexistPriorityPreemption(t *testing.T) {
	c := framework.Cluster(t)
	low, high := coexistPriorities(t, c)
	ns := framework.Namespace(t, c)
	const node = "gpu-r1-n3"

	victims := lowJobHolding(t, c, ns, low, node)

	framework.CreateJob(t, c, plainJob(ns, "high", "", high, node, 1, 1, 8))
	gone := waitTakenFor(t, c, ns, victims, len(victims), "high", 1, node)
	if len(gone) != len(victims) {
		t.Errorf("evicted %v, want every pod of the low-priority job (%d)", gone, len(victims))
	}
	checkPriority(t, c, ns, "high", high, highPriorityValue)
}

// A job of one queue reclaims GPUs from a queue that holds more than its
// share (Volcano's proportion and gang plugins; paddle abstains). The
// share is of the whole cluster, so the first queue's job takes every GPU
// of it (one 8-GPU pod per node, a gang of one, so the pods above it may
// be reclaimed); a 4-GPU job of the second queue then gets one of those
// pods evicted and runs.
func TestCoexistQueueReclaim(t *testing.T) {
	c := framework.Cluster(t)
	qa, qb := coexistQueues(t, c)
	ns := framework.Namespace(t, c)
	topo := localcluster.DefaultTopology()
	nodes, gpus := len(topo.Nodes()), topo.Groups[0].GPUs

	framework.CreateJob(t, c, plainJob(ns, "hog", qa, "", "", 1, int32(nodes), gpus))
	victims := runningPods(t, c, ns, "hog", nodes)

	framework.CreateJob(t, c, plainJob(ns, "claim", qb, "", "", 1, 1, 4))
	gone := waitTakenFor(t, c, ns, victims, 1, "claim", 1, "")
	t.Logf("reclaimed from queue %s: %v", qa, gone)
}

// A high-priority Paddle job of fixed size (collective, 2 trainers x 4
// GPUs, minAvailable 2: none of paddle's levers serves it) preempts a
// low-priority plain job that holds the GPUs of the node both are confined
// to: the plain job's pods are evicted and every trainer runs there.
func TestCoexistPaddleJobPreemptsPlainJob(t *testing.T) {
	c := framework.Cluster(t)
	low, high := coexistPriorities(t, c)
	ns := framework.Namespace(t, c)
	const node = "gpu-r1-n2"

	victims := lowJobHolding(t, c, ns, low, node)

	pd := paddleJob(ns, "pd", nil, 2, framework.Task{Name: "trainer", Replicas: 2, GPUs: 4})
	pd.Spec.PriorityClassName = high
	pin(pd, node)
	framework.CreateJob(t, c, pd)
	gone := waitTakenFor(t, c, ns, victims, len(victims), "pd", 2, node)
	if len(gone) != len(victims) {
		t.Errorf("evicted %v, want every pod of the low-priority job (%d)", gone, len(victims))
	}
	for _, p := range framework.JobPods(t, c, ns, "pd") {
		if p.Labels[paddleapi.RoleLabel] != string(paddleapi.RoleTrainer) || p.Labels[paddleapi.ModeLabel] != string(paddleapi.ModeCollective) {
			t.Errorf("pod %s is not a collective Paddle trainer: labels %v", p.Name, p.Labels)
		}
	}
	checkPriority(t, c, ns, "pd", high, highPriorityValue)
}

// lowJobHolding runs a plain job of the low PriorityClass low that holds
// every GPU of node (2 pods x 4 GPUs) and returns its pods, the victims
// the preemption tests wait for.
func lowJobHolding(t *testing.T, c *localcluster.Cluster, ns, low, node string) map[string]types.UID {
	t.Helper()
	framework.CreateJob(t, c, plainJob(ns, "low", "", low, node, 2, 2, 4))
	victims := runningPods(t, c, ns, "low", 2)
	checkPriority(t, c, ns, "low", low, lowPriorityValue)
	return victims
}

// checkPriority checks that the job's pods carry the PriorityClass and the
// priority the API server resolved from it, what the preemption rests on.
func checkPriority(t *testing.T, c *localcluster.Cluster, ns, job, class string, value int32) {
	t.Helper()
	for _, p := range framework.JobPods(t, c, ns, job) {
		if p.Spec.PriorityClassName != class || p.Spec.Priority == nil || *p.Spec.Priority != value {
			t.Errorf("pod %s: PriorityClass %q, priority %v; want %s (%d)", p.Name, p.Spec.PriorityClassName, p.Spec.Priority, class, value)
		}
	}
}

// The control of the preemption tests: a plain job of the same
// PriorityClass as the plain job that holds the GPUs of their node waits,
// and over several scheduling sessions nothing is evicted for it (the
// priority plugin finds no victim, paddle's levers serve no plain job). A
// configuration that let any plugin of the first tier offer victims alone
// (priority's preemptable function off) would evict here.
func TestCoexistEqualPriorityNoPreemption(t *testing.T) {
	c := framework.Cluster(t)
	ctx := context.Background()
	low, _ := coexistPriorities(t, c)
	ns := framework.Namespace(t, c)
	const node = "gpu-r1-n1"

	framework.CreateJob(t, c, plainJob(ns, "first", "", low, node, 2, 2, 4))
	holders := runningPods(t, c, ns, "first", 2)
	checkPriority(t, c, ns, "first", low, lowPriorityValue)

	framework.CreateJob(t, c, plainJob(ns, "second", "", low, node, 1, 1, 8))
	pg := framework.WaitPodGroup(t, c, ns, "second", coexistDeadline, func(pg *schedulingv1beta1.PodGroup) bool {
		return pg.Status.Phase == schedulingv1beta1.PodGroupInqueue && framework.Unschedulable(pg) != ""
	})
	t.Logf("second: %s", framework.Unschedulable(pg))
	start, err := c.SchedulerSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const sessions = 5
	var gone []string
	err = framework.Poll(ctx, coexistDeadline, func(ctx context.Context) (bool, error) {
		var err error
		if gone, err = taken(ctx, c, ns, holders); err != nil || len(gone) > 0 {
			return len(gone) > 0, err
		}
		n, err := c.SchedulerSessions(ctx)
		return n >= start+sessions, err
	})
	if len(gone) > 0 {
		t.Fatalf("%v of the job that held the node evicted for a job of equal priority\n%s\npods:\n%s", gone, podGroupCondition(c, ns, "second"), framework.DescribePods(c, ns))
	}
	if err != nil {
		t.Fatalf("waiting for %d scheduling sessions: %v", sessions, err)
	}
	for _, p := range framework.JobPods(t, c, ns, "second") {
		if p.Spec.NodeName != "" {
			t.Errorf("%s placed on %s while the node was full", p.Name, p.Spec.NodeName)
		}
	}
}
