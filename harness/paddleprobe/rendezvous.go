package paddleprobe

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// The elastic launcher's loop, as Paddle's runs it (v2.6.2 and
// v3.0.0-beta2, launch/controllers/collective.py:
// CollectiveElasticController.run): wait for peers (ETCDMaster.
// wait_peer_ready), gather the world's records (ETCDMaster.sync_peers),
// start the processes (Controller.deploy_pod; the probe starts none) and
// watch (Controller.watch) until a heartbeat changes, then again. What it
// does on its store's faults is in the table of docs/job-plugin.md ("When
// the store fails"): a failed call or watch ends it with exit 1; fewer
// than MIN peers ends it with 241 once it has trained (0 before).

// World is one world a launcher formed: its size, the launcher's rank in
// it (ranks follow the sorted record keys, that is the launchers' names),
// and when sync_peers returned.
type World struct {
	Size int       `json:"size"`
	Rank int       `json:"rank"`
	At   time.Time `json:"at"`
}

// launcher is one elastic launcher after its registration.
type launcher struct {
	g      *paddleetcd.Gateway
	jobID  string
	name   string
	record string
	bounds WorldBounds
	// worlds, if not nil, is told of each world formed.
	worlds func(World)
}

// syncPoll is sync_peers' and wait_peer_ready's pause between reads.
const syncPoll = 500 * time.Millisecond

// run is the launcher's loop until ctx ends (nil) or the launcher does.
func (l *launcher) run(ctx context.Context) error {
	changed := make(chan struct{}, 1)
	lost := make(chan error, 1)
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go l.watch(watchCtx, changed, lost)
	trained := false
	for {
		if l.bounds.Min == 0 {
			// No world to form: watch only (PADDLE_NNODES unset).
			select {
			case <-ctx.Done():
				return nil
			case err := <-lost:
				return err
			}
		}
		n, err := l.waitPeerReady(ctx, changed)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if n < l.bounds.Min || n > l.bounds.Max {
			code := 0
			if trained {
				// A launcher that never trained exits 0 (job/pod.py).
				code = paddleapi.ExitStopped
			}
			return &ExitError{Code: code, Err: fmt.Errorf("peer not ready: %d launchers alive, the world needs %d:%d", n, l.bounds.Min, l.bounds.Max)}
		}
		w, err := l.syncPeers(ctx, n)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if l.worlds != nil {
			l.worlds(w)
		}
		trained = true
		// set_status(RUNNING) on the job's key, then deploy_pod, whose
		// status.run() forgets a restart seen meanwhile.
		if _, err := l.g.Put(ctx, paddleetcd.StatusKey(l.jobID), "running", ""); err != nil {
			return storeError(ctx, "set_status", err)
		}
		select {
		case <-changed:
		default:
		}
		// Controller.watch: the next change restarts the world, after
		// get_status, which raises when the store cannot answer.
		select {
		case <-ctx.Done():
			return nil
		case err := <-lost:
			return err
		case <-changed:
		}
		if _, _, err := l.g.Get(ctx, paddleetcd.StatusKey(l.jobID)); err != nil {
			return storeError(ctx, "get_status after a heartbeat change", err)
		}
	}
}

// storeError is a failed call to the store that ends the launcher.
func storeError(ctx context.Context, call string, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("the job's store could not answer %s: %w", call, err)
}

