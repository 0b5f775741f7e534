package e2e

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
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/harness/paddleprobe"
	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
	"github.com/volcano-paddle/volcano-paddle/pkg/controllers/paddleelastic"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// elasticJob is an elastic collective job: workers from min to max, now
// replicas, its controller pointed at etcdURL (a loopback etcd: the
// simulated etcd pod's IP is not ours to reach). No restart policies: an
// elastic job replaces pods one by one.
func elasticJob(ns, name string, min, replicas, max int32, etcdURL string) *batchv1alpha1.Job {
	j := paddleJob(ns, name, []string{fmt.Sprintf("--elastic-max=%d", max)}, min,
		framework.Task{Name: "worker", Replicas: replicas, CPU: "1", GPUs: 1})
	j.Spec.Policies = nil
	j.Spec.Tasks[0].MinAvailable = &min
	j.Annotations = map[string]string{paddleelastic.EtcdURLAnnotation: etcdURL}
	return j
}

// waitReplaced waits until the job's n workers run and pod among them is
// another than in before (a new UID under its name), and returns them.
func waitReplaced(t *testing.T, c *localcluster.Cluster, ns, job string, n int, before map[string]corev1.Pod, pod string) map[string]corev1.Pod {
	t.Helper()
	var after map[string]corev1.Pod
	if err := framework.Poll(context.Background(), 60*time.Second, func(ctx context.Context) (bool, error) {
		after = waitWorkers(t, c, ns, job, n)
		return after[pod].UID != before[pod].UID, nil
	}); err != nil {
		t.Fatalf("%s not replaced: %v", pod, err)
	}
	return after
}

// startElasticJob starts an etcd and on it the elastic job name (2 to 4
// workers, 3 now) with the paddle plugin's args as well, waits until the
// job runs, and returns the etcd's URL.
func startElasticJob(t *testing.T, c *localcluster.Cluster, ns, name string, args ...string) string {
	t.Helper()
	etcdURL := framework.StartEtcd(t)
	job := elasticJob(ns, name, 2, 3, 4, etcdURL)
	job.Spec.Plugins["paddle"] = append(job.Spec.Plugins["paddle"], args...)
	framework.CreateJob(t, c, job)
	framework.WaitJobPhase(t, c, ns, name, batchv1alpha1.Running, 60*time.Second)
	return etcdURL
}

// workerPods are the job's running worker pods by name.
func workerPods(t *testing.T, c *localcluster.Cluster, ns, job string) map[string]corev1.Pod {
	t.Helper()
	out := map[string]corev1.Pod{}
	for _, p := range framework.JobPods(t, c, ns, job) {
		if p.Labels[paddleapi.ElasticLabel] == "true" {
			out[p.Name] = p
		}
	}
	return out
}

