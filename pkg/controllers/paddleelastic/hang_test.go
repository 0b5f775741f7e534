package paddleelastic

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volcano-paddle/volcano-paddle/harness/paddleprobe"
	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
)

// realEtcd starts the etcd binary named by $ETCD_BIN (make test-unit sets
// it to bin/etcd when that is built), or bin/etcd at the module's root, on
// free local ports, and returns its client URL; the test is skipped
// without one.
func realEtcd(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("ETCD_BIN")
	if bin == "" {
		if dir, err := os.Getwd(); err == nil {
			for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
				if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
					bin = filepath.Join(dir, "bin", "etcd")
					break
				}
			}
		}
	}
	if _, err := os.Stat(bin); bin == "" || err != nil {
		t.Skipf("no etcd binary (ETCD_BIN=%q; make builds bin/etcd)", bin)
	}
	port := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	}
	client, peer := "http://127.0.0.1:"+port(), "http://127.0.0.1:"+port()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--data-dir", filepath.Join(dir, "data"), "--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "default="+peer, "--log-level", "error")
	log, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); log.Close() })
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		res, err := http.Get(client + "/health")
		if err != nil {
			return false, nil
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK, nil
	}); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
		t.Fatalf("etcd did not start: %v\n%s", err, b)
	}
	return client
}