// watch plays _beat_watch: any event under the heartbeat prefix is a
// change; a failed watch is one too, and when get_status then fails the
// launcher ends (lost). A store that answers is watched again.
func (l *launcher) watch(ctx context.Context, changed chan<- struct{}, lost chan<- error) {
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	for ctx.Err() == nil {
		err := l.g.Watch(ctx, paddleetcd.HeartbeatPrefix(l.jobID), false, nil, func([]paddleetcd.Event) { signal() })
		if ctx.Err() != nil {
			return
		}
		if _, _, gerr := l.g.Get(ctx, paddleetcd.StatusKey(l.jobID)); gerr != nil && ctx.Err() == nil {
			lost <- fmt.Errorf("the job's store is interrupted (watch: %v; get_status: %w)", err, gerr)
			return
		}
		signal()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// waitPeerReady is ETCDMaster.wait_peer_ready: the count of live
// heartbeats, at once when it is MAX, else once it has not changed for
// the timeout.
func (l *launcher) waitPeerReady(ctx context.Context, changed <-chan struct{}) (int, error) {
	count := func() (int, error) {
		kvs, err := l.g.Prefix(ctx, paddleetcd.HeartbeatPrefix(l.jobID))
		return len(kvs), err
	}
	prev, err := count()
	if err != nil {
		return 0, storeError(ctx, "fetch_peer_alive", err)
	}
	end := time.Now().Add(l.bounds.Timeout)
	for time.Now().Before(end) {
		n, err := count()
		if err != nil {
			return 0, storeError(ctx, "fetch_peer_alive", err)
		}
		if n == l.bounds.Max {
			return n, nil
		}
		if n != prev {
			end, prev = time.Now().Add(l.bounds.Timeout), n
		}
		select {
		case <-ctx.Done():
			return 0, nil
		case <-changed:
		case <-time.After(syncPoll):
		}
	}
	n, err := count()
	if err != nil {
		return 0, storeError(ctx, "fetch_peer_alive", err)
	}
	return n, nil
}

// syncPeers is ETCDMaster.sync_peers for a world of size: it deletes the
// job's records, then puts its own and reads them all every 0.5 s until
// there are exactly size. It waits for as long as that takes: a world
// counted with a launcher that then stopped waits for good, as Paddle's
// does (its loop ends only when the launcher is done).
func (l *launcher) syncPeers(ctx context.Context, size int) (World, error) {
	if size < 2 {
		return World{Size: 1, At: time.Now()}, nil
	}
	prefix := paddleetcd.InfoPrefix(l.jobID)
	key := prefix + l.name + "/-1"
	if err := l.g.DeletePrefix(ctx, strings.TrimSuffix(prefix, "/")); err != nil {
		return World{}, storeError(ctx, "sync_peers", err)
	}
	for {
		if _, err := l.g.Put(ctx, key, l.record, ""); err != nil {
			return World{}, storeError(ctx, "sync_peers", err)
		}
		kvs, err := l.g.Prefix(ctx, strings.TrimSuffix(prefix, "/"))
		if err != nil {
			return World{}, storeError(ctx, "sync_peers", err)
		}
		if len(kvs) == size {
			keys := make([]string, 0, len(kvs))
			for _, kv := range kvs {
				keys = append(keys, kv.Key)
			}
			sort.Strings(keys)
			return World{Size: size, Rank: sort.SearchStrings(keys, key), At: time.Now()}, nil
		}
		select {
		case <-ctx.Done():
			return World{}, nil
		case <-time.After(syncPoll):
		}
	}
}

// WorldBounds are a launcher's world limits: PADDLE_NNODES=MIN:MAX and
// PADDLE_ELASTIC_TIMEOUT. Zero Min: no rendezvous is played.
type WorldBounds struct {
	Min, Max int
	Timeout  time.Duration
}

// worldBoundsOf reads PADDLE_NNODES (MIN:MAX, or N) and
// PADDLE_ELASTIC_TIMEOUT (seconds; Paddle's default 30).
func worldBoundsOf(nnodes, timeout string) (WorldBounds, error) {
	var b WorldBounds
	if nnodes == "" {
		return b, nil
	}
	lo, hi, found := strings.Cut(nnodes, ":")
	if !found {
		hi = lo
	}
	var err1, err2 error
	b.Min, err1 = strconv.Atoi(lo)
	b.Max, err2 = strconv.Atoi(hi)
	if err1 != nil || err2 != nil || b.Min < 1 || b.Max < b.Min {
		return b, fmt.Errorf("PADDLE_NNODES=%q is not MIN:MAX", nnodes)
	}
	b.Timeout = 30 * time.Second
	if timeout != "" {
		n, err := strconv.Atoi(timeout)
		if err != nil {
			return b, fmt.Errorf("PADDLE_ELASTIC_TIMEOUT=%q: %w", timeout, err)
		}
		b.Timeout = time.Duration(n) * time.Second
	}
	return b, nil
}

// ExitError is an end of the launcher with its own exit code.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }
