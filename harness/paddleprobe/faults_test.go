package paddleprobe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volcano-paddle/volcano-paddle/harness/etcdtest"
	"github.com/volcano-paddle/volcano-paddle/internal/dnsbarrier/dnstest"
	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// The double on its job's store's faults, against a real etcd, as Paddle's
// launcher behaved on each (v2.6.2 and v3.0.0-beta2, three launchers, the
// store killed, restarted, wiped, stopped): it exits 1 on the store's
// error when the store is killed, restarted in place or re-created without
// data (controllers/controller.py: Controller.watch, get_status raising);
// it keeps running through a 2 s stop; after a stop longer than its 10 s
// lease it finds no live peer and gives up, "peer not ready", exit 241
// (ETCDMaster.wait_peer_ready). One launcher here, in a world of 1 (MIN =
// MAX = 1), faulted once its world has formed and its processes would run.
func TestLauncherOnStoreFaults(t *testing.T) {
	cases := []struct {
		name  string
		fault func(*etcdtest.Server)
		// within: after the fault, how long it may take to exit (a deadline
		// the select returns before as soon as it exits, generous for a
		// loaded machine), or, for wantCode 0, how long it must keep running.
		within   time.Duration
		wantCode int // 0: keeps running
	}{
		{"no fault", func(*etcdtest.Server) {}, 5 * time.Second, 0},
		{"store killed and restarted in place after 2 s (data kept)", func(s *etcdtest.Server) {
			s.Kill()
			s.Unanswered(2 * time.Second)
			s.Restart(false)
		}, 30 * time.Second, 1},
		{"store killed and re-created after 2 s (data lost)", func(s *etcdtest.Server) {
			s.Kill()
			s.Unanswered(2 * time.Second)
			s.Restart(true)
		}, 30 * time.Second, 1},
		{"store stopped for 2 s", func(s *etcdtest.Server) {
			s.Pause()
			s.Unanswered(2 * time.Second)
			s.Resume()
		}, 5 * time.Second, 0},
		{"store stopped for 12 s (longer than the lease)", func(s *etcdtest.Server) {
			s.Pause()
			s.Unanswered(12 * time.Second)
			s.Resume()
		}, time.Minute, paddleapi.ExitStopped},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			etcd := etcdtest.StartServer(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := startLaunchers(ctx, t, etcd.URL, "1:1", 1)
			// Its world formed: it set the job's status to running.
			g := &paddleetcd.Gateway{URL: etcd.URL}
			if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				v, ok, err := g.Get(ctx, paddleetcd.StatusKey("ns-el"))
				return err == nil && ok && v == "running", nil
			}); err != nil {
				t.Fatalf("the double did not form its world: %v", err)
			}
			faulted := time.Now()
			tc.fault(etcd)
			var res launcherResult
			select {
			case res = <-done:
			case <-time.After(tc.within):
				// Still running that long after the fault (and after the
				// store is back): it did not exit on it.
				cancel()
				res = <-done
			}
			code := 0
			if res.err != nil && !errors.Is(res.err, context.Canceled) {
				code = 1
				var exit *ExitError
				if errors.As(res.err, &exit) {
					code = exit.Code
				}
			}
			if code != tc.wantCode {
				t.Fatalf("exit code %d on the store's fault (err %v), want %d (0: keeps running)", code, res.err, tc.wantCode)
			}
			if code == 1 && (res.r.Etcd == nil || res.r.Etcd.StoreLost == "") {
				t.Errorf("report %+v does not say the store was lost", res.r.Etcd)
			}
			if code != 0 {
				t.Logf("exit %d %s after the fault began: %v", code, res.at.Sub(faulted).Round(100*time.Millisecond), res.err)
			}
		})
	}
}

// Three doubles form one world as Paddle's launchers do: with MAX alive,
// at once, each with its own rank in 0..2 (sync_peers: ranks follow the
// sorted record keys).
func TestLaunchersFormAWorld(t *testing.T) {
	etcd := etcdtest.StartServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Each launcher puts "running" on the job's status key once its world
	// has formed (set_status): three puts.
	g := &paddleetcd.Gateway{URL: etcd.URL}
	running := make(chan struct{}, 16)
	watching := make(chan struct{})
	go func() {
		_ = g.Watch(ctx, paddleetcd.StatusKey("ns-el"), false, func() { close(watching) }, func(events []paddleetcd.Event) {
			for _, e := range events {
				if e.Key == paddleetcd.StatusKey("ns-el") && e.Value == "running" {
					running <- struct{}{}
				}
			}
		})
	}()
	select {
	case <-watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the status watch did not start")
	}
	reports := startLaunchers(ctx, t, etcd.URL, "2:3", 3)
	deadline := time.After(20 * time.Second)
	for i := 0; i < 3; i++ {
		select {
		case <-running:
		case <-deadline:
			t.Fatalf("%d of 3 launchers formed a world within 20 s", i)
		}
	}
	cancel()
	ranks := map[int]bool{}
	for i := 0; i < 3; i++ {
		r := (<-reports).r
		if r.Etcd == nil || len(r.Etcd.Worlds) == 0 {
			t.Fatalf("a launcher formed no world: %+v", r.Etcd)
		}
		w := r.Etcd.Worlds[0]
		if w.Size != 3 {
			t.Errorf("launcher %s formed a world of %d, want 3", r.Etcd.Name, w.Size)
		}
		ranks[w.Rank] = true
	}
	if len(ranks) != 3 || !ranks[0] || !ranks[1] || !ranks[2] {
		t.Errorf("ranks %v, want 0, 1 and 2", ranks)
	}
}

// launcherResult is how a double ended: its report, its error, when.
type launcherResult struct {
	r   Report
	err error
	at  time.Time
}

// startLaunchers starts n doubles of job ns-el (POD_IP 127.0.0.1..n) on
// the etcd at etcdURL, which they find through a name, as in a pod, with
// PADDLE_NNODES nnodes and a 10 s elastic timeout; each one's end arrives
// on the channel.
func startLaunchers(ctx context.Context, t *testing.T, etcdURL, nnodes string, n int) <-chan launcherResult {
	t.Helper()
	dns := dnstest.Start(t)
	dns.Set("paddle-etcd-el.ns.svc.", "127.0.0.1")
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns.Addr)
	}}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(etcdURL, "http://"))
	out := make(chan launcherResult, n)
	for i := 1; i <= n; i++ {
		env := map[string]string{"PADDLE_MASTER": "etcd://paddle-etcd-el.ns.svc:" + port, "PADDLE_JOB_ID": "ns-el", "POD_IP": fmt.Sprintf("127.0.0.%d", i),
			"PROBE_POD_NAME": fmt.Sprintf("el-worker-%d", i), "PADDLE_NNODES": nnodes, "PADDLE_ELASTIC_TIMEOUT": "10"}
		go func() {
			r, err := Run(ctx, Config{Env: func(k string) string { return env[k] }, Resolver: resolver, Timeout: 5 * time.Second})
			out <- launcherResult{r, err, time.Now()}
		}()
	}
	return out
}
