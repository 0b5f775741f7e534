package e2e

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
	"github.com/volcano-paddle/volcano-paddle/pkg/controllers/paddleelastic"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// An elastic job on the real node, with the etcd image built from the
// control plane's etcd (--etcd-image): its etcd pod runs and becomes Ready
// on real-0; every trainer (paddle-probe playing Paddle's elastic launcher)
// finds it at the name PADDLE_MASTER gives, through CoreDNS and the
// headless Service, and registers there; deleting a trainer makes the
// controller's loss notice delete exactly that trainer's heartbeat key in
// this etcd (which it reaches at the pod's IP), and the replacement
// registers anew; deleting the job removes the etcd pod, Service,
// EndpointSlice and NetworkPolicy.
func TestRealNodeElasticEtcd(t *testing.T) {
	c := framework.RealNodeCluster(t)
	ns := framework.Namespace(t, c)
	rec := framework.RecordPods(t, c, ns)
	image := framework.Image(t, c, "etcd")
	ctx := context.Background()
	job := elasticProbeJob(t, c, ns, "re", nil, nil)
	start := time.Now()
	framework.CreateJob(t, c, job)

	// The etcd pod: on real-0, with our image, Running and Ready.
	name := paddlejob.EtcdName("re")
	var etcdPod *corev1.Pod
	if err := framework.Poll(ctx, 120*time.Second, func(ctx context.Context) (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		etcdPod = p
		return p.Status.Phase == corev1.PodRunning && podReady(p), nil
	}); err != nil {
		t.Fatalf("etcd pod %s not Running and Ready: %v\n%s", name, err, framework.DescribePods(c, ns))
	}
	t.Logf("etcd pod %s Running and Ready on %s at %s, %s after the job was created", name, etcdPod.Spec.NodeName, etcdPod.Status.PodIP, time.Since(start).Round(100*time.Millisecond))
	if etcdPod.Spec.NodeName != localcluster.RealNodeName || etcdPod.Spec.Containers[0].Image != image {
		t.Fatalf("etcd pod on %s with image %s, want %s and %s", etcdPod.Spec.NodeName, etcdPod.Spec.Containers[0].Image, localcluster.RealNodeName, image)
	}

	// Every trainer registers: one launcher per pod IP, each with its
	// heartbeat. The test reaches the etcd at its pod IP, as the
	// controller does; the trainers know only its name.
	g := &paddleetcd.Gateway{URL: "http://" + net.JoinHostPort(etcdPod.Status.PodIP, strconv.Itoa(paddlejob.EtcdClientPort))}
	jobID := paddlejob.JobID(job)
	launchers := map[string]string{} // pod name -> Paddle name
	if err := framework.Poll(ctx, 180*time.Second, func(ctx context.Context) (bool, error) {
		pods := workerPods(t, c, ns, "re")
		beats := heartbeats(ctx, t, g, jobID)
		for i := 0; i < 3; i++ {
			p, ok := pods["re-worker-"+strconv.Itoa(i)]
			if !ok || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
				return false, nil
			}
			names, err := paddleelastic.LaunchersAt(ctx, g, jobID, p.Status.PodIP)
			if err != nil || len(names) != 1 || !beats[names[0]] {
				return false, err
			}
			launchers[p.Name] = names[0]
		}
		return true, nil
	}); err != nil {
		t.Fatalf("trainers not registered with their etcd: %v (have %v)\n%s", err, launchers, framework.DescribePods(c, ns))
	}
	t.Logf("launchers registered %s after the job was created: %v", time.Since(start).Round(100*time.Millisecond), launchers)
	// A launcher's keys are visible before it has read them back; it
	// beats only after. Its report is checked below, so each must get that
	// far before its pod is deleted.
	for _, name := range launchers {
		waitBeat(ctx, t, g, jobID, name)
	}

	// The loss notice against this etcd.
	lost := launchers["re-worker-1"]
	deleted := time.Now()
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, "re-worker-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A fine interval: the notice is measured against a 1 s goal.
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		return !heartbeats(ctx, t, g, jobID)[lost], nil
	}); err != nil {
		t.Fatalf("heartbeat of the deleted pod's launcher %s still there after 5s", lost)
	}
	took := time.Since(deleted)
	t.Logf("heartbeat key of re-worker-1's launcher %s gone %s after the delete call", lost, took.Round(time.Millisecond))
	if took > time.Second {
		t.Errorf("loss notice took %s, want at most 1s", took)
	}
	if b := heartbeats(ctx, t, g, jobID); !b[launchers["re-worker-0"]] || !b[launchers["re-worker-2"]] {
		t.Errorf("heartbeats after the loss %v; the survivors' %s and %s must stay", b, launchers["re-worker-0"], launchers["re-worker-2"])
	}
	// The replacement registers under a new launcher name.
	var replacement string
	if err := framework.Poll(ctx, 120*time.Second, func(ctx context.Context) (bool, error) {
		p, ok := workerPods(t, c, ns, "re")["re-worker-1"]
		if !ok || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
			return false, nil
		}
		// The lost launcher's record stays (only its heartbeat goes),
		// should the replacement get the same IP.
		names, err := paddleelastic.LaunchersAt(ctx, g, jobID, p.Status.PodIP)
		names = slices.DeleteFunc(names, func(n string) bool { return n == lost })
		if err != nil || len(names) != 1 {
			return false, err
		}
		b := heartbeats(ctx, t, g, jobID)
		replacement = names[0]
		return len(b) == 3 && b[names[0]] && b[launchers["re-worker-0"]] && b[launchers["re-worker-2"]], nil
	}); err != nil {
		t.Errorf("the replacement of re-worker-1 did not register: %v (heartbeats %v)\n%s", err, heartbeats(ctx, t, g, jobID), framework.DescribePods(c, ns))
	} else {
		t.Logf("the replacement of re-worker-1 registered %s after the delete call", time.Since(deleted).Round(100*time.Millisecond))
		waitBeat(ctx, t, g, jobID, replacement)
	}

	// Deleting the job removes its etcd.
	took = deleteElasticJob(t, c, ns, "re", 90*time.Second)
	t.Logf("etcd pod, Service, EndpointSlice and NetworkPolicy gone %s after the job was deleted", took.Round(100*time.Millisecond))

	// What each trainer saw, from its report (termination message): the
	// name of PADDLE_MASTER resolved to the etcd pod's IP, etcd healthy,
	// its keys read back.
	host := name + "." + ns + ".svc"
	var workers []framework.PodRecord
	if err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		workers = rec.Of("re-worker-")
		for _, p := range workers {
			if p.Last == nil {
				return false, nil
			}
			if _, ok, err := framework.ProbeReport(p.Last); !ok || err != nil {
				return false, err
			}
		}
		return len(workers) == 4, nil
	}); err != nil {
		t.Fatalf("reports of the 4 trainer pods (3 and a replacement): %v (have %d pods)", err, len(workers))
	}
	for _, p := range workers {
		r, _, _ := framework.ProbeReport(p.Last)
		e := r.Etcd
		if r.Error != "" || e == nil || e.Endpoint != host+":"+strconv.Itoa(paddlejob.EtcdClientPort) || r.Resolved[host] != etcdPod.Status.PodIP ||
			e.Health == "" || len(e.Keys) != 2 || e.Keys[paddleetcd.HeartbeatKey(jobID, e.Name)] != e.Name {
			t.Errorf("%s (uid %s) report %+v, etcd %+v; want %s resolved to %s and its two keys read back", p.Name, p.UID, r, e, host, etcdPod.Status.PodIP)
			continue
		}
		t.Logf("%s (uid %s): %s resolved to %s, etcd answered %s, launcher %s, %d lease refreshes", p.Name, p.UID, host, r.Resolved[host], e.Health, e.Name, e.Beats)
	}
}

// podReady: the pod's Ready condition is true (its readiness probe, for
// the etcd pod: GET /health).
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitBeat waits until the launcher name has refreshed its heartbeat's
// lease once (its TTL grew: Paddle's launcher, and the probe, refresh
// every ttl/2), which it does only after reading its keys back.
func waitBeat(ctx context.Context, t *testing.T, g *paddleetcd.Gateway, jobID, name string) {
	t.Helper()
	kvs, err := g.Prefix(ctx, paddleetcd.HeartbeatKey(jobID, name))
	if err != nil || len(kvs) != 1 || kvs[0].Lease == "" {
		t.Fatalf("heartbeat of launcher %s: %v, %v", name, kvs, err)
	}
	first := -1
	if err := framework.Poll(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		ttl, err := g.TimeToLive(ctx, kvs[0].Lease)
		if err != nil {
			return false, err
		}
		if first < 0 || ttl < first {
			first = ttl
		}
		return ttl > first, nil
	}); err != nil {
		t.Fatalf("launcher %s did not refresh its heartbeat lease %s: %v", name, kvs[0].Lease, err)
	}
}