// waitWorkers waits until exactly the named worker pods run (with an IP)
// and no other worker pod exists.
func waitWorkers(t *testing.T, c *localcluster.Cluster, ns, job string, n int) map[string]corev1.Pod {
	t.Helper()
	var pods map[string]corev1.Pod
	err := framework.Poll(context.Background(), 60*time.Second, func(ctx context.Context) (bool, error) {
		pods = workerPods(t, c, ns, job)
		if len(pods) != n {
			return false, nil
		}
		for i := 0; i < n; i++ {
			p, ok := pods[fmt.Sprintf("%s-worker-%d", job, i)]
			if !ok || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%d running workers of %s: %v\n%s", n, job, err, framework.DescribePods(c, ns))
	}
	return pods
}

// phaseWatch records every phase and version the job shows until stopped.
func phaseWatch(t *testing.T, c *localcluster.Cluster, ns, name string) func() []string {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seen := map[string]bool{}
	done := make(chan struct{})
	// A watch without a resource version starts with the job as it is
	// now, then sees every change: no state in between is missed, as a
	// poll could miss a short Restarting.
	w, err := c.Volcano.BatchV1alpha1().Jobs(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatalf("watching job %s/%s: %v", ns, name, err)
	}
	go func() {
		defer close(done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.ResultChan():
				if !ok {
					return
				}
				if j, isJob := e.Object.(*batchv1alpha1.Job); isJob {
					mu.Lock()
					seen[fmt.Sprintf("%s v%d retries %d", j.Status.State.Phase, j.Status.Version, j.Status.RetryCount)] = true
					mu.Unlock()
				}
			}
		}
	}()
	return func() []string {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for s := range seen {
			out = append(out, s)
		}
		sort.Strings(out)
		return out
	}
}

func resize(t *testing.T, c *localcluster.Cluster, ns, name string, replicas int32) {
	t.Helper()
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/tasks/0/replicas","value":%d}]`, replicas)
	if _, err := c.Volcano.BatchV1alpha1().Jobs(ns).Patch(context.Background(), name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("resizing %s to %d: %v", name, replicas, err)
	}
}

// An elastic job is resized up and down and loses a pod while it runs: the
// pods above the size come and go, a lost pod is replaced, and the others
// keep running (same UIDs), the job never restarts; its etcd objects exist
// while the job does.
func TestElasticResizeAndReplace(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	startElasticJob(t, c, ns, "el")
	ctx := context.Background()
	phases := phaseWatch(t, c, ns, "el")
	before := waitWorkers(t, c, ns, "el", 3)
	for _, p := range before {
		env := podEnv(t, c, &p)
		if env[paddlejob.EnvNNodes] != "2:4" || env[paddlejob.EnvMaster] != "etcd://paddle-etcd-el."+ns+".svc:2379" || env[paddlejob.EnvTrainerID] != "" {
			t.Errorf("pod %s env %v", p.Name, env)
		}
	}

	// The etcd's objects.
	name := paddlejob.EtcdName("el")
	etcdPod, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("etcd pod: %v", err)
	}
	svc, err := c.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("etcd Service: %v", err)
	}
	// Selector-less (issue 37): the address is the EndpointSlice the
	// plugin and the paddleelastic controller write from the etcd pod,
	// checked below once the pod runs.
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Selector) != 0 {
		t.Errorf("etcd Service %+v: want headless and selector-less", svc.Spec)
	}
	np, err := c.Kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("etcd NetworkPolicy: %v", err)
	}
	if sel, _ := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); !sel.Matches(labels.Set(etcdPod.Labels)) {
		t.Errorf("NetworkPolicy selects %v, not the etcd pod", sel)
	}
	worker := before["el-worker-0"]
	admitted := false
	for _, from := range np.Spec.Ingress[0].From {
		if from.NamespaceSelector == nil {
			sel, _ := metav1.LabelSelectorAsSelector(from.PodSelector)
			admitted = admitted || sel.Matches(labels.Set(worker.Labels))
		}
	}
	if !admitted || np.Spec.Ingress[0].Ports[0].Port.IntValue() != paddlejob.EtcdClientPort {
		t.Errorf("NetworkPolicy ingress %+v does not admit worker %v on %d", np.Spec.Ingress, worker.Labels, paddlejob.EtcdClientPort)
	}
	// Volcano places the etcd pod on its own: it runs.
	if err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	}); err != nil {
		t.Errorf("etcd pod not running: %v\n%s", err, framework.DescribePods(c, ns))
	}
	// Its address: the pod's IP, ready once etcd answers.
	var slice *discoveryv1.EndpointSlice
	if err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		slice, err = c.Kube.DiscoveryV1().EndpointSlices(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return len(slice.Endpoints) == 1 && p.Status.PodIP != "" && slice.Endpoints[0].Addresses[0] == p.Status.PodIP &&
			slice.Endpoints[0].Conditions.Ready != nil && *slice.Endpoints[0].Conditions.Ready, nil
	}); err != nil {
		t.Errorf("etcd EndpointSlice %+v does not publish the ready etcd pod: %v", slice, err)
	}

	same := func(want map[string]corev1.Pod, got map[string]corev1.Pod, names ...string) {
		t.Helper()
		for _, n := range names {
			if got[n].UID != want[n].UID {
				t.Errorf("pod %s was replaced (uid %s -> %s); survivors must keep running", n, want[n].UID, got[n].UID)
			}
		}
	}
	resize(t, c, ns, "el", 4)
	up := waitWorkers(t, c, ns, "el", 4)
	same(before, up, "el-worker-0", "el-worker-1", "el-worker-2")
	if env := podEnv(t, c, ptr(up["el-worker-3"])); env[paddlejob.EnvNNodes] != "2:4" || env[paddlejob.EnvJobID] != ns+"-el" {
		t.Errorf("new pod's env %v", env)
	}

	resize(t, c, ns, "el", 2)
	down := waitWorkers(t, c, ns, "el", 2)
	same(before, down, "el-worker-0", "el-worker-1")

	// A pod killed: replaced under its name, the other keeps running.
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, "el-worker-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	replaced := waitReplaced(t, c, ns, "el", 2, down, "el-worker-1")
	same(before, replaced, "el-worker-0")

	// Volcano may show Pending while a replacement waits for its node
	// (state/running.go: more pending pods than replicas-minAvailable);
	// what must not happen is a restart: Restarting, a new version, a retry.
	seen := phases()
	t.Logf("job states seen: %v", seen)
	for _, s := range seen {
		if strings.HasPrefix(s, string(batchv1alpha1.Restarting)) || !strings.HasSuffix(s, " v0 retries 0") {
			t.Errorf("the job showed %q; an elastic job must never restart through resizes and a lost pod", s)
		}
	}

	// Deleting the job removes its etcd.
	deleteElasticJob(t, c, ns, "el", 60*time.Second)
}

