// Volcano breaks scheduling ties with the global math/rand; the trace
// replay seeds it, which Go 1.24 ignores unless this is set.
//go:debug randseednop=0

// Command bench runs the benchmarks behind `make bench` and writes one run
// folder under docs/bench (docs/bench/quick, docs/bench/full, ...: -out):
// its page README.md with the figures, the commands and the machine, the
// figures as JSON, the replay's jobs as CSV and the SVG plots the page
// shows. docs/benchmarks.md is the hand-written guide to them. Every
// figure compares Volcano's stock scheduler configuration (the Helm
// chart's default tiers) with ours (deploy/paddle), measured in the same
// run. Benchmarks print; they never fail on a number.
//
// What the replay runs is bench/catalogue's data, the replay itself
// bench/runner, the pages bench/report; this command reads the flags and
// wires them together.
//
//	go run ./bench/cmd/bench -mode quick   # under 15 minutes on 2 cores
//	go run ./bench/cmd/bench -mode full    # says how long before it starts
//	go run ./bench/cmd/bench -print-conf stock-sla   # what a configuration runs
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/clusterbench"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
	"github.com/volcano-paddle/volcano-paddle/bench/report"
	"github.com/volcano-paddle/volcano-paddle/bench/runner"
	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
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
	// others: how long the parts other than the replay take on 2 cores
	// (the replay prints its own estimate once it knows its windows and
	// what -progress keeps of them).
	others       time.Duration
	skipAllocate bool
	skipCluster  bool
	skipQuality  bool
	skipReplay   bool
	skipJobSize  bool
	// sets: the trace windows replayed, named with -windows, else the
	// tuning windows, the held-out ones (issue 35's rule, each window on
	// both presets), its sensitivity subset and the windows of the two
	// earlier rules, seen since (bench/runner's rules). replayRuns: how many
	// workload seeds each (the report averages them, replay.Repeat).
	sets       runner.Sets
	replayRuns int
	// paddleVariants names the variants of paddle replayed beside it
	// (bench/catalogue's variants; full mode: all, what each part of
	// paddle's ordering buys).
	paddleVariants []string
	// flex: elastic and checkpointable jobs (-elastic-share,
	// -checkpoint-share, -restart-cost); off by default.
	flex replay.Flex
	// sweep replays the tuning windows with one lever swept instead of the
	// comparison (-sweep: bench/catalogue's sweeps).
	sweep string
	// jobSizes: trainers of the PS jobs the job size benchmark submits.
	jobSizes []int
	// sensitivity: the sensitivity pass's changed yardstick.
	sensitivity replay.Sensitivity
	// shard of shards: replay only every shards-th window from the
	// shard-th (0: all); progress: the folder of per-window results.
	shard, shards int
	progress      string
}

func plans(cat *catalogue.Catalogue, mode string) (*plan, error) {
	switch mode {
	case "quick":
		// The second rule's windows (saturated with large gangs; held out
		// before issue 35, seen since: windows.go) once each, every stock
		// configuration and paddle: a smaller check against the figures
		// published on them, which judges nothing. The held-out windows:
		// -window-set held-out or the full mode.
		return &plan{mode: mode, allocSizes: "100x400,100x2000,1000x400", allocTime: "2x", allocCount: 1,
			clusterSizes: []clusterbench.Size{{Nodes: 250, Pods: 1000}},
			presets:      []quality.Preset{quality.A100SXM, quality.PCIeNVLinkPairs}, racks: 4, nodes: 16, seeds: 3,
			sets: runner.Sets{Rule2: true}, replayRuns: 1,
			jobSizes: []int{100, 2000},
			others:   10 * time.Minute}, nil
	case "full":
		// The judged figures: the tuning windows and the held-out windows
		// (issue 35's rule, 24 window-preset pairs), 5 seeds each, every
		// configuration and paddle's variants; the other parts at the quick
		// mode's sizes (their large sizes are the scale mode), which take
		// no longer than the whole quick mode.
		return &plan{mode: mode, allocSizes: "100x400,100x2000,1000x400", allocTime: "2x", allocCount: 1,
			clusterSizes: []clusterbench.Size{{Nodes: 250, Pods: 1000}},
			presets:      []quality.Preset{quality.A100SXM, quality.PCIeNVLinkPairs}, racks: 4, nodes: 16, seeds: 3,
			sets: runner.Sets{Tuning: true, HeldOut: true}, replayRuns: runner.FullRuns, paddleVariants: cat.Variants(),
			jobSizes: []int{100, 2000},
			others:   10 * time.Minute}, nil
	case "scale":
		// Allocate speed, placement quality, the local cluster and job
		// size at large sizes; no replay.
		return &plan{mode: mode, allocSizes: "100x400,100x2000,1000x400,1000x2000,5000x400,5000x2000", allocTime: "1x", allocCount: 2,
			clusterSizes: []clusterbench.Size{{Nodes: 250, Pods: 2000}, {Nodes: 1000, Pods: 5000}, {Nodes: 5000, Pods: 10000}},
			presets:      quality.Presets, racks: 8, nodes: 16, seeds: 5, skipReplay: true,
			jobSizes: []int{100, 2000, 10000},
			others:   100 * time.Minute}, nil
	}
	return nil, fmt.Errorf("mode %q: use quick, full or scale", mode)
}

