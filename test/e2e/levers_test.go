package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/internal/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
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
	useDeployConfWith(t, c, "paddle.starvationAfter: 4h", "paddle.starvationAfter: "+starvationAfterE2E.String())
	ns := framework.Namespace(t, c)
	fillAllBut(t, c, ns, leversNode)

	// The plain job starts first: it has had the most GPU time.
	framework.CreateJob(t, c, paddleJob(ns, "plain", nil, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 4}))
	framework.WaitJobPhase(t, c, ns, "plain", batchv1alpha1.Running, 60*time.Second)
	framework.CreateJob(t, c, paddleJob(ns, "ck", []string{"--checkpointable"}, 1, framework.Task{Name: "trainer", Replicas: 1, GPUs: 4}))
	framework.WaitJobPhase(t, c, ns, "ck", batchv1alpha1.Running, 60*time.Second)
	plain, ck := framework.JobPods(t, c, ns, "plain")[0], framework.JobPods(t, c, ns, "ck")[0]
	if plain.Spec.NodeName != leversNode || ck.Spec.NodeName != leversNode {
		t.Fatalf("plain on %s, ck on %s; both must share %s", plain.Spec.NodeName, ck.Spec.NodeName, leversNode)
	}
	if plain.Annotations[schedulingv1beta1.PodPreemptable] != "false" || ck.Annotations[schedulingv1beta1.PodPreemptable] != "true" || ck.Labels[paddleapi.CheckpointableLabel] != "true" {
		t.Fatalf("opt-in marks: plain %v, ck %v %v", plain.Annotations, ck.Annotations, ck.Labels)
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
	}
}
