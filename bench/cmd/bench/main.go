// Volcano breaks scheduling ties with the global math/rand; the trace
// replay seeds it, which Go 1.24 ignores unless this is set.
//go:debug randseednop=0

// Command bench runs the benchmarks behind `make bench` and writes
// docs/benchmarks.md with the figures, the commands, the machine and SVG
// plots. Every figure compares Volcano's stock scheduler configuration
// (the Helm chart's default tiers) with ours (deploy/paddle), measured in
// the same run. Benchmarks print; they never fail on a number.
//
//	go run ./bench/cmd/bench -mode quick   # under 15 minutes on 2 cores
//	go run ./bench/cmd/bench -mode full    # says how long before it starts
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/clusterbench"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
	"github.com/volcano-paddle/volcano-paddle/internal/localcluster"
	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
)

type plan struct {
	mode         string
	allocSizes   string
	allocTime    string
	allocCount   int
	clusterSizes []clusterbench.Size
	presets      []quality.Preset
	racks, nodes int
	seeds        int
	estimate     time.Duration
	skipAllocate bool
	skipCluster  bool
	skipQuality  bool
	skipReplay   bool
	skipJobSize  bool
	// replays: the trace windows replayed when given with -windows; else
	// the tuning windows (tuning) and the held-out ones of the first rule
	// (rule1, heldOutWindows) and of the second (rule2, saturatedWindows).
	// replayRuns: how many times each (the report averages them,
	// replay.Repeat).
	replays              []replay.Options
	tuning, rule1, rule2 bool
	replayRuns           int
	// paddleVariants adds paddle without smallGangsFirst, with the old
	// hold-back guard, at the former 30m threshold and without a guard
	// (full mode: what each part of paddle's ordering buys).
	paddleVariants bool
	// flex: elastic and checkpointable jobs (-elastic-share,
	// -checkpoint-share, -restart-cost); off by default.
	flex replay.Flex
	// sweep replays the tuning windows with one lever swept instead of the
	// comparison (-sweep sla or paddle).
	sweep string
	// jobSizes: trainers of the PS jobs the job size benchmark submits.
	jobSizes []int
}

func plans(mode string) (*plan, error) {
	switch mode {
	case "quick":
		// The second rule's held-out windows (saturated with large gangs)
		// once each, every stock configuration and paddle: a smaller check
		// than the full mode's 5 runs. The first rule's windows are bursts
		// of 1-GPU jobs where no configuration differs (-window-set rule1).
		return &plan{mode: mode, allocSizes: "100x400,100x2000,1000x400", allocTime: "2x", allocCount: 1,
			clusterSizes: []clusterbench.Size{{Nodes: 250, Pods: 1000}},
			presets:      []quality.Preset{quality.A100SXM, quality.PCIeNVLinkPairs}, racks: 4, nodes: 16, seeds: 3,
			rule2: true, replayRuns: 1,
			jobSizes: []int{100, 2000},
			estimate: 13 * time.Minute}, nil
	case "full":
		// The judged figures: tuning and held-out windows, 5 runs each,
		// every configuration; the other parts at the quick mode's sizes
		// (their large sizes are the scale mode).
		return &plan{mode: mode, allocSizes: "100x400,100x2000,1000x400", allocTime: "2x", allocCount: 1,
			clusterSizes: []clusterbench.Size{{Nodes: 250, Pods: 1000}},
			presets:      []quality.Preset{quality.A100SXM, quality.PCIeNVLinkPairs}, racks: 4, nodes: 16, seeds: 3,
			tuning: true, rule1: true, rule2: true, replayRuns: fullReplayRuns, paddleVariants: true,
			jobSizes: []int{100, 2000},
			estimate: 75 * time.Minute}, nil
	case "scale":
		// Allocate speed, placement quality, the local cluster and job
		// size at large sizes; no replay.
		return &plan{mode: mode, allocSizes: "100x400,100x2000,1000x400,1000x2000,5000x400,5000x2000", allocTime: "1x", allocCount: 2,
			clusterSizes: []clusterbench.Size{{Nodes: 250, Pods: 2000}, {Nodes: 1000, Pods: 5000}, {Nodes: 5000, Pods: 10000}},
			presets:      quality.Presets, racks: 8, nodes: 16, seeds: 5, skipReplay: true,
			jobSizes: []int{100, 2000, 10000},
			estimate: 100 * time.Minute}, nil
	}
	return nil, fmt.Errorf("mode %q: use quick, full or scale", mode)
}

