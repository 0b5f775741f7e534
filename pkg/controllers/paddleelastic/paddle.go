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

// NoticeLoss deletes the heartbeat keys of the launchers that ran at ip,
// which restarts the survivors' rendezvous at once instead of after the
// lost launcher's lease expires (a stopped launcher neither deletes its
// key nor revokes its lease: controllers/controller.py: stop,
// ETCDMaster.stop). It returns the Paddle pod names whose key it deleted.
// The job's BeatKeeper, if any, learns the names first, so that it does
// not put them back.
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
	var deleted []string
	for _, n := range names {
		k, err := g.Delete(ctx, paddleetcd.HeartbeatKey(jobID, n))
		if err != nil {
			return deleted, fmt.Errorf("deleting heartbeat of Paddle pod %s: %w", n, err)
		}
		if k > 0 {
			deleted = append(deleted, n)
		}
	}
	return deleted, nil
}

// Completed reports whether Paddle marked the job's training completed.
func Completed(ctx context.Context, g *paddleetcd.Gateway, jobID string) (bool, error) {
	v, ok, err := g.Get(ctx, paddleetcd.StatusKey(jobID))
	if err != nil {
		return false, err
	}
	return ok && v == StatusCompleted, nil
}
