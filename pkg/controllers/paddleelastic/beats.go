package paddleelastic

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
)

// BeatKeeper puts back the heartbeat keys of live launchers when a joining
// launcher wipes them.
//
// Every starting launcher deletes its job's whole prefix /paddle/<job_id>
// (controllers/master.py: ETCDMaster.register_heartbeat), the running
// launchers' heartbeats included, and they put theirs back only at their
// next beat, up to ttl/2 = 5 s later. Until then the joiner counts fewer
// than MAX peers, so a replacement that brings the job back to MAX waits
// 0-5 s for nothing (measured 2.5-7.3 s from its start to the full world).
// A heartbeat key is bound to its launcher's lease, which the launcher
// keeps refreshing: putting the key back with the same lease is what the
// launcher's own next beat does, only sooner.
//
// It puts back only the key of a launcher whose rendezvous record places
// it on a pod whose launcher runs (Alive), and never one the loss notice
// removed; a key whose lease expired cannot be put back (etcd refuses the
// lease). A launcher that exited while its pod runs on (its container
// restarted in place, restartPolicy OnFailure) keeps its lease for up to
// 10 s, and the first thing its successor does is wipe the job's
// heartbeats: each launcher name is bound to the incarnation of its pod's
// launcher (pod UID and restart count) the keeper first saw it on, and a
// name whose pod has restarted its launcher since is never put back.
type BeatKeeper struct {
	G     *paddleetcd.Gateway
	JobID string
	// Alive is the incarnation of the launcher running at this IP (a pod
	// of the job, running, not being deleted, its launcher container
	// running), "" when none runs there.
	Alive func(ip string) string
	// Failed, if not nil, is called when a launcher says that a process
	// of its pod failed and it restarts the world: it puts "failed" on
	// the job's status key (controllers/controller.py: Controller.watch,
	// ctx.status.FAILED, then ETCDMaster.set_status and restart_peer).
	// Paddle's own relaunches are otherwise invisible: the pod runs on.
	Failed func(at time.Time)

	mu       sync.Mutex
	noticed  map[string]bool
	bound    map[string]string
	watching bool
}

// Watching reports whether the keeper's watch is established.
func (k *BeatKeeper) Watching() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.watching
}

func (k *BeatKeeper) setWatching(w bool) {
	k.mu.Lock()
	k.watching = w
	k.mu.Unlock()
}

// Noticed records Paddle pod names whose heartbeat the loss notice
// removes: those stay away (their revoked lease would refuse the put
// anyway).
func (k *BeatKeeper) Noticed(names []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.noticed == nil || len(k.noticed) > 10000 {
		k.noticed = map[string]bool{}
	}
	for _, n := range names {
		k.noticed[n] = true
	}
}

func (k *BeatKeeper) wasNoticed(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.noticed[name]
}

// maxBound bounds the launcher names the keeper remembers (a job's
// launchers come and go; an old name's pod has restarted since anyway).
const maxBound = 10000

// sameIncarnation binds name to inc the first time it is seen and says
// whether inc is still the incarnation it was bound to.
func (k *BeatKeeper) sameIncarnation(name, inc string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.bound == nil || len(k.bound) > maxBound {
		k.bound = map[string]string{}
	}
	b, ok := k.bound[name]
	if !ok {
		k.bound[name] = inc
		return true
	}
	return b == inc
}

// Run watches the job's heartbeats until ctx ends, re-watching after
// errors.
func (k *BeatKeeper) Run(ctx context.Context) {
	for ctx.Err() == nil {
		err := k.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		klog.V(2).InfoS("Watching Paddle heartbeats", "etcd", k.G.URL, "job", k.JobID, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// statusFailed is the value of the job's status key that a launcher
// whose process failed puts (launch/context/status.py: Status.FAILED).
const statusFailed = "failed"

// watch follows the job's keys under /paddle/<job_id>, one stream for the
// heartbeats and the status key.
func (k *BeatKeeper) watch(ctx context.Context) error {
	defer k.setWatching(false)
	status, beats := paddleetcd.StatusKey(k.JobID), paddleetcd.HeartbeatPrefix(k.JobID)
	return k.G.Watch(ctx, status, true, func() { k.setWatching(true) }, func(events []paddleetcd.Event) {
		var wiped []paddleetcd.KV
		for _, e := range events {
			switch {
			case e.Key == status:
				if !e.Delete && e.Value == statusFailed && k.Failed != nil {
					k.Failed(time.Now())
				}
			case !strings.HasPrefix(e.Key, beats):
			case e.Delete && e.Prev != nil && paddleetcd.HasLease(e.Prev.Lease):
				wiped = append(wiped, *e.Prev)
			}
		}
		if len(wiped) > 0 {
			k.restore(ctx, wiped)
		}
	})
}

// restore puts back the wiped keys of live launchers.
func (k *BeatKeeper) restore(ctx context.Context, wiped []paddleetcd.KV) {
	records, err := k.G.Prefix(ctx, paddleetcd.InfoPrefix(k.JobID))
	if err != nil {
		klog.V(2).InfoS("Reading Paddle rendezvous records", "job", k.JobID, "err", err)
		return
	}
	ipOf := map[string]string{}
	for _, kv := range records {
		var r rendezvousRecord
		if json.Unmarshal([]byte(kv.Value), &r) != nil {
			continue
		}
		if host, _, err := net.SplitHostPort(r.Candidate); err == nil {
			ipOf[r.Name] = host
		}
	}
	// Bind every recorded launcher to what runs at its IP now, so that a
	// later restart of that pod's launcher is told apart.
	for name, ip := range ipOf {
		if inc := k.Alive(ip); inc != "" {
			k.sameIncarnation(name, inc)
		}
	}
	var restored []string
	for _, kv := range wiped {
		key, name := kv.Key, kv.Value
		if key != paddleetcd.HeartbeatKey(k.JobID, name) || k.wasNoticed(name) {
			continue
		}
		ip, ok := ipOf[name]
		if !ok {
			continue
		}
		if inc := k.Alive(ip); inc == "" || !k.sameIncarnation(name, inc) {
			continue
		}
		// Refused when the lease has expired: the launcher is gone.
		if _, err := k.G.Put(ctx, key, name, kv.Lease); err == nil {
			restored = append(restored, name)
		}
	}
	if len(restored) > 0 {
		klog.V(2).InfoS("Put back the heartbeats of live Paddle launchers after a joiner wiped them", "job", k.JobID, "paddlePods", restored)
	}
}