func ptr(p corev1.Pod) *corev1.Pod { return &p }

// heartbeats are the Paddle launchers whose heartbeat key is in the job's
// etcd, by the pod name each key holds (Paddle's layout:
// /paddle/<job_id>/heartbeat/<name>, controllers/master.py: ETCDMaster).
func heartbeats(ctx context.Context, t *testing.T, g *paddleetcd.Gateway, jobID string) map[string]bool {
	t.Helper()
	kvs, err := g.Prefix(ctx, "/paddle/"+jobID+"/heartbeat/")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, kv := range kvs {
		out[kv.Value] = true
	}
	return out
}

// The loss notice, against a real etcd holding what Paddle's launchers
// write: deleting a pod removes exactly its launcher's heartbeat key,
// within 1 s, and for good. Each launcher's heartbeat thread is played as
// Paddle's (paddleprobe.Heartbeat: a 10 s lease, the key put back with it
// whenever missing); the lost pod's goes on for 3 s after the notice, as
// a launcher whose SIGTERM waits for a preStop hook does (issue 37), and
// its key must not come back: the world is at MAX (3) with no
// replacement, and survivors counting MAX would form a world with it and
// hang in sync_peers.
func TestElasticLossNotice(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	etcdURL := startElasticJob(t, c, ns, "ln")
	ctx := context.Background()
	pods := waitWorkers(t, c, ns, "ln", 3)

	// Paddle's records (controllers/collective.py: _build_pod_with_master,
	// controllers/master.py: sync_peers, register_heartbeat), one launcher
	// per pod under a random 6-letter name.
	g := &paddleetcd.Gateway{URL: etcdURL}
	jobID := ns + "-ln"
	names := map[string]string{"ln-worker-0": "qwerty", "ln-worker-1": "asdfgh", "ln-worker-2": "zxcvbn"}
	stops := map[string]context.CancelFunc{}
	done := map[string]chan struct{}{}
	t.Cleanup(func() {
		for n, stop := range stops {
			stop()
			<-done[n]
		}
	})
	for pod, name := range names {
		ip := pods[pod].Status.PodIP
		rec, _ := json.Marshal(map[string]interface{}{"name": name, "rank": -1, "replicas": 1, "dtype": "gpu",
			"candidate": ip + ":45123", "endpoints": ip + ":45124"})
		if _, err := g.Put(ctx, "/"+jobID+"/info/"+name+"/-1", string(rec), ""); err != nil {
			t.Fatal(err)
		}
		lease, err := g.Grant(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Put(ctx, "/paddle/"+jobID+"/heartbeat/"+name, name, lease); err != nil {
			t.Fatal(err)
		}
		// Paddle beats every 5 s; a faster put-back is a harder test.
		bctx, stop := context.WithCancel(ctx)
		stops[name], done[name] = stop, make(chan struct{})
		go func(name, lease string) {
			defer close(done[name])
			paddleprobe.Heartbeat(bctx, g, jobID, name, lease, 200*time.Millisecond, nil)
		}(name, lease)
	}
	beats := func() map[string]bool { return heartbeats(ctx, t, g, jobID) }
	if b := beats(); len(b) != 3 {
		t.Fatalf("heartbeats %v", b)
	}

	start := time.Now()
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, "ln-worker-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A fine interval: the notice is measured against a 1 s goal.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return !beats()["asdfgh"], nil
	}); err != nil {
		t.Fatalf("heartbeat of the deleted pod's launcher still there after 5s")
	}
	took := time.Since(start)
	t.Logf("heartbeat key of the deleted pod's launcher gone %s after the delete call", took.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("loss notice took %s, want at most 1s", took)
	}
	// The lost launcher keeps beating for 3 s, then stops; its key stays
	// away all along and after.
	gone := time.Now()
	// Sampled every 50 ms for 4 s: an invariant over time, not a
	// condition to wait for.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; time.Since(gone) < 4*time.Second; <-tick.C {
		if time.Since(gone) >= 3*time.Second && stops["asdfgh"] != nil {
			stops["asdfgh"]()
			<-done["asdfgh"]
			delete(stops, "asdfgh")
		}
		if b := beats(); !b["qwerty"] || !b["zxcvbn"] || len(b) != 2 {
			t.Fatalf("heartbeats %v %s after the notice; want exactly the survivors qwerty and zxcvbn (the lost launcher's heartbeat thread put its key back?)", b, time.Since(gone).Round(time.Millisecond))
		}
	}
}

