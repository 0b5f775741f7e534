package paddleprobe

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volcano-paddle/volcano-paddle/harness/etcdtest"
	"github.com/volcano-paddle/volcano-paddle/internal/dnsbarrier/dnstest"
	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
)

// The double on its job's store's faults, against a real etcd, as Paddle's
// launcher behaved on each (v2.6.2 and v3.0.0-beta2, three launchers, the
// store killed, restarted, wiped, stopped): it exits 1 on the store's
// error when the store is killed, restarted in place or re-created without
// data (controllers/controller.py: Controller.watch, get_status raising);
// it keeps running through a 2 s stop; after a stop longer than its 10 s
// lease it finds no live peer and gives up, "peer not ready", exit 241
// (ETCDMaster.wait_peer_ready). One launcher here, MIN 1, MAX 3.
func TestLauncherOnStoreFaults(t *testing.T) {
	cases := []struct {
		name     string
		fault    func(*etcdtest.Server)
		within   time.Duration // after the fault, how long it may take to exit
		wantCode int           // 0: keeps running
	}{
		{"no fault", func(*etcdtest.Server) {}, 5 * time.Second, 0},
		{"store killed and restarted in place after 2 s (data kept)", func(s *etcdtest.Server) {
			s.Kill()
			time.Sleep(2 * time.Second) // the fault's length, not a wait for a condition
			s.Restart(false)
		}, 5 * time.Second, 1},
		{"store killed and re-created after 2 s (data lost)", func(s *etcdtest.Server) {
			s.Kill()
			time.Sleep(2 * time.Second) // the fault's length
			s.Restart(true)
		}, 5 * time.Second, 1},
		{"store stopped for 2 s", func(s *etcdtest.Server) {
			s.Pause()
			time.Sleep(2 * time.Second) // the fault's length
			s.Resume()
		}, 5 * time.Second, 0},
		{"store stopped for 12 s (longer than the lease)", func(s *etcdtest.Server) {
			s.Pause()
			time.Sleep(12 * time.Second) // the fault's length
			s.Resume()
		}, 20 * time.Second, exitPeerNotReady},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			etcd := etcdtest.StartServer(t)
			dns := dnstest.Start(t)
			dns.Set("paddle-etcd-el.ns.svc.", "127.0.0.1")
			resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "udp", dns.Addr)
			}}
			_, port, _ := net.SplitHostPort(strings.TrimPrefix(etcd.URL, "http://"))
			env := map[string]string{"PADDLE_MASTER": "etcd://paddle-etcd-el.ns.svc:" + port, "PADDLE_JOB_ID": "ns-el", "POD_IP": "127.0.0.9", "PROBE_POD_NAME": "el-worker-0",
				"PADDLE_NNODES": "1:3", "PADDLE_ELASTIC_TIMEOUT": "10"}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				r   Report
				err error
				at  time.Time
			}
			done := make(chan result, 1)
			go func() {
				r, err := Run(ctx, Config{Env: func(k string) string { return env[k] }, Resolver: resolver, Timeout: 5 * time.Second})
				done <- result{r, err, time.Now()}
			}()
			// Registered: its heartbeat is in the store.
			g := &paddleetcd.Gateway{URL: etcd.URL}
			if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
				kvs, err := g.Prefix(ctx, paddleetcd.HeartbeatPrefix("ns-el"))
				return err == nil && len(kvs) == 1, nil
			}); err != nil {
				t.Fatalf("the double did not register: %v", err)
			}
			faulted := time.Now()
			tc.fault(etcd)
			var res result
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
