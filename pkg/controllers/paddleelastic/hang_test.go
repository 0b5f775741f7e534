package paddleelastic

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/harness/etcdtest"
	"github.com/volcano-paddle/volcano-paddle/harness/paddleprobe"
	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
)

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
	url := etcdtest.Start(t)
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
			// Sampled every 20 ms until end: an invariant over time, not
			// a condition to wait for.
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for now := time.Now(); now.Before(end); now = <-tick.C {
				if !stopped && !now.Before(stopAt) {
					stops["cccccc"]()
					<-done["cccccc"]
					stopped = true
				}
				if b := beats(); b != "aaaaaa,bbbbbb" {
					t.Fatalf("heartbeats %s %s after the notice; want the survivors aaaaaa,bbbbbb only: with 3 = MAX the survivors form a world with the stopping launcher and hang in sync_peers", b, time.Since(noticed).Round(time.Millisecond))
				}
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
	url := etcdtest.Start(t)
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