// A joining launcher wipes every heartbeat of its job
// (controllers/master.py: register_heartbeat); the controller's BeatKeeper
// puts back, against a real etcd, the keys of launchers on live pods with
// their own leases, and neither a noticed loss nor a launcher whose pod is
// gone.
func TestElasticHeartbeatsKept(t *testing.T) {
	etcdURL := framework.StartEtcd(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &paddleetcd.Gateway{URL: etcdURL}
	const jobID = "ml-hb"
	ips := map[string]string{"alivea": "198.18.0.11", "aliveb": "198.18.0.12", "gonepd": "198.18.0.13", "notice": "198.18.0.14"}
	leases := map[string]string{}
	for name, ip := range ips {
		lease, err := g.Grant(ctx, 60)
		if err != nil {
			t.Fatal(err)
		}
		leases[name] = lease
		rec, _ := json.Marshal(map[string]interface{}{"name": name, "rank": -1, "candidate": ip + ":45000"})
		if _, err := g.Put(ctx, "/"+jobID+"/info/"+name+"/-1", string(rec), ""); err != nil {
			t.Fatal(err)
		}
		if _, err := g.Put(ctx, "/paddle/"+jobID+"/heartbeat/"+name, name, lease); err != nil {
			t.Fatal(err)
		}
	}
	k := &paddleelastic.BeatKeeper{G: g, JobID: jobID, Alive: func(ip string) string {
		if ip == ips["gonepd"] {
			return ""
		}
		return "pod-at-" + ip
	}}
	go k.Run(ctx)
	// The loss notice of pod 198.18.0.14 deletes its launcher's key.
	if names, err := paddleelastic.NoticeLoss(ctx, g, jobID, ips["notice"], k); err != nil || len(names) != 1 || names[0] != "notice" {
		t.Fatalf("notice: %v %v", names, err)
	}
	beats := func() map[string]bool { return heartbeats(ctx, t, g, jobID) }
	// Let the watch start, then wipe as a joiner does.
	if err := framework.Poll(ctx, 5*time.Second, func(context.Context) (bool, error) { return len(beats()) == 3, nil }); err != nil {
		t.Fatal(err)
	}
	if err := framework.Poll(ctx, 5*time.Second, func(context.Context) (bool, error) { return k.Watching(), nil }); err != nil {
		t.Fatalf("the keeper does not watch: %v", err)
	}
	start := time.Now()
	if err := g.DeletePrefix(ctx, "/paddle/"+jobID); err != nil {
		t.Fatal(err)
	}
	err := framework.Poll(ctx, 2*time.Second, func(context.Context) (bool, error) {
		b := beats()
		return b["alivea"] && b["aliveb"], nil
	})
	if err != nil {
		t.Fatalf("live launchers' heartbeats not put back: %v (have %v)", err, beats())
	}
	t.Logf("heartbeats of live launchers back %s after the wipe", time.Since(start).Round(time.Millisecond))
	if b := beats(); len(b) != 2 {
		t.Errorf("heartbeats after the wipe %v; want alivea and aliveb only", b)
	}
}

// A crashed trainer is replaced alone while the job stays below
// --elastic-max-failures; the crash past it fails the job, with an event
// naming the pod.
func TestElasticFailureBound(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	startElasticJob(t, c, ns, "fb", "--elastic-max-failures=1")
	ctx := context.Background()
	before := waitWorkers(t, c, ns, "fb", 3)

	framework.FailPod(t, c, ns, "fb-worker-2")
	after := waitReplaced(t, c, ns, "fb", 3, before, "fb-worker-2")
	for _, n := range []string{"fb-worker-0", "fb-worker-1"} {
		if after[n].UID != before[n].UID {
			t.Errorf("%s was replaced; only the crashed pod may be", n)
		}
	}
	j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, "fb", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Annotations[paddleelastic.FailuresAnnotation] != "1" || j.Status.RetryCount != 0 || j.Status.Version != 0 {
		t.Errorf("after one crash: failures %q, retries %d, version %d; want 1, 0, 0", j.Annotations[paddleelastic.FailuresAnnotation], j.Status.RetryCount, j.Status.Version)
	}

	framework.FailPod(t, c, ns, "fb-worker-1")
	j = framework.WaitJobPhase(t, c, ns, "fb", batchv1alpha1.Failed, 60*time.Second)
	if j.Status.State.Reason != paddleelastic.FailuresReason {
		t.Errorf("job failed with reason %q, want %s", j.Status.State.Reason, paddleelastic.FailuresReason)
	}
	// Volcano stops a failed job's running pods (state/finished.go).
	if err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		for _, p := range workerPods(t, c, ns, "fb") {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Errorf("the failed job's pods still run: %v\n%s", err, framework.DescribePods(c, ns))
	}
	if j, _ := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, "fb", metav1.GetOptions{}); j.Status.State.Phase != batchv1alpha1.Failed {
		t.Errorf("job phase %s after its pods stopped, want Failed", j.Status.State.Phase)
	}
	if err := framework.Poll(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		evs, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + paddleelastic.FailuresReason})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "fb" && strings.Contains(e.Message, "fb-worker-1") {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Errorf("no %s event naming fb-worker-1: %v", paddleelastic.FailuresReason, err)
	}
}

// deleteElasticJob deletes an elastic job and waits until its etcd pod,
// Service and NetworkPolicy are gone; it returns how long that took.
func deleteElasticJob(t *testing.T, c *localcluster.Cluster, ns, job string, timeout time.Duration) time.Duration {
	t.Helper()
	ctx := context.Background()
	name := paddlejob.EtcdName(job)
	bg := metav1.DeletePropagationBackground
	if err := c.Volcano.BatchV1alpha1().Jobs(ns).Delete(ctx, job, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := framework.Poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		_, e1 := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		_, e2 := c.Kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		_, e3 := c.Kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
		_, e4 := c.Kube.DiscoveryV1().EndpointSlices(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2) && apierrors.IsNotFound(e3) && apierrors.IsNotFound(e4), nil
	}); err != nil {
		t.Errorf("etcd objects of job %s left after the job was deleted: %v\n%s", job, err, framework.DescribePods(c, ns))
	}
	return time.Since(start)
}