// flags are the command line, read by parseFlags.
type flags struct {
	mode, out, skip, windows, sweep, windowSet, variants, render string
	printConf                                                    string
	runs                                                         int
	elastic, checkpoint                                          float64
	restart                                                      time.Duration
	memProfile, cpuProfile                                       string
	linkScale                                                    float64
	firstFree                                                    bool
	shard, progress                                              string
	before                                                       string
}

func parseFlags(cat *catalogue.Catalogue) flags {
	var f flags
	flag.StringVar(&f.mode, "mode", "quick", "quick (under 15 minutes on 2 cores: the second rule's windows, seen, once), full (the tuning and held-out windows 5 times; says how long first) or scale (the large sizes of the other parts, no replay)")
	flag.StringVar(&f.out, "out", "", "run folder: its page README.md, results.json, jobs.csv.gz and plots (default docs/bench/ and the mode: quick, full or scale; <lever>-sweep for -sweep; flex with -elastic-share or -checkpoint-share)")
	flag.StringVar(&f.skip, "skip", "", "comma-separated parts to skip: replay, allocate, cluster, quality, jobsize")
	flag.StringVar(&f.windows, "windows", "", "trace windows to replay instead of the mode's, comma-separated PRESET:START+JOBS (e.g. 8xA100-NVSwitch:40000+300; presets: "+catalogue.PresetNames()+")")
	flag.IntVar(&f.runs, "replay-runs", 0, fmt.Sprintf("replays of each trace window, averaged (default %d)", runner.DefaultRuns))
	var sweeps []string
	for _, s := range cat.Sweeps {
		sweeps = append(sweeps, fmt.Sprintf("%s (%s; docs/bench/%s)", s.Name, s.About, s.Out))
	}
	flag.StringVar(&f.sweep, "sweep", "", "replay only the tuning windows with one lever swept (bench/catalogue/catalogue.yaml's sweeps): "+strings.Join(sweeps, ", "))
	flag.StringVar(&f.windowSet, "window-set", "", "replay only these windows: tuning, held-out (issue 35's rule, each window on both presets), rule1 or rule2 (the two earlier rules' windows, seen since; rule2's saturated with large gangs)")
	flag.StringVar(&f.variants, "paddle-variants", "", "true (all), false, or a comma-separated list of paddle's variants to replay beside paddle ("+strings.Join(cat.Variants(), ", ")+"; default: all in the full mode only)")
	flag.Float64Var(&f.elastic, "elastic-share", 0, "share of collective jobs that are elastic (0.5x to 2x their recorded trainers, speed-up from the Pollux step times); 0: the trace as it is")
	flag.Float64Var(&f.checkpoint, "checkpoint-share", 0, "share of jobs that can be checkpointed (preemptable, restart from the checkpoint); 0: none")
	flag.DurationVar(&f.restart, "restart-cost", 5*time.Minute, "work a checkpointed job loses when it is preempted and restarts")
	flag.StringVar(&f.render, "render", "", "render the page again from the figures a run saved (docs/bench/full/results.json), without measuring, into -out (default: the folder of the first file); several files, comma-separated, are merged (the windows of each, the other parts from the first that has them)")
	flag.Float64Var(&f.linkScale, "link-scale", 0, "sensitivity pass: the cost model's interconnect bandwidths times this (0.5, 2); 0: as published")
	flag.BoolVar(&f.firstFree, "first-free-gpus", false, "sensitivity pass: GPUs assigned first-free within a node, as a topology-blind device plugin would")
	flag.StringVar(&f.shard, "shard", "", "K/N: replay only the K-th of N interleaved parts of the windows (run N processes, one per core, then once without -shard: it resumes every window from -progress and writes the page)")
	flag.StringVar(&f.progress, "progress", "", "folder of per-window results a run keeps as it goes and resumes from (default .local/bench-progress/<run folder's name>)")
	flag.StringVar(&f.before, "before", "", "an earlier run's results.json (e.g. docs/bench/heldout-baseline/results.json): its paddle joins this run's windows that it replayed with the same options and seeds, as paddle-before, and the verdicts give paddle / paddle before, paired by seed (with -render too)")
	flag.StringVar(&f.printConf, "print-conf", "", "print the complete Volcano scheduler configuration a configuration of bench/catalogue/catalogue.yaml runs (with -elastic-share or -checkpoint-share: as the elastic and checkpoint workload runs it), and how it is put together, then exit")
	flag.StringVar(&f.memProfile, "memprofile", "", "write a heap profile here when the measuring is done (go tool pprof)")
	flag.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the measuring here (go tool pprof)")
	flag.Parse()
	return f
}

