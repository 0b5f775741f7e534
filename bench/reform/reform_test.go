package reform

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/harness/etcdtest"
	"github.com/volcano-paddle/volcano-paddle/harness/paddleprobe"
	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
	"github.com/volcano-paddle/volcano-paddle/pkg/controllers/paddleelastic"
)

var (
	paddlePython = flag.String("paddle-python", "", "a Python interpreter with Paddle (and the etcd3 module) installed: also measure Paddle's own launcher")
	paddlePath   = flag.String("paddle-path", "", "prepended to PYTHONPATH for -paddle-python (a Paddle tree that is not installed)")
)

// The elastic timeout of every run: the plugin's default (--elastic-timeout).
const elasticTimeout = 10 * time.Second

// BenchmarkReform measures how long an elastic world of 3 launchers (MIN
// 2, MAX 3, PADDLE_ELASTIC_TIMEOUT 10 s) takes to form its next world after
// each event, on a real etcd, with paddle-elastic-controller's help
// ("ours": the loss notice when a pod is deleted, the heartbeat keeper)
// and without ("alone": Paddle's own floor):
//
//   - pod-deleted: a launcher's pod is deleted (its launcher stopped, its
//     lease left to run out, as Paddle's stop leaves it); ours: the notice
//     at the deletion, the nudge once the launcher has stopped;
//   - replacement: a new launcher joins, which wipes every heartbeat as it
//     starts; the world of 3 = MAX forms as soon as all three beat again;
//   - node-lost: a launcher dies with no pod deletion (its node lost):
//     only its lease's expiry tells the others, for ours as for alone;
//     node-lost-after-lease counts from that expiry (its heartbeat key's
//     deletion), where the path is Paddle's own whatever the lease's phase
//     at the kill: the non-regression check.
//
// The launchers are paddle-probe's double (in process); with
// -paddle-python, Paddle's own launcher too (processes). A world counts as
// formed when each of its launchers has put "running" on the job's status
// key, which a launcher does once sync_peers has returned
// (CollectiveElasticController.run: set_status). Run:
//
//	go test ./bench/reform -run '^$' -bench . -benchtime 1x -count 5
func BenchmarkReform(b *testing.B) {
	kinds := []launcherKind{doubleKind{}}
	if *paddlePython != "" {
		kinds = append(kinds, paddleKind{python: *paddlePython, path: *paddlePath, dir: b.TempDir()})
	}
	etcd := etcdtest.StartServer(b)
	for _, k := range kinds {
		for _, ours := range []bool{true, false} {
			variant := "alone"
			if ours {
				variant = "ours"
			}
			b.Run(k.name()+"/"+variant, func(b *testing.B) {
				var sums [4]time.Duration
				for i := 0; i < b.N; i++ {
					d := reformRun(b, etcd.URL, k, ours, fmt.Sprintf("bench-%s-%s-%d-%d", k.name(), variant, i, time.Now().UnixNano()))
					for j := range sums {
						sums[j] += d[j]
					}
				}
				for j, name := range []string{"pod-deleted", "replacement", "node-lost", "node-lost-after-lease"} {
					b.ReportMetric((sums[j] / time.Duration(b.N)).Seconds(), "s/"+name)
				}
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// reformRun runs the three events once on a fresh job and returns how
// long each took to its next world.
func reformRun(b *testing.B, etcdURL string, k launcherKind, ours bool, jobID string) [4]time.Duration {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &paddleetcd.Gateway{URL: etcdURL}
	var mu sync.Mutex
	live := map[string]launcher{}
	start := func(ip string) {
		l, err := k.start(ctx, etcdURL, jobID, ip)
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		live[ip] = l
		mu.Unlock()
	}
	end := func(ip string, kill bool) {
		mu.Lock()
		l := live[ip]
		delete(live, ip)
		mu.Unlock()
		if kill {
			l.kill()
		} else {
			l.stop()
		}
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, l := range live {
			l.kill()
		}
	}()
	var keeper *paddleelastic.BeatKeeper
	if ours {
		keeper = &paddleelastic.BeatKeeper{G: g, JobID: jobID, Alive: func(ip string) string {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := live[ip]; ok {
				return "pod-at-" + ip
			}
			return ""
		}}
		go keeper.Run(ctx)
	}
	worlds := watchWorlds(ctx, b, g, jobID)
	t := time.Now()
	for _, ip := range []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"} {
		start(ip)
	}
	worlds.wait(b, t, 3)
	var out [4]time.Duration

	// Pod deleted: the notice fires at the deletion, the launcher stops
	// on its SIGTERM, the nudge follows once the pod is gone.
	t0 := time.Now()
	if ours {
		if _, err := paddleelastic.NoticeLoss(ctx, g, jobID, "127.0.0.3", keeper); err != nil {
			b.Fatal(err)
		}
	}
	end("127.0.0.3", false)
	if ours {
		if _, err := paddleelastic.NudgeAfterLoss(ctx, g, jobID, "127.0.0.3"); err != nil {
			b.Fatal(err)
		}
	}
	out[0] = worlds.wait(b, t0, 2).Sub(t0)

	// Replacement: a new pod, a new IP.
	t1 := time.Now()
	start("127.0.0.4")
	out[1] = worlds.wait(b, t1, 3).Sub(t1)

	// Node lost: the launcher dies, its pod is not deleted.
	names, err := paddleelastic.LaunchersAt(ctx, g, jobID, "127.0.0.4")
	if err != nil || len(names) == 0 {
		b.Fatalf("no launcher recorded at 127.0.0.4: %v", err)
	}
	expired := watchDeletion(ctx, b, g, paddleetcd.HeartbeatKey(jobID, names[len(names)-1]))
	t2 := time.Now()
	end("127.0.0.4", true)
	formed := worlds.wait(b, t2, 2)
	out[2] = formed.Sub(t2)
	select {
	case at := <-expired:
		out[3] = formed.Sub(at)
	case <-time.After(time.Minute):
		b.Fatal("the lost launcher's heartbeat never expired")
	}
	return out
}

// watchDeletion reports when key is deleted (its lease expired).
func watchDeletion(ctx context.Context, b *testing.B, g *paddleetcd.Gateway, key string) <-chan time.Time {
	out := make(chan time.Time, 1)
	created := make(chan struct{})
	go func() {
		_ = g.Watch(ctx, key, false, func() { close(created) }, func(events []paddleetcd.Event) {
			for _, e := range events {
				if e.Key == key && e.Delete {
					select {
					case out <- time.Now():
					default:
					}
				}
			}
		})
	}()
	select {
	case <-created:
	case <-time.After(10 * time.Second):
		b.Fatal("the heartbeat watch did not start")
	}
	return out
}

// worldWatch records when launchers put "running" on the job's status key.
type worldWatch struct {
	mu   sync.Mutex
	puts []time.Time
	// more is signalled at every put recorded.
	more chan struct{}
}

// watchWorlds starts recording the job's "running" puts until ctx ends.
func watchWorlds(ctx context.Context, b *testing.B, g *paddleetcd.Gateway, jobID string) *worldWatch {
	w := &worldWatch{more: make(chan struct{}, 1)}
	created := make(chan struct{})
	go func() {
		_ = g.Watch(ctx, paddleetcd.StatusKey(jobID), false, func() { close(created) }, func(events []paddleetcd.Event) {
			now := time.Now()
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, e := range events {
				if e.Key == paddleetcd.StatusKey(jobID) && !e.Delete && e.Value == "running" {
					w.puts = append(w.puts, now)
					select {
					case w.more <- struct{}{}:
					default:
					}
				}
			}
		})
	}()
	select {
	case <-created:
	case <-time.After(10 * time.Second):
		b.Fatal("the status watch did not start")
	}
	return w
}

// wait returns when the n-th "running" put after t was seen: a world of n
// launchers formed.
func (w *worldWatch) wait(b *testing.B, t time.Time, n int) time.Time {
	deadline := time.After(2 * time.Minute)
	for {
		if at, ok := w.nth(t, n); ok {
			return at
		}
		select {
		case <-w.more:
		case <-deadline:
			b.Fatalf("no world of %d within 2 minutes", n)
		}
	}
}

// nth is the time of the n-th put recorded after t, if there is one.
func (w *worldWatch) nth(t time.Time, n int) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := 0
	for _, p := range w.puts {
		if p.After(t) {
			if seen++; seen == n {
				return p, true
			}
		}
	}
	return time.Time{}, false
}

// launcherKind starts elastic launchers.
type launcherKind interface {
	name() string
	start(ctx context.Context, etcdURL, jobID, ip string) (launcher, error)
}

// launcher is one running launcher: stop is its pod's deletion (SIGTERM),
// kill its node's loss.
type launcher interface {
	stop()
	kill()
}

// env is what the job plugin gives an elastic trainer (pkg/paddlejob:
// elasticEnv), for a store at etcdURL.
func env(etcdURL, jobID, ip string) map[string]string {
	return map[string]string{
		"PADDLE_MASTER": "etcd://" + strings.TrimPrefix(etcdURL, "http://"), "PADDLE_NNODES": "2:3", "PADDLE_JOB_ID": jobID, "POD_IP": ip,
		"PADDLE_ELASTIC_LEVEL": "1", "PADDLE_ELASTIC_TIMEOUT": strconv.Itoa(int(elasticTimeout.Seconds())), "PADDLE_MAX_RESTART": "100",
		"PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python",
	}
}

// doubleKind runs paddle-probe's launcher in process; it wipes its job's
// keys when it starts, as Paddle's does.
type doubleKind struct{}

func (doubleKind) name() string { return "double" }

func (doubleKind) start(ctx context.Context, etcdURL, jobID, ip string) (launcher, error) {
	e := env(etcdURL, jobID, ip)
	e["PROBE_POD_NAME"] = "bench-" + ip
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = paddleprobe.Run(lctx, paddleprobe.Config{Env: func(k string) string { return e[k] }, Timeout: 30 * time.Second, WipeOnStart: true})
	}()
	return &double{cancel: cancel, done: done}, nil
}

type double struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// stop and kill end the double alike: its heartbeat stops, its lease is
// left to expire (Paddle's SIGTERM handler revokes nothing either).
func (d *double) stop() { d.cancel(); <-d.done }
func (d *double) kill() { d.cancel(); <-d.done }

// paddleKind runs Paddle's own launcher, python -m
// paddle.distributed.launch, on a training script that sleeps.
type paddleKind struct {
	python, path, dir string
}

func (paddleKind) name() string { return "paddle" }

const trainScript = "import time\nwhile True:\n    time.sleep(1)\n"

func (k paddleKind) start(ctx context.Context, etcdURL, jobID, ip string) (launcher, error) {
	dir := filepath.Join(k.dir, jobID, ip)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "train.py"), []byte(trainScript), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(k.python, "-m", "paddle.distributed.launch", "train.py")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PYTHONPATH="+strings.TrimSuffix(k.path+":"+os.Getenv("PYTHONPATH"), ":"))
	for n, v := range env(etcdURL, jobID, ip) {
		cmd.Env = append(cmd.Env, n+"="+v)
	}
	log, err := os.Create(filepath.Join(dir, "launcher.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: the launcher starts its processes in
	// sessions of their own (launch/utils/process_context.py), found by
	// their working folder when it dies without stopping them.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(done) }()
	return &paddleLauncher{cmd: cmd, dir: dir, done: done}, nil
}

type paddleLauncher struct {
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

// stop is the kubelet's SIGTERM; the launcher stops its processes.
func (p *paddleLauncher) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
	}
	p.killOrphans()
}

// kill ends the launcher and what it started at once.
func (p *paddleLauncher) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	p.killOrphans()
}

// killOrphans kills the processes that still run in the launcher's
// folder (its training processes, in sessions of their own).
func (p *paddleLauncher) killOrphans() {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range procs {
		cwd, err := os.Readlink(filepath.Join(d, "cwd"))
		if err != nil || !strings.HasPrefix(cwd, p.dir) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