func main() {
	mode := flag.String("mode", "quick", "quick (under 15 minutes on 2 cores: the second rule's held-out windows once), full (under 90 minutes: tuning and held-out windows 5 times) or scale (the large sizes of the other parts, no replay)")
	out := flag.String("out", "", "report file (default docs/benchmarks.md)")
	skip := flag.String("skip", "", "comma-separated parts to skip: replay, allocate, cluster, quality, jobsize")
	windows := flag.String("windows", "", "trace windows to replay instead of the mode's, comma-separated PRESET:START+JOBS (e.g. 8xA100-NVSwitch:40000+300; presets: "+presetNames()+")")
	runs := flag.Int("replay-runs", 0, fmt.Sprintf("replays of each trace window, averaged (default %d)", defaultReplayRuns))
	sweep := flag.String("sweep", "", "replay only the tuning windows with one lever swept: sla (the sla plugin's waiting time 30m .. 8h, on the Helm tiers and on binpack + task-topology; write with -out docs/bench-sla-sweep.md) or paddle (paddle's starvation threshold and ordering; -out docs/bench-paddle-sweep.md)")
	windowSet := flag.String("window-set", "", "replay only these windows: tuning, held-out (both rules), rule1 (the first held-out rule's) or rule2 (the second's, saturated with large gangs)")
	variants := flag.String("paddle-variants", "", "true or false: replay paddle's variants (fifo, hold-back, 30m, no guard) beside paddle (default: full mode only)")
	elastic := flag.Float64("elastic-share", 0, "share of collective jobs that are elastic (0.5x to 2x their recorded trainers, speed-up from the Pollux step times); 0: the trace as it is")
	checkpoint := flag.Float64("checkpoint-share", 0, "share of jobs that can be checkpointed (preemptable, restart from the checkpoint); 0: none")
	restart := flag.Duration("restart-cost", 5*time.Minute, "work a checkpointed job loses when it is preempted and restarts")
	render := flag.String("render", "", "render the report again from the figures a run saved (docs/bench-results.json), without measuring")
	flag.Parse()
	if *render != "" {
		r, err := loadReport(*render)
		if err != nil {
			fail(err)
		}
		if *out == "" {
			*out = filepath.Join(filepath.Dir(*render), "benchmarks.md")
		}
		if err := r.write(*out); err != nil {
			fail(err)
		}
		logf("rendered %s from %s", *out, *render)
		return
	}
	p, err := plans(*mode)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *windows != "" {
		if p.replays, err = parseWindows(*windows); err != nil {
			fmt.Fprintln(os.Stderr, "bench: -windows:", err)
			os.Exit(2)
		}
	}
	if *runs != 0 {
		if *runs < 1 || *runs > maxReplayRuns {
			fmt.Fprintf(os.Stderr, "bench: -replay-runs %d: want 1 to %d\n", *runs, maxReplayRuns)
			os.Exit(2)
		}
		p.replayRuns = *runs
	}
	switch *windowSet {
	case "":
	case "tuning":
		p.tuning, p.rule1, p.rule2 = true, false, false
	case "held-out":
		p.tuning, p.rule1, p.rule2 = false, true, true
	case "rule1":
		p.tuning, p.rule1, p.rule2 = false, true, false
	case "rule2":
		p.tuning, p.rule1, p.rule2 = false, false, true
	default:
		fmt.Fprintf(os.Stderr, "bench: -window-set %q: use tuning, held-out, rule1 or rule2\n", *windowSet)
		os.Exit(2)
	}
	if *variants != "" {
		v, err := strconv.ParseBool(*variants)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: -paddle-variants %q: use true or false\n", *variants)
			os.Exit(2)
		}
		p.paddleVariants = v
	}
	if *elastic < 0 || *elastic > 1 || *checkpoint < 0 || *checkpoint > 1 || *restart < 0 {
		fmt.Fprintln(os.Stderr, "bench: -elastic-share and -checkpoint-share are shares from 0 to 1, -restart-cost a duration of 0 or more")
		os.Exit(2)
	}
	p.flex = replay.Flex{ElasticShare: *elastic, CheckpointShare: *checkpoint, RestartCost: restart.Seconds()}
	switch *sweep {
	case "":
	case sweepSLA, sweepPaddle:
		p.sweep, p.tuning, p.rule1, p.rule2, p.skipReplay = *sweep, true, false, false, false
		p.skipAllocate, p.skipCluster, p.skipQuality, p.skipJobSize = true, true, true, true
	default:
		fmt.Fprintf(os.Stderr, "bench: -sweep %q: use %s or %s\n", *sweep, sweepSLA, sweepPaddle)
		os.Exit(2)
	}
	for _, s := range strings.Split(*skip, ",") {
		switch strings.TrimSpace(s) {
		case "jobsize":
			p.skipJobSize = true
		case "allocate":
			p.skipAllocate = true
		case "cluster":
			p.skipCluster = true
		case "quality":
			p.skipQuality = true
		case "replay":
			p.skipReplay = true
		}
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *out == "" {
		*out = filepath.Join(root, "docs", "benchmarks.md")
	}
	// Checked before measuring, so a bad -out does not cost a run.
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		fail(fmt.Errorf("-out %s: %w", *out, err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	logf("benchmarks, %s mode: allocate (%s), cluster %v, quality %d presets x %d seeds; expected duration about %s on 2 cores",
		p.mode, p.allocSizes, p.clusterSizes, len(p.presets), p.seeds, p.estimate)
	r := &report{Mode: p.mode, Volcano: volcanorelease.Version(), Started: time.Now(), Machine: machine(), root: root}
	if !p.skipReplay {
		if err := runReplay(p, r); err != nil {
			fail(err)
		}
	}
	if !p.skipAllocate {
		if err := runAllocate(ctx, root, p, r); err != nil {
			fail(err)
		}
	}
	if !p.skipQuality {
		if err := runQuality(p, r); err != nil {
			fail(err)
		}
	}
	if !p.skipCluster {
		if err := runCluster(ctx, p, r); err != nil {
			fail(err)
		}
	}
	r.Took = time.Since(r.Started)
	if err := r.save(resultsPath(*out)); err != nil {
		fail(err)
	}
	if len(r.Replay) > 0 {
		if err := r.saveJobs(jobsPath(*out)); err != nil {
			fail(err)
		}
	}
	if err := r.write(*out); err != nil {
		fail(err)
	}
	logf("wrote %s (%s)", *out, r.Took.Round(time.Second))
	if !p.skipJobSize {
		if err := runJobSize(ctx, *out, p.jobSizes); err != nil {
			fail(err)
		}
	}
}

func logf(f string, a ...interface{}) {
	fmt.Printf("%s "+f+"\n", append([]interface{}{time.Now().Format("15:04:05")}, a...)...)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

// allocResult is one line of `go test -bench` output.
type allocResult struct {
	Nodes, Pods int
	Config      string
	NsPerOp     float64
	Allocs      float64
	Bytes       float64
	Placed      float64
	Gpus        float64
	// N is how many runs were averaged.
	N int
}

var benchLine = regexp.MustCompile(`^BenchmarkAllocate/nodes=(\d+)/pods=(\d+)/(\S+?)-\d+\s+(\d+)\s+(\d+) ns/op\s+(\S+) gpus\s+(\S+) placed\s+(\d+) B/op\s+(\d+) allocs/op`)

func runAllocate(ctx context.Context, root string, p *plan, r *report) error {
	args := []string{"test", "./bench/allocate", "-run", "^$", "-bench", "Allocate", "-benchmem",
		"-benchtime", p.allocTime, "-count", strconv.Itoa(p.allocCount), "-timeout", "3h"}
	r.AllocCmd = fmt.Sprintf("BENCH_SIZES=%s go %s", p.allocSizes, strings.Join(args, " "))
	logf("allocate benchmarks: %s", r.AllocCmd)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BENCH_SIZES="+p.allocSizes)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		return err
	}
	sums := map[string]*allocResult{}
	var order []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		fmt.Println("  " + sc.Text())
		key := m[1] + "/" + m[2] + "/" + m[3]
		a := sums[key]
		if a == nil {
			n, _ := strconv.Atoi(m[1])
			pd, _ := strconv.Atoi(m[2])
			a = &allocResult{Nodes: n, Pods: pd, Config: m[3]}
			sums[key] = a
			order = append(order, key)
		}
		ns, _ := strconv.ParseFloat(m[5], 64)
		gpus, _ := strconv.ParseFloat(m[6], 64)
		placed, _ := strconv.ParseFloat(m[7], 64)
		by, _ := strconv.ParseFloat(m[8], 64)
		al, _ := strconv.ParseFloat(m[9], 64)
		a.NsPerOp += ns
		a.Gpus += gpus
		a.Placed += placed
		a.Bytes += by
		a.Allocs += al
		a.N++
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("allocate benchmarks: %w", err)
	}
	for _, k := range order {
		a := sums[k]
		f := float64(a.N)
		a.NsPerOp, a.Placed, a.Gpus, a.Bytes, a.Allocs = a.NsPerOp/f, a.Placed/f, a.Gpus/f, a.Bytes/f, a.Allocs/f
		r.Alloc = append(r.Alloc, *a)
	}
	return nil
}

func configs() (stock, ours *simsched.Config, stockPath, oursPath string, err error) {
	if stockPath, err = localcluster.StockSchedulerConf(); err != nil {
		return
	}
	if oursPath, err = localcluster.DeploySchedulerConf(); err != nil {
		return
	}
	if stock, err = simsched.LoadConfig("stock", stockPath); err != nil {
		return
	}
	ours, err = simsched.LoadConfig("paddle", oursPath)
	return
}

func runQuality(p *plan, r *report) error {
	stock, ours, _, _, err := configs()
	if err != nil {
		return err
	}
	data := filepath.Join(r.root, "bench", "quality", "testdata", "pollux")
	for _, preset := range p.presets {
		var reps []*quality.Report
		for seed := int64(1); seed <= int64(p.seeds); seed++ {
			s := quality.Scenario{Preset: preset, Racks: p.racks, NodesPerRack: p.nodes, Seed: seed, PSShare: 0.3, Load: 0.9}
			rep, err := quality.Run(s, data, stock, ours)
			if err != nil {
				return err
			}
			reps = append(reps, rep)
		}
		logf("quality %s: %d seeds\n%s", preset.Name, len(reps), reps[0].String())
		r.Quality = append(r.Quality, qualityResult{Preset: preset, Reports: reps})
	}
	return nil
}

func runCluster(ctx context.Context, p *plan, r *report) error {
	_, _, stockPath, oursPath, err := configs()
	if err != nil {
		return err
	}
	r.Cluster, r.ClusterFailures = clusterbench.Run(ctx, clusterbench.Options{
		Sizes:   p.clusterSizes,
		Configs: []clusterbench.Config{{Name: "stock", Path: stockPath}, {Name: "paddle", Path: oursPath}},
		Logf:    logf, Seed: 1,
	})
	return nil
}

type qualityResult struct {
	Preset  quality.Preset
	Reports []*quality.Report
}

// mean of a metric over seeds, for one placer.
func (q qualityResult) mean(placer string, f func(quality.Metrics) float64) float64 {
	s, n := 0.0, 0
	for _, r := range q.Reports {
		for _, m := range r.Metrics {
			if m.Placer == placer {
				s += f(m)
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// Metrics read by the quality tables and chart.
func meanSlowdown(x quality.Metrics) float64           { return x.MeanSlowdown }
func p95Slowdown(x quality.Metrics) float64            { return x.P95Slowdown }
func qScore(x quality.Metrics) float64                 { return x.Q }
func oneNode(x quality.Metrics) float64                { return x.OneNode }
func psCrossNIC(x quality.Metrics) float64             { return x.PSCrossNIC }
func racks(x quality.Metrics) float64                  { return x.Racks }
func blocked(x quality.Metrics) float64                { return float64(x.Blocked) }
func blockedByFragmentation(x quality.Metrics) float64 { return float64(x.BlockedByFragmentation) }

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		if len(f) >= 2 {
			kb, _ := strconv.ParseFloat(f[1], 64)
			mem = fmt.Sprintf(", %.0f GiB RAM", kb/1024/1024)
		}
	}
	return fmt.Sprintf("%s, %d cores%s, %s %s/%s", model, runtime.NumCPU(), mem, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func sortedKeys(m map[string]float64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
