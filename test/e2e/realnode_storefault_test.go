package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/etcdtest"
	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
	"github.com/volcano-paddle/volcano-paddle/pkg/controllers/paddleelastic"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// A store fault is not a job failure, on the real node: an elastic job
// whose trainers (paddle-probe, which exits like Paddle's launcher when
// its store is interrupted) run with restartPolicy OnFailure has its
// store's etcd process stopped for 12 s (longer than the launchers' 10 s
// leases: they find no peer and give up, exit 241), then killed on the
// node (the kubelet restarts it in place, data kept: an OOM kill), then
// its store pod deleted (the controller re-creates it, data lost: an
// eviction, a drain). Each time every launcher exits (1 on the store's
// error, 241 after the stop) and the kubelet restarts it in place (same
// pods), they all register with the store again, the job stays Running,
// and no exit counts toward --elastic-max-failures.
func TestRealNodeElasticStoreFaults(t *testing.T) {
	c := framework.RealNodeCluster(t)
	ns := framework.Namespace(t, c)
	ctx := context.Background()
	// --timeout: a launcher restarted while DNS still answers the old
	// store's IP gives up (and is restarted) within 15 s.
	job := elasticProbeJob(t, c, ns, "sf", []string{"--elastic-max-failures=1"}, []string{"--timeout=15s"})
	job.Spec.Tasks[0].Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	framework.CreateJob(t, c, job)
	jobID := paddlejob.JobID(job)

	store := waitStorePod(ctx, t, c, ns, "sf", "")
	launchers := waitLaunchers(ctx, t, c, ns, "sf", storeGateway(store), jobID, nil)
	// Faulted only once every launcher has formed its world: one that has
	// not yet gives up with exit 0 on a fault, as Paddle's does, and its
	// pod is replaced instead of restarted (a pod that never trained).
	waitFirstWorld(ctx, t, storeGateway(store), jobID, 3)
	uids := map[string]types.UID{}
	for _, p := range workerPods(t, c, ns, "sf") {
		uids[p.Name] = p.UID
	}
	t.Logf("launchers registered: %v", launchers)

	// 1. The store's etcd process stopped for longer than the leases.
	pid := storeProcess(t, store)
	stopped := time.Now()
	if err := etcdtest.StopProcess(pid); err != nil {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		t.Fatalf("stopping the store's etcd: %v", err)
	}
	// The stop lasts until the store has left its clients unanswered for
	// 12 s; resumed whatever happens, so that a failed wait leaves no
	// stopped process.
	unanswered := etcdtest.WaitUnanswered(ctx, storeGateway(store).URL, 12*time.Second)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatalf("resuming the store's etcd (pid %d): %v", pid, err)
	}
	if unanswered != nil {
		t.Fatal(unanswered)
	}
	waitLaunchersRestarted(ctx, t, c, ns, "sf", uids, 1, paddleapi.ExitStopped)
	launchers = waitLaunchers(ctx, t, c, ns, "sf", storeGateway(store), jobID, launchers)
	t.Logf("launchers registered again %s after the stop began: %v", time.Since(stopped).Round(100*time.Millisecond), launchers)
	checkNoFailure(ctx, t, c, ns, "sf")

	// 2. The store's etcd process killed on the node.
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the store's etcd (pid %d): %v", pid, err)
	}
	store = waitStoreRestarted(ctx, t, c, ns, store)
	t.Logf("store restarted in place and Ready %s after the kill", time.Since(killed).Round(100*time.Millisecond))
	waitLaunchersRestarted(ctx, t, c, ns, "sf", uids, 2, 1)
	launchers = waitLaunchers(ctx, t, c, ns, "sf", storeGateway(store), jobID, launchers)
	t.Logf("launchers registered again %s after the kill: %v", time.Since(killed).Round(100*time.Millisecond), launchers)
	checkNoFailure(ctx, t, c, ns, "sf")

	// 3. The store pod deleted: re-created by the controller, data lost,
	// a new IP.
	deleted := time.Now()
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, store.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	store = waitStorePod(ctx, t, c, ns, "sf", store.UID)
	t.Logf("store re-created and Ready %s after the delete, at %s", time.Since(deleted).Round(100*time.Millisecond), store.Status.PodIP)
	waitLaunchersRestarted(ctx, t, c, ns, "sf", uids, 3, 1)
	launchers = waitLaunchers(ctx, t, c, ns, "sf", storeGateway(store), jobID, launchers)
	t.Logf("launchers registered with the new store %s after the delete: %v", time.Since(deleted).Round(100*time.Millisecond), launchers)
	checkNoFailure(ctx, t, c, ns, "sf")

	deleteElasticJob(t, c, ns, "sf", 90*time.Second)
}