// planOf is the mode's plan with the flags' changes; an error is a usage
// error.
func planOf(cat *catalogue.Catalogue, f flags) (*plan, error) {
	p, err := plans(cat, f.mode)
	if err != nil {
		return nil, err
	}
	if f.windows != "" {
		if p.sets.Windows, err = catalogue.ParseWindows(f.windows); err != nil {
			return nil, fmt.Errorf("-windows: %w", err)
		}
	}
	if f.runs != 0 {
		if f.runs < 1 || f.runs > runner.MaxRuns {
			return nil, fmt.Errorf("-replay-runs %d: want 1 to %d", f.runs, runner.MaxRuns)
		}
		p.replayRuns = f.runs
	}
	switch f.windowSet {
	case "":
	case "tuning":
		p.sets = runner.Sets{Windows: p.sets.Windows, Tuning: true}
	case "held-out":
		p.sets = runner.Sets{Windows: p.sets.Windows, HeldOut: true}
	case "rule1":
		p.sets = runner.Sets{Windows: p.sets.Windows, Rule1: true}
	case "rule2":
		p.sets = runner.Sets{Windows: p.sets.Windows, Rule2: true}
	case "sensitivity":
		p.sets = runner.Sets{Windows: p.sets.Windows, Sensitivity: true}
	default:
		return nil, fmt.Errorf("-window-set %q: use tuning, held-out, sensitivity (8 of the held-out pairs), rule1 or rule2", f.windowSet)
	}
	if f.linkScale < 0 || (f.linkScale > 0 && (f.linkScale < 0.1 || f.linkScale > 10)) {
		return nil, fmt.Errorf("-link-scale %g: want 0 (as published) or a factor from 0.1 to 10", f.linkScale)
	}
	p.sensitivity = replay.Sensitivity{LinkScale: f.linkScale, FirstFreeGPUs: f.firstFree}
	if f.shard != "" {
		if p.shard, p.shards, err = parseShard(f.shard); err != nil {
			return nil, err
		}
	}
	if f.variants != "" {
		if p.paddleVariants, err = parseVariants(cat, f.variants); err != nil {
			return nil, err
		}
	}
	if f.elastic < 0 || f.elastic > 1 || f.checkpoint < 0 || f.checkpoint > 1 || f.restart < 0 {
		return nil, fmt.Errorf("-elastic-share and -checkpoint-share are shares from 0 to 1, -restart-cost a duration of 0 or more")
	}
	p.flex = replay.Flex{ElasticShare: f.elastic, CheckpointShare: f.checkpoint, RestartCost: f.restart.Seconds()}
	if f.sweep != "" {
		if _, ok := cat.SweepNamed(f.sweep); !ok {
			sweeps := cat.SweepNames()
			last := len(sweeps) - 1
			return nil, fmt.Errorf("-sweep %q: use %s or %s", f.sweep, strings.Join(sweeps[:last], ", "), sweeps[last])
		}
		// A sweep keeps the tuning windows (of the sets, those named with
		// -windows still replace them).
		p.sweep, p.sets.Tuning, p.sets.HeldOut, p.sets.Rule1, p.sets.Rule2, p.skipReplay = f.sweep, true, false, false, false, false
		p.skipAllocate, p.skipCluster, p.skipQuality, p.skipJobSize = true, true, true, true
	}
	for _, s := range strings.Split(f.skip, ",") {
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
	return p, nil
}

// describe says what a run measures and how long it expects to take, before
// it starts.
func (p *plan) describe() string {
	var parts []string
	if !p.skipAllocate {
		parts = append(parts, "allocate ("+p.allocSizes+")")
	}
	if !p.skipCluster {
		parts = append(parts, fmt.Sprintf("cluster %v", p.clusterSizes))
	}
	if !p.skipQuality {
		parts = append(parts, fmt.Sprintf("quality %d presets x %d seeds", len(p.presets), p.seeds))
	}
	if !p.skipJobSize {
		parts = append(parts, fmt.Sprintf("job size %v", p.jobSizes))
	}
	var d string
	if len(parts) > 0 {
		d = fmt.Sprintf("%s, expected to take at most about %s on 2 cores", strings.Join(parts, ", "), p.others)
	}
	if !p.skipReplay {
		if d != "" {
			d += "; "
		}
		d += "the replay (its estimate follows once its windows are known)"
	}
	return d
}

// defaultOut is the run folder a run writes without -out: docs/bench/ and
// the sweep's folder, flex for the elastic and checkpoint workload, else
// the mode.
func defaultOut(cat *catalogue.Catalogue, root string, f flags) string {
	name := f.mode
	switch {
	case f.sweep != "":
		name = f.sweep + "-sweep"
		if s, ok := cat.SweepNamed(f.sweep); ok {
			name = s.Out
		}
	case f.elastic > 0 || f.checkpoint > 0:
		name = "flex"
	}
	if f.linkScale > 0 && f.linkScale != 1 {
		name += fmt.Sprintf("-links-%g", f.linkScale)
	}
	if f.firstFree {
		name += "-first-free"
	}
	return filepath.Join(root, "docs", "bench", name)
}

// parseShard reads -shard K/N.
func parseShard(s string) (k, n int, err error) {
	if _, err := fmt.Sscanf(s, "%d/%d", &k, &n); err != nil || n < 1 || k < 1 || k > n || fmt.Sprintf("%d/%d", k, n) != s {
		return 0, 0, fmt.Errorf("-shard %q: want K/N with 1 <= K <= N, e.g. 1/2", s)
	}
	return k, n, nil
}

// checkOut refuses an -out that names a page: a run writes a folder.
func checkOut(out string) error {
	if strings.EqualFold(filepath.Ext(out), ".md") {
		return fmt.Errorf("-out %s: name a folder (the run's page is its %s, beside results.json, %s and the plots)", out, report.PageFile, report.JobsFile)
	}
	return nil
}

func main() {
	replay.TuneGC()
	cat, err := catalogue.Load()
	if err != nil {
		fail(err)
	}
	f := parseFlags(cat)
	if err := checkOut(f.out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if f.render != "" {
		render(f.render, f.out, f.before)
		return
	}
	if f.printConf != "" {
		printConf(cat, f)
		return
	}
	p, err := planOf(cat, f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		fail(err)
	}
	if f.out == "" {
		f.out = defaultOut(cat, root, f)
	}
	p.progress = f.progress
	if p.progress == "" {
		p.progress = filepath.Join(root, ".local", "bench-progress", filepath.Base(f.out))
	}
	// Checked before measuring, so a bad -out does not cost a run.
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		fail(fmt.Errorf("-out %s: %w", f.out, err))
	}
	// SIGINT or SIGTERM cancels ctx: the part running stops, and the
	// figures measured so far are written, marked as partial.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	logf("benchmarks, %s mode: %s", p.mode, p.describe())
	r := &report.Report{Mode: p.mode, Volcano: volcanorelease.Version(), Started: time.Now(), Machine: machine(), Root: root,
		Commands: []string{strings.Join(append([]string{"go run ./bench/cmd/bench"}, os.Args[1:]...), " ")}}
	if f.cpuProfile != "" {
		stopProfile, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			fail(err)
		}
		defer stopProfile()
	}
	err = measure(ctx, cat, p, r)
	if ctx.Err() != nil {
		r.Interrupted = fmt.Sprintf("interrupted after %s", time.Since(r.Started).Round(time.Second))
		logf("%s: writing the figures measured so far", r.Interrupted)
	} else if err != nil {
		fail(err)
	}
	if f.memProfile != "" {
		if err := writeHeapProfile(f.memProfile); err != nil {
			fail(err)
		}
	}
	r.Took = time.Since(r.Started)
	if p.shards > 0 {
		if ctx.Err() != nil {
			logf("shard %d/%d stopped: the windows it finished are in %s; run it again to go on", p.shard, p.shards, p.progress)
			os.Exit(1)
		}
		logf("shard %d/%d done: its windows are in %s; run again without -shard to write the page", p.shard, p.shards, p.progress)
		return
	}
	addBefore(r, f.before)
	if err := r.WriteAll(f.out); err != nil {
		fail(err)
	}
	logf("wrote %s (%s)", report.PagePath(f.out), r.Took.Round(time.Second))
	if ctx.Err() != nil {
		os.Exit(1)
	}
	if !p.skipJobSize {
		if err := runJobSize(ctx, report.PagePath(f.out), p.jobSizes); err != nil {
			fail(err)
		}
	}
}

