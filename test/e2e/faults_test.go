package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

func boundPods(t *testing.T, c *localcluster.Cluster, ns, job string) int {
	n := 0
	for _, p := range framework.JobPods(t, c, ns, job) {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// A gang waiting for resources across a scheduler restart is still placed
// all at once, never in part.
func TestSchedulerRestartKeepsGangAtomic(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	// 6 of the 8 nodes run a 6-GPU pod: 28 GPUs stay free, enough for the
	// gang's quota, but only 2 nodes have 8 free GPUs.
	hog := framework.NewJob(ns, "hog", 6, framework.Task{Name: "x", Replicas: 6, GPUs: 6, CPU: "8"})
	framework.CreateJob(t, c, hog)
	framework.WaitJobPhase(t, c, ns, "hog", batchv1alpha1.Running, 60*time.Second)
	// A PS gang with 3 trainers of 8 GPUs: needs 3 whole nodes, 2 are
	// free. (Volcano's overcommit enqueue admits it, so its pods exist.)
	gang := paddleJob(ns, "gang", nil, 5, framework.Task{Name: "ps", Replicas: 2, CPU: "4"},
		framework.Task{Name: "worker", Replicas: 3, CPU: "8", GPUs: 8})
	framework.CreateJob(t, c, gang)
	err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		return len(framework.JobPods(t, c, ns, "gang")) == 5, nil
	})
	if err != nil {
		t.Fatalf("gang pods not created: %v\n%s", err, framework.DescribePods(c, ns))
	}
	if err := c.StopComponent(localcluster.Scheduler); err != nil {
		t.Fatal(err)
	}
	if err := c.StartComponent(localcluster.Scheduler); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitSchedulerSessions(ctx, 3, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := boundPods(t, c, ns, "gang"); n != 0 {
		t.Fatalf("%d pods of the gang bound while it cannot fit", n)
	}
	// Free the resources: the whole gang starts.
	if err := c.Volcano.BatchV1alpha1().Jobs(ns).Delete(ctx, "hog", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitJobPhase(t, c, ns, "gang", batchv1alpha1.Running, 90*time.Second)
	if n := boundPods(t, c, ns, "gang"); n != 5 {
		t.Errorf("%d of 5 gang pods bound", n)
	}
}

// A node that goes NotReady gets no new pods: Kubernetes' node lifecycle
// controller taints it, and Volcano honours the taint (it does not read node
// conditions itself).
func TestNotReadyNodeAvoided(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	const sick = "gpu-r0-n0"
	patch := func(value *string) {
		var body string
		if value == nil {
			body = `{"metadata":{"annotations":{"sim.paddle.volcano.sh/not-ready":null}}}`
		} else {
			body = `{"metadata":{"annotations":{"sim.paddle.volcano.sh/not-ready":"` + *value + `"}}}`
		}
		if _, err := c.Kube.CoreV1().Nodes().Patch(ctx, sick, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	yes := "true"
	patch(&yes)
	t.Cleanup(func() {
		patch(nil)
		// KWOK marks it Ready again; wait so later tests see 8 Ready nodes.
		_ = framework.Poll(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
			n, err := c.Kube.CoreV1().Nodes().Get(ctx, sick, metav1.GetOptions{})
			return err == nil && nodeReady(n), err
		})
	})
	err := framework.Poll(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, sick, metav1.GetOptions{})
		return err == nil && !nodeReady(n), err
	})
	if err != nil {
		t.Fatalf("node did not go NotReady: %v", err)
	}
	// 8 trainers of 8 GPUs: without the sick node, only 7 fit.
	job := paddleJob(ns, "big", nil, 7, framework.Task{Name: "trainer", Replicas: 7, GPUs: 8, CPU: "8"})
	framework.CreateJob(t, c, job)
	framework.WaitJobPhase(t, c, ns, "big", batchv1alpha1.Running, 90*time.Second)
	for _, p := range framework.JobPods(t, c, ns, "big") {
		if p.Spec.NodeName == sick {
			t.Errorf("%s placed on NotReady node %s", p.Name, sick)
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// A Paddle gang that cannot be placed says why in its PodGroup.
func TestUnplaceableGangExplained(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	// 9 x 7 GPUs: 63 GPUs exist but one pod per node fits.
	job := paddleJob(ns, "toobig", nil, 9, framework.Task{Name: "trainer", Replicas: 9, GPUs: 7, CPU: "8"})
	framework.CreateJob(t, c, job)
	pg := framework.WaitPodGroup(t, c, ns, job.Name, 60*time.Second, func(pg *schedulingv1beta1.PodGroup) bool {
		return strings.Contains(framework.Unschedulable(pg), "paddle:")
	})
	msg := framework.Unschedulable(pg)
	if !strings.Contains(msg, "8 of the 9 pods the gang still needs fit") || !strings.Contains(msg, "nvidia.com/gpu 7") {
		t.Errorf("explanation: %q", msg)
	}
	t.Logf("PodGroup says: %s", msg)
}

// A scheduler ConfigMap with bad paddle arguments does not stop the
// scheduler: bad values fall back to defaults and jobs are placed.
func TestBadSchedulerConfigMap(t *testing.T) {
	c := framework.Cluster(t)
	useDeployConfWith(t, c, "paddle.affinity.weight: 10", `paddle.affinity.weight: "very heavy"
      paddle.starvationAfter: [1, 2]
      paddle.rackLabel: "not a label!"
      paddle.packing.wieght: 3`)

	ns := framework.Namespace(t, c)
	job := paddleJob(ns, "still-works", nil, 3, framework.Task{Name: "ps", Replicas: 1}, framework.Task{Name: "worker", Replicas: 2, GPUs: 1})
	framework.CreateJob(t, c, job)
	framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 60*time.Second)
	if err := c.Healthy(); err != nil {
		t.Fatal(err)
	}
	logs, err := os.ReadFile(c.LogPath(localcluster.Scheduler))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"paddle.affinity.weight=very heavy", "paddle.starvationAfter", "paddle.rackLabel", "paddle.packing.wieght: unknown argument"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("scheduler log does not report %q", want)
		}
	}
}

// Volcano's upstream issue C (docs/security.md): the
// controller manager stops while killJob deletes a job's pods, before it
// writes the bumped version. The next controller re-creates the pods with
// the old version: the restart is not counted and the new pods reuse the
// old host names. This test shows that behaviour; when Volcano persists the
// restart first, it fails and docs/security.md must change.
func TestControllerStoppedDuringRestart(t *testing.T) {
	// At 1 request per second killJob patches the 6 pods for 6 s before
	// it deletes the first: time to stop the controller in between.
	c := framework.StartCluster(t, localcluster.Options{Topology: tinyTopology(), ExtraArgs: map[string][]string{
		localcluster.ControllerManager: {"--kube-api-qps=1", "--kube-api-burst=1"},
	}})
	ns := framework.Namespace(t, c)
	ctx := context.Background()
	job := framework.CreateJob(t, c, paddleJob(ns, "crash", nil, 6,
		framework.Task{Name: "ps", Replicas: 2, CPU: "500m"}, framework.Task{Name: "worker", Replicas: 4, CPU: "500m"}))
	running := framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 120*time.Second)
	before := framework.JobPods(t, c, ns, job.Name)
	hostnames := map[string]string{}
	for _, p := range before {
		hostnames[p.Name] = p.Spec.Hostname
	}
	framework.FailPod(t, c, ns, before[0].Name)
	// Stop the controller at the first deletion.
	if err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				return true, nil
			}
		}
		return len(pods.Items) < len(before), nil
	}); err != nil {
		t.Fatalf("killJob deleted no pod: %v", err)
	}
	if err := c.StopComponent(localcluster.ControllerManager); err != nil {
		t.Fatal(err)
	}
	j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status.Version != running.Status.Version || j.Status.State.Phase != batchv1alpha1.Running {
		t.Fatalf("the restart was recorded before the pods went (version %d -> %d, phase %s): update docs/security.md, issue C",
			running.Status.Version, j.Status.Version, j.Status.State.Phase)
	}
	if err := c.StartComponent(localcluster.ControllerManager); err != nil {
		t.Fatal(err)
	}
	uids := podUIDs(before)
	var after []corev1.Pod
	if err := framework.Poll(ctx, 120*time.Second, func(ctx context.Context) (bool, error) {
		after = framework.JobPods(t, c, ns, job.Name)
		if len(after) != len(before) {
			return false, nil
		}
		for _, p := range after {
			if uids[p.Name] == p.UID || p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("the job did not get new running pods after the controller came back: %v\n%s", err, framework.DescribePods(c, ns))
	}
	j, err = c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range after {
		if p.Annotations[batchv1alpha1.JobVersion] != fmt.Sprint(running.Status.Version) || p.Spec.Hostname != hostnames[p.Name] {
			t.Fatalf("pod %s: version %s, hostname %s (before: version %d, hostname %s): Volcano now records the restart; update docs/security.md, issue C",
				p.Name, p.Annotations[batchv1alpha1.JobVersion], p.Spec.Hostname, running.Status.Version, hostnames[p.Name])
		}
	}
	t.Logf("controller stopped mid-restart: %d new pods kept version %d and their host names; job version %d, retry count %d",
		len(after), running.Status.Version, j.Status.Version, j.Status.RetryCount)
}