// waitFirstWorld waits until n launchers have each put "running" on the
// job's status key (set_status, once their first world formed; the key's
// version counts the puts, none of the launchers here wipes it) and the
// records of a world of n are in place.
func waitFirstWorld(ctx context.Context, t *testing.T, g *paddleetcd.Gateway, jobID string, n int) {
	t.Helper()
	if err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		kv, ok, err := g.GetKV(ctx, paddleetcd.StatusKey(jobID))
		if err != nil || !ok || kv.Value != "running" || kv.Version < int64(n) {
			return false, nil
		}
		records, err := g.Prefix(ctx, strings.TrimSuffix(paddleetcd.InfoPrefix(jobID), "/"))
		return err == nil && len(records) == n, nil
	}); err != nil {
		t.Fatalf("the launchers of job %s did not form their first world of %d: %v", jobID, n, err)
	}
}

// elasticProbeJob is an elastic job of paddle-probe trainers on the real
// node: 3 workers, MIN 2 (its minAvailable), MAX 3, the control plane's
// etcd image as its store's; pods are replaced one by one, never the job
// (no policies); more plugin arguments and probe flags as given.
func elasticProbeJob(t *testing.T, c *localcluster.Cluster, ns, name string, pluginArgs, probeArgs []string) *batchv1alpha1.Job {
	t.Helper()
	args := append([]string{"--elastic-max=3", "--etcd-image=" + framework.Image(t, c, "etcd")}, pluginArgs...)
	job := framework.ProbeJob(t, c, ns, name, args, probeArgs, 0, framework.ProbeTask{Name: "worker", Replicas: 3})
	lo := int32(2)
	job.Spec.Policies = nil
	job.Spec.MinAvailable = lo
	job.Spec.Tasks[0].MinAvailable = &lo
	return job
}

// storeGateway reaches a store pod at its IP, as the controller does.
func storeGateway(store *corev1.Pod) *paddleetcd.Gateway {
	return &paddleetcd.Gateway{URL: "http://" + net.JoinHostPort(store.Status.PodIP, strconv.Itoa(paddlejob.EtcdClientPort))}
}

// waitStorePod waits until the job's store pod, another than the one with
// UID old, runs on the real node and is Ready.
func waitStorePod(ctx context.Context, t *testing.T, c *localcluster.Cluster, ns, job string, old types.UID) *corev1.Pod {
	t.Helper()
	var store *corev1.Pod
	if err := framework.Poll(ctx, 120*time.Second, func(ctx context.Context) (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, paddlejob.EtcdName(job), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		store = p
		return p.UID != old && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(p) && p.Status.PodIP != "", nil
	}); err != nil {
		t.Fatalf("store pod of %s not Running and Ready: %v\n%s", job, err, framework.DescribePods(c, ns))
	}
	return store
}

// waitStoreRestarted waits until the store pod's container has restarted
// in place and the pod is Ready again.
func waitStoreRestarted(ctx context.Context, t *testing.T, c *localcluster.Cluster, ns string, store *corev1.Pod) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	if err := framework.Poll(ctx, 120*time.Second, func(ctx context.Context) (bool, error) {
		got, err := c.Kube.CoreV1().Pods(ns).Get(ctx, store.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p = got
		return got.UID == store.UID && restarts(got) > restarts(store) && podReady(got), nil
	}); err != nil {
		t.Fatalf("store pod %s not restarted in place and Ready: %v\n%s", store.Name, err, framework.DescribePods(c, ns))
	}
	return p
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, s := range p.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}

