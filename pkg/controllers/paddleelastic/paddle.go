package paddleelastic

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"

	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
)

// What Paddle's launchers keep in their job's etcd: internal/paddleetcd.

// StatusCompleted is Paddle's job status once training ended
// (launch/job/status.py: Status.COMPLETED).
const StatusCompleted = "completed"

// rendezvousRecord is the part of a launcher's rendezvous record we read.
type rendezvousRecord struct {
	Name      string `json:"name"`
	Candidate string `json:"candidate"`
}

// LaunchersAt returns the Paddle pod names of the launchers whose
// rendezvous record puts them at ip.
func LaunchersAt(ctx context.Context, g *paddleetcd.Gateway, jobID, ip string) ([]string, error) {
	kvs, err := g.Prefix(ctx, paddleetcd.InfoPrefix(jobID))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	for _, kv := range kvs {
		var r rendezvousRecord
		if json.Unmarshal([]byte(kv.Value), &r) != nil || r.Name == "" || strings.ContainsRune(r.Name, '/') {
			continue
		}
		host, _, err := net.SplitHostPort(r.Candidate)
		if err != nil || host != ip || seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		names = append(names, r.Name)
	}
	sort.Strings(names)
	return names, nil
}

// NoticeLoss removes the heartbeat keys of the launchers that ran at ip,
// which restarts the survivors' rendezvous at once instead of after the
// lost launcher's lease expires (a stopped launcher neither deletes its
// key nor revokes its lease: controllers/controller.py: stop,
// ETCDMaster.stop). It returns the Paddle pod names whose key went.
// The job's BeatKeeper, if any, learns the names first, so that it does
// not put them back.
//
// It revokes the key's lease rather than deleting the key. Paddle's
// heartbeat thread (controllers/master.py: ETCDMaster.register_heartbeat,
// its _heartbeat loop; same code in v2.6.2 and v3.0.0-beta2) refreshes the
// one lease it granted at registration every ttl/2 and puts the key back
// with that same lease whenever it is missing, catching and logging any
// exception and going on; it never grants another lease. A launcher that
// still runs when its key is deleted (the notice came before its SIGTERM,
// or its SIGTERM waits for a preStop hook) therefore put its key back
// within 5 s, and the survivors, counting MAX launchers, formed a world
// with one that was about to stop and waited for it forever in sync_peers
// (issue 37). Once the lease is revoked, etcd refuses that put ("requested
// lease not found"), so the key cannot come back, whatever the order of
// the notice, the SIGTERM and the launcher's next beat. A key without a
// lease (written by hand, or by tests) is deleted.
func NoticeLoss(ctx context.Context, g *paddleetcd.Gateway, jobID, ip string, keeper *BeatKeeper) ([]string, error) {
	if ip == "" {
		return nil, nil
	}
	names, err := LaunchersAt(ctx, g, jobID, ip)
	if err != nil {
		return nil, err
	}
	if keeper != nil {
		keeper.Noticed(names)
	}
	var gone []string
	for _, n := range names {
		ok, err := removeBeat(ctx, g, paddleetcd.HeartbeatKey(jobID, n), n)
		if err != nil {
			return gone, fmt.Errorf("removing the heartbeat of Paddle pod %s: %w", n, err)
		}
		if ok {
			gone = append(gone, n)
		}
	}
	return gone, nil
}

// removeBeat revokes the lease of the heartbeat key of the launcher
// named name, or deletes the key if it has none, and reports whether a
// key went.
func removeBeat(ctx context.Context, g *paddleetcd.Gateway, key, name string) (bool, error) {
	kv, ok, err := g.GetKV(ctx, key)
	if err != nil || !ok {
		return false, err
	}
	if paddleetcd.HasLease(kv.Lease) && kv.Value == name {
		revoked, err := g.Revoke(ctx, kv.Lease)
		if err != nil {
			return false, err
		}
		if revoked {
			return true, nil
		}
		// The lease expired between the read and the revoke: the key went
		// with it, unless a launcher of that name put it back under a new
		// lease, which is not Paddle's (it keeps one lease); delete below.
	}
	n, err := g.Delete(ctx, key)
	return n > 0, err
}

// NudgeAfterLoss restarts the survivors' rendezvous once more after the
// launcher that ran at ip has stopped (its pod is deleted), if its
// rendezvous record is still there, and returns the heartbeat key it put
// again ("" if none).
//
// The notice's restart can be lost: a launcher's _beat_watch only sets its
// status to restarting (controllers/master.py: register_heartbeat), which
// nothing reads during sync_peers, and deploy_pod then sets it to running
// (controllers/controller.py: ctx.status.run()). A notice that lands while
// the survivors sync a world that still counts the lost launcher (it had
// put its record before its SIGTERM) is therefore forgotten, and its key,
// revoked, makes no later event. Every launcher that enters sync_peers
// first deletes the whole record prefix (ETCDMaster.sync_peers), so the
// lost launcher's record outliving it means that no rendezvous without it
// has completed since: the survivors train in a world with it, or are
// still waiting for theirs, where one more restart costs nothing. The
// restart is a put of a live heartbeat key with its own value and lease,
// which changes no count (wait_peer_ready, fetch_peer_alive) but is an
// event under the heartbeat prefix for every launcher's watch.
func NudgeAfterLoss(ctx context.Context, g *paddleetcd.Gateway, jobID, ip string) (string, error) {
	if ip == "" {
		return "", nil
	}
	names, err := LaunchersAt(ctx, g, jobID, ip)
	if err != nil || len(names) == 0 {
		return "", err
	}
	kvs, err := g.Prefix(ctx, paddleetcd.HeartbeatPrefix(jobID))
	if err != nil {
		return "", err
	}
	lost := map[string]bool{}
	for _, n := range names {
		lost[n] = true
	}
	for _, kv := range kvs {
		if lost[kv.Value] || !paddleetcd.HasLease(kv.Lease) {
			continue
		}
		if _, err := g.Put(ctx, kv.Key, kv.Value, kv.Lease); err != nil {
			if paddleetcd.IsLeaseNotFound(err) {
				continue // expired meanwhile: its deletion was the event
			}
			return "", err
		}
		return kv.Key, nil
	}
	return "", nil
}

// Completed reports whether Paddle marked the job's training completed.
func Completed(ctx context.Context, g *paddleetcd.Gateway, jobID string) (bool, error) {
	v, ok, err := g.Get(ctx, paddleetcd.StatusKey(jobID))
	if err != nil {
		return false, err
	}
	return ok && v == StatusCompleted, nil
}