// render writes the page of saved runs again (-render; several,
// comma-separated, are merged: report.Load) into the run folder out, by
// default the folder of the first.
func render(results, out, before string) {
	r, err := report.Load(results)
	if err != nil {
		fail(err)
	}
	addBefore(r, before)
	if out == "" {
		out = filepath.Dir(strings.Split(results, ",")[0])
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fail(fmt.Errorf("-out %s: %w", out, err))
	}
	if err := r.Write(out); err != nil {
		fail(err)
	}
	logf("rendered %s from %s", report.PagePath(out), results)
}

// addBefore joins the paddle of the earlier run saved at before (-before)
// to r's windows, and says which windows it could not.
func addBefore(r *report.Report, before string) {
	if before == "" {
		return
	}
	old, err := report.Load(before)
	if err != nil {
		fail(fmt.Errorf("-before: %w", err))
	}
	added, missing := r.AddBefore(old, before)
	for _, m := range missing {
		logf("-before: window %s", m)
	}
	if added == 0 && r.Before == "" {
		fail(fmt.Errorf("-before %s: none of this run's windows was replayed there with the same options and seeds", before))
	}
	logf("-before: paddle of %s joined %d of %d windows as %s", before, added, len(r.Replay), report.PaddleBefore)
}

// printConf prints what a configuration of the catalogue runs (-print-conf),
// for the elastic and checkpoint workload when the flags ask for it.
func printConf(cat *catalogue.Catalogue, f flags) {
	files, err := catalogue.RepoFiles()
	if err != nil {
		fail(err)
	}
	text, err := cat.Print(f.printConf, files, f.elastic > 0 || f.checkpoint > 0)
	if err != nil {
		fail(err)
	}
	fmt.Print(text)
}