// The loss notice never brings a world to MAX with a launcher that is
// about to stop (issue 37). Three launchers, MAX 3, no replacement; each
// is Paddle's heartbeat thread as paddle-probe plays it
// (paddleprobe.Heartbeat: the key put back with the same lease whenever
// it is missing). The notice for one comes 0, 1 or 3 s before that
// launcher stops beating (a notice at the pod's DeletionTimestamp, the
// SIGTERM after a preStop hook). If its key came back at any time, the
// survivors would count 3 = MAX heartbeats, form a world with it at once
// (wait_peer_ready) and wait for it forever in sync_peers. Deleting the
// key did that in the 1 and 3 s cases; revoking its lease refuses the
// put-back.
func TestLossNoticeNeverBringsTheLostLauncherBack(t *testing.T) {
	url := realEtcd(t)
	const interval = 200 * time.Millisecond // Paddle's is ttl/2 = 5 s: a faster put-back is a harder test
	for _, before := range []time.Duration{0, time.Second, 3 * time.Second} {
		t.Run(fmt.Sprintf("notice %s before the stop", before), func(t *testing.T) {
			ctx := context.Background()
			g := &paddleetcd.Gateway{URL: url}
			jobID := strings.ReplaceAll(fmt.Sprintf("ns-hang-%s", before), ".", "")
			ips := map[string]string{"aaaaaa": "10.1.0.1", "bbbbbb": "10.1.0.2", "cccccc": "10.1.0.3"}
			stops := map[string]context.CancelFunc{}
			done := map[string]chan struct{}{}
			for name, ip := range ips {
				rec := fmt.Sprintf(`{"name":%q,"rank":-1,"replicas":1,"dtype":"gpu","candidate":"%s:41234","endpoints":"%s:41235"}`, name, ip, ip)
				if _, err := g.Put(ctx, paddleetcd.InfoPrefix(jobID)+name+"/-1", rec, ""); err != nil {
					t.Fatal(err)
				}
				lease, err := g.Grant(ctx, 10)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := g.Put(ctx, paddleetcd.HeartbeatKey(jobID, name), name, lease); err != nil {
					t.Fatal(err)
				}
				bctx, stop := context.WithCancel(ctx)
				stops[name], done[name] = stop, make(chan struct{})
				go func(name, lease string) {
					defer close(done[name])
					paddleprobe.Heartbeat(bctx, g, jobID, name, lease, interval, nil)
				}(name, lease)
			}
			t.Cleanup(func() {
				for n, stop := range stops {
					stop()
					<-done[n]
				}
			})
			beats := func() string {
				kvs, err := g.Prefix(ctx, paddleetcd.HeartbeatPrefix(jobID))
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, kv := range kvs {
					names = append(names, kv.Value)
				}
				sort.Strings(names)
				return strings.Join(names, ",")
			}
			if b := beats(); b != "aaaaaa,bbbbbb,cccccc" {
				t.Fatalf("heartbeats %s before the loss", b)
			}
			names, err := NoticeLoss(ctx, g, jobID, ips["cccccc"], nil)
			if err != nil || len(names) != 1 || names[0] != "cccccc" {
				t.Fatalf("NoticeLoss = %v, %v; want [cccccc]", names, err)
			}
			// From the notice on, until well after the launcher stopped
			// (its lease, were it alive, would last 10 s): never MAX.
			noticed := time.Now()
			stopAt := noticed.Add(before)
			end := stopAt.Add(5 * interval)
			stopped := false
			for now := time.Now(); now.Before(end); now = time.Now() {
				if !stopped && !now.Before(stopAt) {
					stops["cccccc"]()
					<-done["cccccc"]
					stopped = true
				}
				if b := beats(); b != "aaaaaa,bbbbbb" {
					t.Fatalf("heartbeats %s %s after the notice; want the survivors aaaaaa,bbbbbb only: with 3 = MAX the survivors form a world with the stopping launcher and hang in sync_peers", b, time.Since(noticed).Round(time.Millisecond))
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// Once the lost launcher has stopped, a rendezvous record of it still
// there means the notice's restart may have been lost in the survivors'
// sync_peers: one survivor's heartbeat is put again, same value and
// lease (an event, no count changed). Once a rendezvous without it has
// cleared the records, nothing is put.
func TestNudgeAfterLoss(t *testing.T) {
	url := realEtcd(t)
	ctx := context.Background()
	g := &paddleetcd.Gateway{URL: url}
	jobID := "ns-nudge"
	ips := map[string]string{"aaaaaa": "10.1.0.1", "bbbbbb": "10.1.0.2"}
	leases := map[string]string{}
	for name, ip := range ips {
		rec := fmt.Sprintf(`{"name":%q,"rank":-1,"candidate":"%s:41234"}`, name, ip)
		if _, err := g.Put(ctx, paddleetcd.InfoPrefix(jobID)+name+"/-1", rec, ""); err != nil {
			t.Fatal(err)
		}
		lease, err := g.Grant(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		leases[name] = lease
		if _, err := g.Put(ctx, paddleetcd.HeartbeatKey(jobID, name), name, lease); err != nil {
			t.Fatal(err)
		}
	}
	if names, err := NoticeLoss(ctx, g, jobID, ips["bbbbbb"], nil); err != nil || len(names) != 1 {
		t.Fatalf("NoticeLoss = %v, %v", names, err)
	}
	key, err := NudgeAfterLoss(ctx, g, jobID, ips["bbbbbb"])
	if err != nil || key != paddleetcd.HeartbeatKey(jobID, "aaaaaa") {
		t.Fatalf("NudgeAfterLoss = %q, %v; want the survivor's key put again", key, err)
	}
	kvs, err := g.Prefix(ctx, paddleetcd.HeartbeatPrefix(jobID))
	if err != nil || len(kvs) != 1 || kvs[0].Value != "aaaaaa" || kvs[0].Lease != leases["aaaaaa"] {
		t.Fatalf("heartbeats %+v, %v; want the survivor's alone, with its lease", kvs, err)
	}
	// The survivors' sync_peers deleted the record prefix.
	if err := g.DeletePrefix(ctx, paddleetcd.InfoPrefix(jobID)); err != nil {
		t.Fatal(err)
	}
	if key, err := NudgeAfterLoss(ctx, g, jobID, ips["bbbbbb"]); err != nil || key != "" {
		t.Fatalf("NudgeAfterLoss after a rendezvous without the lost launcher = %q, %v; want nothing", key, err)
	}
}
