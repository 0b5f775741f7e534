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

// The double on its job's store's faults, against a real etcd: it exits
// (with the store's error) when the store is killed, restarted in place or
// re-created without data, as Paddle's launcher does
// (controllers/controller.py: Controller.watch, get_status raising), and
// keeps running while the store serves.
func TestLauncherOnStoreFaults(t *testing.T) {
	cases := []struct {
		name     string
		fault    func(*etcdtest.Server)
		wantExit bool
	}{
		{"no fault", func(*etcdtest.Server) {}, false},
		{"store killed and restarted in place after 2 s (data kept)", func(s *etcdtest.Server) {
			s.Kill()
			time.Sleep(2 * time.Second) // the fault's length, not a wait for a condition
			s.Restart(false)
		}, true},
		{"store killed and re-created after 2 s (data lost)", func(s *etcdtest.Server) {
			s.Kill()
			time.Sleep(2 * time.Second) // the fault's length
			s.Restart(true)
		}, true},
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
			env := map[string]string{"PADDLE_MASTER": "etcd://paddle-etcd-el.ns.svc:" + port, "PADDLE_JOB_ID": "ns-el", "POD_IP": "127.0.0.9", "PROBE_POD_NAME": "el-worker-0"}
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
			case <-time.After(5 * time.Second):
				// Still running 5 s after the fault (and after the store is
				// back): it did not exit on it.
				cancel()
				res = <-done
			}
			exited := res.err != nil && !errors.Is(res.err, context.Canceled)
			if exited != tc.wantExit {
				t.Fatalf("exited on the store's fault = %v (err %v), want %v", exited, res.err, tc.wantExit)
			}
			if tc.wantExit {
				if res.r.Etcd == nil || res.r.Etcd.StoreLost == "" {
					t.Errorf("report %+v does not say the store was lost", res.r.Etcd)
				}
				t.Logf("exited %s after the fault began: %v", res.at.Sub(faulted).Round(100*time.Millisecond), res.err)
			}
		})
	}
}
