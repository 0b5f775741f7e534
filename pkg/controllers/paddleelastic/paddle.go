package paddleelastic

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strings"
)

// The keys Paddle's elastic launcher keeps in its job's etcd
// (python/paddle/distributed/launch/ of Paddle v2.6.2 and v3.0.0-beta2):
//
//   - /paddle/<job_id>/heartbeat/<pod name>: one per live launcher, bound
//     to a 10 s lease it refreshes every 5 s; value the pod name
//     (controllers/master.py: ETCDMaster.register_heartbeat). Any change
//     under the prefix restarts every launcher's rendezvous (its
//     _beat_watch callback).
//   - /<job_id>/info/<pod name>/<rank>: the rendezvous record of each
//     launcher of the current world, JSON with "name" (the pod name) and
//     "candidate" (POD_IP:port) (controllers/collective.py:
//     _build_pod_with_master, through ETCDMaster.sync_peers).
//   - /paddle/<job_id>: the job's status; "completed" once training ended,
//     set before the launchers exit 0 (controllers/controller.py: watch,
//     ETCDMaster.set_status).
//
// The pod name is Paddle's own random name (job/pod.py), not the
// Kubernetes pod's: the record's candidate ties it to the pod's IP.

// StatusCompleted is Paddle's job status once training ended
// (launch/job/status.py: Status.COMPLETED).
const StatusCompleted = "completed"

// HeartbeatKey is the heartbeat key of the launcher named name.
func HeartbeatKey(jobID, name string) string { return "/paddle/" + jobID + "/heartbeat/" + name }

// InfoPrefix is where the rendezvous records of a job's launchers are.
func InfoPrefix(jobID string) string { return "/" + jobID + "/info/" }

func statusKey(jobID string) string { return "/paddle/" + jobID }

// rendezvousRecord is the part of a launcher's rendezvous record we read.
type rendezvousRecord struct {
	Name      string `json:"name"`
	Candidate string `json:"candidate"`
}

// LaunchersAt returns the Paddle pod names of the launchers whose
// rendezvous record puts them at ip.
func LaunchersAt(ctx context.Context, g *Gateway, jobID, ip string) ([]string, error) {
	kvs, err := g.Prefix(ctx, InfoPrefix(jobID))
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
func NoticeLoss(ctx context.Context, g *Gateway, jobID, ip string, keeper *BeatKeeper) ([]string, error) {
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
		k, err := g.Delete(ctx, HeartbeatKey(jobID, n))
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
func Completed(ctx context.Context, g *Gateway, jobID string) (bool, error) {
	v, ok, err := g.Get(ctx, statusKey(jobID))
	if err != nil {
		return false, err
	}
	return ok && v == StatusCompleted, nil
}