// storeProcess is the node's pid of the store pod's etcd: the process
// whose command line advertises the pod's IP (the test runs on the node).
func storeProcess(t *testing.T, store *corev1.Pod) int {
	t.Helper()
	want := "--advertise-client-urls=http://" + net.JoinHostPort(store.Status.PodIP, strconv.Itoa(paddlejob.EtcdClientPort))
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == "etcd" && containsArg(args, want) {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	t.Fatalf("no etcd process with %s on this machine", want)
	return 0
}

func containsArg(args []string, want string) bool {
	for _, a := range args {
		if a == want {
			return true
		}
	}
	return false
}

// waitLaunchers waits until each of the job's 3 workers has a launcher
// registered in the store at its IP with a live heartbeat, none of them
// one of before (earlier launchers, restarted since), and returns them by
// pod. The store's errors while it comes back are waited out.
func waitLaunchers(ctx context.Context, t *testing.T, c *localcluster.Cluster, ns, job string, g *paddleetcd.Gateway, jobID string, before map[string]string) map[string]string {
	t.Helper()
	old := map[string]bool{}
	for _, n := range before {
		old[n] = true
	}
	var got map[string]string
	if err := framework.Poll(ctx, 180*time.Second, func(ctx context.Context) (bool, error) {
		got = map[string]string{}
		kvs, err := g.Prefix(ctx, paddleetcd.HeartbeatPrefix(jobID))
		if err != nil {
			return false, nil
		}
		beats := map[string]bool{}
		for _, kv := range kvs {
			beats[kv.Value] = true
		}
		for name, p := range workerPods(t, c, ns, job) {
			if p.Status.PodIP == "" {
				return false, nil
			}
			names, err := paddleelastic.LaunchersAt(ctx, g, jobID, p.Status.PodIP)
			if err != nil {
				return false, nil
			}
			for _, n := range names {
				if beats[n] && !old[n] {
					got[name] = n
				}
			}
		}
		return len(got) == 3, nil
	}); err != nil {
		t.Fatalf("launchers of %s not registered with the store at %s: %v (have %v)\n%s", job, g.URL, err, got, framework.DescribePods(c, ns))
	}
	return got
}

// waitLaunchersRestarted waits until every worker pod (the same pods,
// uids) has restarted its launcher in place at least n times, the last
// time after exiting with code: 1 on its store's error (its report, the
// termination message, says so), or 241 when it found no peer.
func waitLaunchersRestarted(ctx context.Context, t *testing.T, c *localcluster.Cluster, ns, job string, uids map[string]types.UID, n, code int32) {
	t.Helper()
	var state string
	if err := framework.Poll(ctx, 180*time.Second, func(ctx context.Context) (bool, error) {
		var b strings.Builder
		ok := true
		pods := workerPods(t, c, ns, job)
		for name, uid := range uids {
			p, found := pods[name]
			if !found || p.UID != uid {
				return false, fmt.Errorf("worker %s was replaced (uid %s, was %s): a store fault must restart the launcher in place", name, p.UID, uid)
			}
			st := p.Status.ContainerStatuses
			if len(st) == 0 || st[0].RestartCount < n || st[0].LastTerminationState.Terminated == nil {
				ok = false
				fmt.Fprintf(&b, "%s: not restarted %d times; ", name, n)
				continue
			}
			last := st[0].LastTerminationState.Terminated
			if last.ExitCode != code || (code == 1 && !strings.Contains(last.Message, `"storeLost"`)) {
				return false, fmt.Errorf("worker %s's launcher last ended with exit code %d and report %s, want %d", name, last.ExitCode, last.Message, code)
			}
			fmt.Fprintf(&b, "%s: %d restarts; ", name, st[0].RestartCount)
		}
		state = b.String()
		return ok, nil
	}); err != nil {
		t.Fatalf("launchers of %s not restarted in place on the store's fault: %v (%s)\n%s", job, err, state, framework.DescribePods(c, ns))
	}
}

// checkNoFailure: the job runs and counted no failure, and no event says
// it failed.
func checkNoFailure(ctx context.Context, t *testing.T, c *localcluster.Cluster, ns, job string) {
	t.Helper()
	j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status.State.Phase != batchv1alpha1.Running || j.Annotations[paddleelastic.FailuresAnnotation] != "" {
		t.Errorf("job %s phase %s (%s), failures counted %q; want Running and none", job, j.Status.State.Phase, j.Status.State.Message, j.Annotations[paddleelastic.FailuresAnnotation])
	}
	events, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == paddleelastic.FailuresReason || (e.Reason == paddleelastic.ReplacedReason && strings.Contains(e.Message, "crashed")) {
			t.Errorf("event %s: %s", e.Reason, e.Message)
		}
	}
}
