package paddleelastic

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volcano-paddle/volcano-paddle/harness/etcdtest"
	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
)

// The keeper puts back the heartbeats a joiner wipes, but never that of a
// launcher whose pod has restarted its launcher since the keeper first saw
// it (restartPolicy OnFailure: the pod runs on, the exited launcher's
// lease lives up to 10 s, and its successor's first act is the wipe), nor
// one where no launcher runs. Against a real etcd.
func TestKeeperNeverRestoresAnExitedLauncher(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &paddleetcd.Gateway{URL: etcdtest.Start(t)}
	const jobID = "ns-keep"
	ips := map[string]string{"aaaaaa": "10.1.0.1", "bbbbbb": "10.1.0.2", "cccccc": "10.1.0.3"}
	leases := map[string]string{}
	for name, ip := range ips {
		rec := fmt.Sprintf(`{"name":%q,"rank":-1,"replicas":1,"dtype":"gpu","candidate":"%s:41234","endpoints":"%s:41235"}`, name, ip, ip)
		if _, err := g.Put(ctx, paddleetcd.InfoPrefix(jobID)+name+"/-1", rec, ""); err != nil {
			t.Fatal(err)
		}
		lease, err := g.Grant(ctx, 30)
		if err != nil {
			t.Fatal(err)
		}
		leases[name] = lease
	}
	putBeats := func() {
		for name, lease := range leases {
			if _, err := g.Put(ctx, paddleetcd.HeartbeatKey(jobID, name), name, lease); err != nil {
				t.Fatal(err)
			}
		}
	}
	// What runs at each IP: a launcher incarnation, or nothing.
	var mu sync.Mutex
	running := map[string]string{ips["aaaaaa"]: "pod-a/0", ips["bbbbbb"]: "pod-b/0", ips["cccccc"]: "pod-c/0"}
	k := &BeatKeeper{G: g, JobID: jobID, Alive: func(ip string) string {
		mu.Lock()
		defer mu.Unlock()
		return running[ip]
	}}
	go k.Run(ctx)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return k.Watching(), nil }); err != nil {
		t.Fatal("the keeper did not start watching")
	}
	// wipe deletes every heartbeat as a joining launcher does and waits
	// until the keeper has put back exactly want.
	wipe := func(want ...string) {
		t.Helper()
		if err := g.DeletePrefix(ctx, paddleetcd.HeartbeatPrefix(jobID)); err != nil {
			t.Fatal(err)
		}
		wanted := map[string]bool{}
		for _, n := range want {
			wanted[n] = true
		}
		var got map[string]bool
		read := func() {
			kvs, err := g.Prefix(ctx, paddleetcd.HeartbeatPrefix(jobID))
			if err != nil {
				t.Fatal(err)
			}
			got = map[string]bool{}
			for _, kv := range kvs {
				got[kv.Value] = true
			}
		}
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
			read()
			for n := range wanted {
				if !got[n] {
					return false, nil
				}
			}
			return true, nil
		}); err != nil {
			t.Fatalf("after the wipe the keeper put back %v, want %v", got, want)
		}
		// Then, for a second (the keeper puts keys back one by one): no
		// other key comes back. Sampled on a ticker: an invariant, not a
		// condition to wait for.
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for end := time.Now().Add(time.Second); time.Now().Before(end); <-tick.C {
			read()
			for n := range got {
				if !wanted[n] {
					t.Fatalf("after the wipe the keeper put back %v, want %v", got, want)
				}
			}
		}
	}

	putBeats()
	wipe("aaaaaa", "bbbbbb", "cccccc") // all run: all put back (and bound)

	// cccccc's launcher exits; its pod restarts it in place (a new
	// incarnation at the same IP); bbbbbb's has exited and waits for the
	// kubelet (nothing runs there).
	mu.Lock()
	running[ips["cccccc"]] = "pod-c/1"
	running[ips["bbbbbb"]] = ""
	mu.Unlock()
	putBeats()
	wipe("aaaaaa")
	// And a later wipe still leaves cccccc's old launcher away, while
	// bbbbbb's, whose pod had not restarted its launcher yet, comes back
	// once one runs there in the incarnation the keeper bound it to (the
	// kubelet reported its container as not running for a moment).
	mu.Lock()
	running[ips["bbbbbb"]] = "pod-b/0"
	mu.Unlock()
	putBeats()
	wipe("aaaaaa", "bbbbbb")
}

// The keeper reports each "failed" a launcher puts on the job's status
// key (a process failed, Paddle restarts the world), and nothing else.
func TestKeeperReportsProcessFailures(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &paddleetcd.Gateway{URL: etcdtest.Start(t)}
	const jobID = "ns-fail"
	var mu sync.Mutex
	var failed int
	k := &BeatKeeper{G: g, JobID: jobID, Alive: func(string) string { return "" }, Failed: func(time.Time) {
		mu.Lock()
		failed++
		mu.Unlock()
	}}
	go k.Run(ctx)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return k.Watching(), nil }); err != nil {
		t.Fatal("the keeper did not start watching")
	}
	for _, v := range []string{"running", "failed", "running", "completed"} {
		if _, err := g.Put(ctx, paddleetcd.StatusKey(jobID), v, ""); err != nil {
			t.Fatal(err)
		}
	}
	// A key of another job whose id extends this one, and a heartbeat.
	if _, err := g.Put(ctx, paddleetcd.StatusKey(jobID)+"x", "failed", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Put(ctx, paddleetcd.HeartbeatKey(jobID, "failed"), "failed", ""); err != nil {
		t.Fatal(err)
	}
	// The last put is seen once the keeper has handled everything before
	// it: wait for a second failure put after the others.
	if _, err := g.Put(ctx, paddleetcd.StatusKey(jobID), "failed", ""); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return failed >= 2, nil
	}); err != nil {
		t.Fatalf("the keeper reported %d process failures, want 2", failed)
	}
	mu.Lock()
	defer mu.Unlock()
	if failed != 2 {
		t.Errorf("the keeper reported %d process failures, want 2 (the status key's two \"failed\")", failed)
	}
}