// measure runs the plan's parts in order and stops at the first error
// (ctx's when the bench is interrupted); what a part measured before it
// stopped stays in r.
func measure(ctx context.Context, cat *catalogue.Catalogue, p *plan, r *report.Report) error {
	if !p.skipReplay {
		if err := runReplay(ctx, cat, p, r); err != nil {
			return err
		}
	}
	if !p.skipAllocate {
		if err := runAllocate(ctx, r.Root, p, r); err != nil {
			return err
		}
	}
	if !p.skipQuality && ctx.Err() == nil {
		if err := runQuality(p, r); err != nil {
			return err
		}
	}
	if !p.skipCluster {
		if err := runCluster(ctx, p, r); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// runReplay replays the plan's windows under its configurations
// (bench/runner); when ctx is cancelled, the windows and seeds it
// finished stay in r.
func runReplay(ctx context.Context, cat *catalogue.Catalogue, p *plan, r *report.Report) error {
	files, err := catalogue.RepoFiles()
	if err != nil {
		return err
	}
	cfgs, err := runner.Configs(cat, files, p.sweep, p.flex.On(), p.paddleVariants)
	if err != nil {
		return err
	}
	r.Sweep = p.sweep
	data := filepath.Join(r.Root, "bench", "quality", "testdata", "pollux")
	windows, err := runner.Windows(cat.Windows, p.sets, data)
	if err != nil {
		return err
	}
	run := runner.Run{Windows: windows, Configs: cfgs, Seeds: p.replayRuns, Flex: p.flex, Sensitivity: p.sensitivity,
		Shard: p.shard, Shards: p.shards, Progress: p.progress, Data: data, Logf: logf}
	reps, err := run.Replay(ctx)
	r.Replay = append(r.Replay, reps...)
	return err
}

// parseVariants reads -paddle-variants: true (all), false (none) or names.
func parseVariants(cat *catalogue.Catalogue, s string) ([]string, error) {
	if b, err := strconv.ParseBool(s); err == nil {
		if b {
			return cat.Variants(), nil
		}
		return nil, nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(cat.Variants(), name) {
			return nil, fmt.Errorf("-paddle-variants: no variant %q (use true, false or some of %s)", name, strings.Join(cat.Variants(), ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

// startCPUProfile profiles this process into path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeHeapProfile writes the live heap (after a collection) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.GC()
	return pprof.WriteHeapProfile(f)
}

func logf(f string, a ...interface{}) {
	fmt.Printf("%s "+f+"\n", append([]interface{}{time.Now().Format("15:04:05")}, a...)...)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
