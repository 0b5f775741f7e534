// Volcano breaks ties between equally scored nodes with the global
// math/rand, which the replay seeds per configuration so that a run
// repeats (replay.Replay); since Go 1.24 rand.Seed does nothing unless the
// binary turns randseednop off, as bench/cmd/bench does.
//
//go:debug randseednop=0

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
	"github.com/volcano-paddle/volcano-paddle/deploy"
	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

var runCommand = command{
	name:    "run",
	summary: "replay a history CSV under stock Volcano and paddle, and say whether paddle is worth turning on",
	run:     runRun,
	flags:   func() *flag.FlagSet { fs, _ := runFlags(); return fs },
}

// Defaults and bounds of run's flags.
const (
	defaultSeeds        = 5
	maxSeeds            = 20
	defaultWindowJobs   = 300
	defaultNodesPerRack = 4
)

// firstSeed is the first workload seed; seed k of a window is
// firstSeed+k-1, as the benchmarks number them (bench/cmd/bench).
const firstSeed = 1

// phillyPSShare is the share of a Philly trace's jobs the replay draws as
// parameter-server jobs, as the benchmarks do: the trace gives a job's
// GPUs only. A history file records each job's mode, and the replay keeps
// it (quality.Shape ignores the share for a recorded shape).
const phillyPSShare = 0.3

// restartCost is the work a checkpointable job of the history loses when
// it is preempted and restarts from its checkpoint: the benchmarks'
// default (bench -restart-cost). The history does not record it.
const restartCost = 5 * time.Minute

// p95Tolerance is how much longer paddle's p95 JCT may possibly be (the
// upper end of its interval) for a shorter mean JCT to turn it on: a
// shorter mean bought with a tail more than 5% longer is not a clear gain
// (docs/paddle-replay.md, "The verdict"). Written down before any run.
const p95Tolerance = 1.05

// candidate is a setting of paddle the replay may choose: the
// configuration an operator would install.
type candidate struct {
	name string
	// settings is what the operator sets, as the verdict names it.
	settings string
	// why the candidate is among those tried.
	why string
	// entry is its configuration; nil: the bench catalogue's of that name
	// (bench/catalogue).
	entry *catalogue.Entry
}

// candidates are the settings of paddle run tries, in the order a tie on
// the choosing part is broken (the shipped configuration first). Four, so
// that the choice is among a few levers an operator understands and the
// judging part is not asked to vouch for a wide search.
var candidates = []candidate{
	{
		name: replay.Paddle, settings: "deploy/paddle/volcano-scheduler.conf as shipped",
		why: "the default",
	},
	{
		name: "paddle-noheadroom", settings: "deploy/paddle/volcano-scheduler.conf with " + paddle.ArgSmallJobHeadroom + ": 0",
		why: "the headroom keeps GPUs free for small jobs it expects; a history without a steady stream of them pays in idle GPUs",
		entry: &catalogue.Entry{Name: "paddle-noheadroom", Role: catalogue.RolePaddle, File: catalogue.FilePaddle,
			Note: "deploy/paddle with " + paddle.ArgSmallJobHeadroom + ": 0", Args: map[string]interface{}{paddle.ArgSmallJobHeadroom: 0}},
	},
	{
		name: "paddle-fifo", settings: "deploy/paddle/volcano-scheduler.conf with " + paddle.ArgSmallGangsFirst + ": false",
		why: "small gangs first helps where small jobs are the short ones; in creation order where they are not",
		entry: &catalogue.Entry{Name: "paddle-fifo", Role: catalogue.RolePaddle, File: catalogue.FilePaddle,
			Note: "deploy/paddle with " + paddle.ArgSmallGangsFirst + ": false", Args: map[string]interface{}{paddle.ArgSmallGangsFirst: false}},
	},
	{
		name: "paddle-queues", settings: "deploy/paddle/volcano-scheduler.conf, each queue of the history a Volcano queue weighted by its share of the GPU-time of the 30 days before",
		why: "a cluster shared by teams: queues weighted as the history used them (stock-queues does the same without paddle)",
	},
}

func candidateNames() []string {
	out := make([]string, len(candidates))
	for i, c := range candidates {
		out[i] = c.name
	}
	return out
}

type runOptions struct {
	trace        string
	nodes        string
	seeds        int
	windowJobs   int
	nodesPerRack int
	maxWindows   int
	settings     string
	data         string
}

func runFlags() (*flag.FlagSet, *runOptions) {
	o := &runOptions{}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&o.trace, "trace", "", "the history CSV to replay (paddle-replay export's format, or the Philly trace's)")
	fs.StringVar(&o.nodes, "nodes", "", "the cluster: PRESET:COUNT, a node type and how many, e.g. 8xA100-NVSwitch:16 (presets: "+presetNames()+")")
	fs.IntVar(&o.seeds, "seeds", defaultSeeds, fmt.Sprintf("workload seeds per window (1 to %d): each draws the models the history does not record anew", maxSeeds))
	fs.IntVar(&o.windowJobs, "window-jobs", defaultWindowJobs, "jobs per window: the history is cut by submit time into windows of this many jobs, each replayed on its own")
	fs.IntVar(&o.nodesPerRack, "nodes-per-rack", defaultNodesPerRack, "nodes per rack (racks share an uplink in the cost model); a cluster of fewer nodes is one rack")
	fs.IntVar(&o.maxWindows, "max-windows", 0, "replay only the most recent N windows, at least 2 (default: all)")
	fs.StringVar(&o.settings, "settings", strings.Join(candidateNames(), ","), "the paddle settings to choose among, comma-separated: "+strings.Join(candidateNames(), ", "))
	fs.StringVar(&o.data, "data", "", "a folder of Pollux model profiles, <model>/placements.csv (default: the profiles compiled in)")
	return fs, o
}

func presetNames() string {
	names := make([]string, len(quality.Presets))
	for i, p := range quality.Presets {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// runPlan is a checked command line.
type runPlan struct {
	trace               string
	preset              quality.Preset
	nodes, nodesPerRack int
	seeds, windowJobs   int
	maxWindows          int
	candidates          []candidate
	data                string
	stdout, stderr      io.Writer
}

func runRun(args []string, stdout, stderr io.Writer) error {
	p, err := parseRun(args, stderr)
	if err != nil {
		return err
	}
	p.stdout, p.stderr = stdout, stderr
	replay.TuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return p.run(ctx)
}

// parseRun reads and checks run's flags.
func parseRun(args []string, stderr io.Writer) (*runPlan, error) {
	fs, o := runFlags()
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil, err
		}
		return nil, usageError("%v", err)
	}
	if fs.NArg() > 0 {
		return nil, usageError("unexpected argument %q: run takes flags only (paddle-replay help run)", fs.Arg(0))
	}
	if o.trace == "" {
		return nil, usageError("--trace FILE is required: the history CSV paddle-replay export wrote")
	}
	if o.nodes == "" {
		return nil, usageError("--nodes PRESET:COUNT is required: your cluster's node type and size, e.g. 8xA100-NVSwitch:16 (presets: %s)", presetNames())
	}
	p := &runPlan{trace: o.trace, seeds: o.seeds, windowJobs: o.windowJobs, maxWindows: o.maxWindows, data: o.data}
	var err error
	if p.preset, p.nodes, err = parseNodes(o.nodes); err != nil {
		return nil, err
	}
	switch {
	case o.seeds < 1 || o.seeds > maxSeeds:
		return nil, usageError("--seeds %d: give 1 to %d", o.seeds, maxSeeds)
	case o.windowJobs < 2:
		return nil, usageError("--window-jobs %d: a window needs at least 2 jobs", o.windowJobs)
	case o.maxWindows < 0 || o.maxWindows == 1:
		return nil, usageError("--max-windows %d: give at least 2 (one window to choose paddle's settings on, one to judge them), or leave it out for all", o.maxWindows)
	case o.nodesPerRack < 1:
		return nil, usageError("--nodes-per-rack %d: give at least 1", o.nodesPerRack)
	}
	// The replay builds whole racks: a partial one would add nodes the
	// cluster does not have.
	p.nodesPerRack = min(o.nodesPerRack, p.nodes)
	if p.nodes%p.nodesPerRack != 0 {
		return nil, usageError("--nodes %s: %d nodes are not whole racks of --nodes-per-rack %d (the replay would add nodes to fill the last rack); give --nodes-per-rack a divisor of %d",
			o.nodes, p.nodes, p.nodesPerRack, p.nodes)
	}
	for _, name := range strings.Split(o.settings, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(candidates, func(c candidate) bool { return c.name == name })
		if i < 0 {
			return nil, usageError("--settings: no setting %q; choose among %s", name, strings.Join(candidateNames(), ", "))
		}
		if !slices.ContainsFunc(p.candidates, func(c candidate) bool { return c.name == name }) {
			p.candidates = append(p.candidates, candidates[i])
		}
	}
	return p, nil
}

// parseNodes reads --nodes PRESET:COUNT.
func parseNodes(s string) (quality.Preset, int, error) {
	name, count, ok := strings.Cut(s, ":")
	if !ok {
		return quality.Preset{}, 0, usageError("--nodes %q: want PRESET:COUNT, e.g. 8xA100-NVSwitch:16 (presets: %s)", s, presetNames())
	}
	i := slices.IndexFunc(quality.Presets, func(p quality.Preset) bool { return strings.EqualFold(p.Name, strings.TrimSpace(name)) })
	if i < 0 {
		return quality.Preset{}, 0, usageError("--nodes %q: no node type %q; presets: %s", s, name, presetNames())
	}
	n, err := strconv.Atoi(strings.TrimSpace(count))
	if err != nil || n < 1 {
		return quality.Preset{}, 0, usageError("--nodes %q: COUNT %q must be a whole number of nodes, at least 1", s, count)
	}
	return quality.Presets[i], n, nil
}

// history is the trace as the replay reads it.
type history struct {
	// jobs in submission order (replay.SortBySubmission), as the replay
	// takes its windows.
	jobs    []quality.TraceJob
	format  jobhistory.Format
	skipped int // Philly rows the reader skips
	// flex: some job is elastic or checkpointable, so every configuration
	// gets the actions those need (bench/catalogue builds it so).
	flex bool
}

// readHistory reads the trace through the same reader as the replay
// (quality.LoadTrace, pkg/jobhistory), and its format and skipped rows.
func readHistory(path string) (*history, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w (give the history CSV paddle-replay export wrote)", err)
	}
	rd, err := jobhistory.NewReader(f)
	if err == nil {
		for err == nil {
			_, err = rd.Next()
		}
		if err == io.EOF {
			err = nil
		}
	}
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("--trace %s: %w", path, err)
	}
	trace, err := quality.LoadTrace(path)
	if err != nil {
		return nil, fmt.Errorf("--trace %w", err)
	}
	h := &history{jobs: replay.SortBySubmission(trace), format: rd.Format(), skipped: rd.Skipped()}
	for _, j := range trace {
		if j.Checkpointable || (j.Pods > 0 && j.MinPods != j.MaxPods) {
			h.flex = true
		}
	}
	return h, nil
}

// window is one window of the history and its replay.
type window struct {
	n            int // 1, 2, ... in time order
	start, jobs  int // in the sorted history
	first, last  float64
	rep          *replay.Report
	mean, p95    replay.Paired
	choosingPart bool
}

func (w *window) label() string {
	return fmt.Sprintf("%d: %s, jobs %d-%d", w.n, utc(w.first), w.start+1, w.start+w.jobs)
}

func utc(unix float64) string { return time.Unix(int64(unix), 0).UTC().Format("2006-01-02 15:04") }

// windows cuts the history into windows of p.windowJobs jobs, aligned to
// its end so that the most recent jobs are always replayed; the oldest
// jobs left over (and with --max-windows the older windows) are not
// replayed, but set the queues' shares (replay.Build: the 30 days before a
// window). The first half of the windows (at least one) is the choosing
// part, the rest the judging part.
func (p *runPlan) windows(h *history) ([]*window, error) {
	n := len(h.jobs) / p.windowJobs
	if n < 2 {
		return nil, fmt.Errorf("--trace %s has %d jobs: run needs at least %d, two windows of --window-jobs %d (one to choose paddle's settings on, one to judge them); lower --window-jobs or export a longer history",
			p.trace, len(h.jobs), 2*p.windowJobs, p.windowJobs)
	}
	if p.maxWindows > 0 {
		n = min(n, p.maxWindows)
	}
	choose := max(1, n/2)
	first := len(h.jobs) - n*p.windowJobs
	var out []*window
	for i := 0; i < n; i++ {
		start := first + i*p.windowJobs
		out = append(out, &window{n: i + 1, start: start, jobs: p.windowJobs, first: h.jobs[start].Submitted,
			last: h.jobs[start+p.windowJobs-1].Submitted, choosingPart: i < choose})
	}
	return out, nil
}

// configs are the configurations every window is replayed under: the
// bench's stock ones (for the elastic and checkpoint workload, those that
// can run it), the paddle candidates and the clairvoyant reference, on the
// scheduler files compiled in; with flex, as that workload needs them.
func (p *runPlan) configs(flex bool) ([]replay.Config, error) {
	cat, err := catalogue.Load()
	if err != nil {
		return nil, err
	}
	compared, err := cat.Comparison(flex, nil)
	if err != nil {
		return nil, err
	}
	var es []catalogue.Entry
	for _, e := range compared {
		if e.Role == catalogue.RoleStock {
			es = append(es, e)
		}
	}
	for _, c := range p.candidates {
		e, ok := cat.Lookup(c.name)
		if c.entry != nil {
			e, ok = *c.entry, true
		}
		if !ok {
			return nil, fmt.Errorf("no configuration %s", c.name)
		}
		es = append(es, e)
	}
	ref, ok := cat.Lookup(replay.Clairvoyant)
	if !ok {
		return nil, fmt.Errorf("no configuration %s", replay.Clairvoyant)
	}
	es = append(es, ref)
	files := catalogue.Files{Stock: deploy.StockSchedulerConf(), Paddle: deploy.PaddleSchedulerConf(),
		StockFrom: "deploy/stock/volcano-scheduler.conf", PaddleFrom: "deploy/paddle/volcano-scheduler.conf"}
	var cs []replay.Config
	for _, e := range es {
		c, err := cat.Build(e, files, flex)
		if err != nil {
			return nil, err
		}
		cs = append(cs, replay.ConfigOf(c))
	}
	return cs, nil
}

// dataDir is where the replay reads the model profiles: --data, or the
// compiled-in ones written to dir.
func (p *runPlan) dataDir(dir string) (string, error) {
	if p.data != "" {
		if _, err := quality.Models(p.data); err != nil {
			return "", fmt.Errorf("--data %s: %w; give a folder with <model>/placements.csv for each Pollux model (the artifact's simulator/traces), or leave --data out for the profiles compiled in", p.data, err)
		}
		return p.data, nil
	}
	data := filepath.Join(dir, "pollux")
	return data, quality.WriteProfiles(data)
}

// run replays the history and prints the tables and the verdict.
func (p *runPlan) run(ctx context.Context) error {
	h, err := readHistory(p.trace)
	if err != nil {
		return err
	}
	ws, err := p.windows(h)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "paddle-replay-run-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cfgs, err := p.configs(h.flex)
	if err != nil {
		return err
	}
	data, err := p.dataDir(tmp)
	if err != nil {
		return err
	}
	p.header(h, ws, cfgs)

	prog := &progress{w: p.stderr, perSeed: len(cfgs), seeds: p.seeds, windows: len(ws), began: time.Now()}
	for _, w := range ws {
		o := replay.Options{TracePath: p.trace, Preset: p.preset, Nodes: p.nodes, NodesPerRack: p.nodesPerRack,
			Start: w.start, Jobs: w.jobs, PSShare: phillyPSShare, Seed: firstSeed,
			// Draws nothing (no shares): the history says which jobs are
			// elastic or checkpointable; only what a restart costs.
			Flex: replay.Flex{RestartCost: restartCost.Seconds()}}
		prog.window = w.n
		rep, err := replay.Repeat(ctx, o, data, cfgs, p.seeds, prog.logf)
		if err != nil {
			return fmt.Errorf("window %d (jobs %d-%d): %w", w.n, w.start+1, w.start+w.jobs, err)
		}
		w.rep = rep
		if w.mean, err = replay.PairedOf(rep, replay.MeanJCTFigure); err != nil {
			return err
		}
		if w.p95, err = replay.PairedOf(rep, replay.P95JCTFigure); err != nil {
			return err
		}
	}
	fmt.Fprintf(p.stderr, "replayed %d windows x %d seeds in %s\n", len(ws), p.seeds, time.Since(prog.began).Round(time.Second))

	var choosing, judging []*window
	for _, w := range ws {
		if w.choosingPart {
			choosing = append(choosing, w)
		} else {
			judging = append(judging, w)
		}
	}
	chosen := p.choose(choosing)
	p.judge(judging, chosen)
	return nil
}

// header says what is replayed, before the replay starts.
func (p *runPlan) header(h *history, ws []*window, cfgs []replay.Config) {
	out := p.stdout
	gpus := p.nodes * p.preset.GPUsPerNode
	tooLarge := 0
	for _, w := range ws {
		for _, j := range h.jobs[w.start : w.start+w.jobs] {
			if j.GPUs > gpus {
				tooLarge++
			}
		}
	}
	skipped := ""
	if h.skipped > 0 {
		skipped = fmt.Sprintf(", %d rows skipped", h.skipped)
	}
	fmt.Fprintf(out, "paddle-replay run: %s (%s format, %d jobs%s) on %d nodes of %s (%d GPUs, racks of %d)\n",
		p.trace, h.format, len(h.jobs), skipped, p.nodes, p.preset.Name, gpus, p.nodesPerRack)
	nChoose := 0
	for _, w := range ws {
		if w.choosingPart {
			nChoose++
		}
	}
	fmt.Fprintf(out, "windows: %d of %d jobs by submit time, %s to %s UTC; choosing paddle's settings on %s, judging them on %s; %d seeds each\n",
		len(ws), p.windowJobs, utc(ws[0].first), utc(ws[len(ws)-1].last), windowRange(1, nChoose), windowRange(nChoose+1, len(ws)), p.seeds)
	if ws[0].start > 0 {
		fmt.Fprintf(out, "  the oldest %d jobs are not replayed (the 30 days before a window set its queues' shares)\n", ws[0].start)
	}
	if tooLarge > 0 {
		fmt.Fprintf(out, "  %d jobs ask for more than the cluster's %d GPUs and are left out under every configuration\n", tooLarge, gpus)
	}
	if h.format == jobhistory.FormatPhilly {
		fmt.Fprintf(out, "  a Philly trace gives no pod shapes: each window-seed draws them, %.0f%% of jobs as parameter-server jobs\n", 100*phillyPSShare)
	}
	if h.flex {
		fmt.Fprintf(out, "  the history has elastic or checkpointable jobs: every configuration runs with the preempt and reclaim actions; a preempted checkpointable job loses %s of work\n", restartCost)
	}
	var stock []string
	for _, c := range cfgs {
		if c.Role == replay.RoleStock {
			stock = append(stock, c.Name())
		}
	}
	fmt.Fprintf(out, "stock configurations (%d): %s\n", len(stock), strings.Join(stock, ", "))
	fmt.Fprintf(out, "paddle settings tried:\n")
	for _, c := range p.candidates {
		fmt.Fprintf(out, "  %-18s %s (%s)\n", c.name, c.settings, c.why)
	}
	fmt.Fprintf(out, "reference: %s (knows every job's duration; not deployable)\n\n", replay.Clairvoyant)
}

// progress reports on stderr as each window-seed finishes, with an
// estimate of the whole replay from the first. replay.Replay calls logf
// once per configuration, so perSeed calls are one seed of a window.
type progress struct {
	w                       io.Writer
	perSeed, seeds, windows int
	window, calls           int
	began                   time.Time
}

func (g *progress) logf(string, ...interface{}) {
	g.calls++
	if g.calls%g.perSeed != 0 {
		return
	}
	done := g.calls / g.perSeed
	elapsed := time.Since(g.began)
	if done == 1 {
		total := time.Duration(g.seeds * g.windows)
		fmt.Fprintf(g.w, "window 1, seed 1 took %s; %d windows x %d seeds should take about %s\n",
			elapsed.Round(time.Millisecond), g.windows, g.seeds, (elapsed * total).Round(time.Second))
		return
	}
	seed := (done-1)%g.seeds + 1
	left := elapsed / time.Duration(done) * time.Duration(g.seeds*g.windows-done)
	fmt.Fprintf(g.w, "window %d/%d, seed %d/%d done (%s so far, about %s left)\n", g.window, g.windows, seed, g.seeds,
		elapsed.Round(time.Second), left.Round(time.Second))
}

// choice is the candidate the choosing part picks and how it did there.
type choice struct {
	candidate
	ratio replay.Interval
}

// choose picks, on the choosing part, the candidate with the lowest
// geometric mean of mean JCT over the best single stock configuration
// (the first in candidate order on a tie), and prints the part's table.
func (p *runPlan) choose(ws []*window) choice {
	out := p.stdout
	fmt.Fprintf(out, "Choosing part: %s (%s to %s UTC). Mean JCT, each setting over the best stock configuration of the window\n",
		windowRange(ws[0].n, ws[len(ws)-1].n), utc(ws[0].first), utc(ws[len(ws)-1].last))
	fmt.Fprintf(out, "(ratio over seeds, 95%% interval, verdict: better or worse only when the whole interval is below or above 1):\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "window\tbest stock mean JCT")
	for _, c := range p.candidates {
		fmt.Fprintf(tw, "\t%s", c.name)
	}
	fmt.Fprintln(tw)
	mean := pairedOf(ws, func(w *window) replay.Paired { return w.mean })
	for _, w := range ws {
		fmt.Fprintf(tw, "%s\t%s", w.label(), bestStockCell(w.rep))
		for _, c := range p.candidates {
			fmt.Fprintf(tw, "\t%s", cell(replay.WindowRatio(w.mean, c.name)))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "geometric mean / best stock per window (oracle)\t")
	for _, c := range p.candidates {
		iv, _, _ := replay.GeoMeanRatio(mean, c.name, replay.AgainstBestPerWindow)
		fmt.Fprintf(tw, "\t%s", cell(iv))
	}
	fmt.Fprintln(tw)
	single := replay.BestSingle(mean)
	fmt.Fprintf(tw, "geometric mean / best single stock (%s)\t", single)
	var best choice
	for i, c := range p.candidates {
		iv, _, _ := replay.GeoMeanRatio(mean, c.name, replay.AgainstBestSingle)
		fmt.Fprintf(tw, "\t%s", cell(iv))
		if i == 0 || less(iv.Point, best.ratio.Point) {
			best = choice{c, iv}
		}
	}
	fmt.Fprintln(tw)
	tw.Flush()
	ref, _, _ := replay.GeoMeanRatio(mean, replay.Clairvoyant, replay.AgainstBestSingle)
	fmt.Fprintf(out, "reference / best single stock: %s; lower bound / best single stock: %s\n", cell(ref), boundRatio(mean, single))
	fmt.Fprintf(out, "chosen: %s (%s), the lowest geometric mean against the best single stock configuration\n\n", best.name, best.settings)
	return best
}

// less orders ratios for the choice: NaN (no baseline) after everything,
// +Inf (a job never started) after every finite ratio.
func less(a, b float64) bool {
	switch {
	case math.IsNaN(a):
		return false
	case math.IsNaN(b):
		return true
	}
	return a < b
}

// judge prints the judging part's table for the chosen setting and the
// verdict.
func (p *runPlan) judge(ws []*window, c choice) {
	out := p.stdout
	fmt.Fprintf(out, "Judging part: %s (%s to %s UTC). %s, chosen above, over stock:\n",
		windowRange(ws[0].n, ws[len(ws)-1].n), utc(ws[0].first), utc(ws[len(ws)-1].last), c.name)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "window\tbest stock mean JCT\tmean JCT / best stock\tp95 JCT / best stock\n")
	for _, w := range ws {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", w.label(), bestStockCell(w.rep), cell(replay.WindowRatio(w.mean, c.name)), cell(replay.WindowRatio(w.p95, c.name)))
	}
	mean := pairedOf(ws, func(w *window) replay.Paired { return w.mean })
	p95 := pairedOf(ws, func(w *window) replay.Paired { return w.p95 })
	oMean, _, skipped := replay.GeoMeanRatio(mean, c.name, replay.AgainstBestPerWindow)
	oP95, _, _ := replay.GeoMeanRatio(p95, c.name, replay.AgainstBestPerWindow)
	sMean, singleMean, _ := replay.GeoMeanRatio(mean, c.name, replay.AgainstBestSingle)
	sP95, singleP95, _ := replay.GeoMeanRatio(p95, c.name, replay.AgainstBestSingle)
	rMean, _, _ := replay.GeoMeanRatio(mean, replay.Clairvoyant, replay.AgainstBestSingle)
	rP95, _, _ := replay.GeoMeanRatio(p95, replay.Clairvoyant, replay.AgainstBestSingle)
	fmt.Fprintf(tw, "geometric mean / best stock per window (oracle)\t\t%s\t%s\n", cell(oMean), cell(oP95))
	fmt.Fprintf(tw, "geometric mean / best single stock (mean: %s, p95: %s)\t\t%s\t%s\n", singleMean, singleP95, cell(sMean), cell(sP95))
	fmt.Fprintf(tw, "reference / best single stock\t\t%s\t%s\n", cell(rMean), cell(rP95))
	fmt.Fprintf(tw, "lower bound / best single stock\t\t%s\t%s\n", boundRatio(mean, singleMean), boundRatio(p95, singleP95))
	tw.Flush()
	if skipped > 0 {
		fmt.Fprintf(out, "(%d judging windows where no stock configuration started every job under every seed are left out)\n", skipped)
	}
	fmt.Fprintf(out, "\nVerdict: %s\n", decide(sMean, sP95).say(c, singleMean, sMean, sP95))
	fmt.Fprintf(out, "Rule: %s\n", verdictRule)
}

// verdictRule is the rule decide applies, as printed and documented
// (docs/paddle-replay.md, "The verdict").
const verdictRule = "on the judging part, the chosen setting's geometric mean ratio to the best single stock configuration, with its 95% interval: " +
	"turn paddle on if the mean JCT interval lies entirely below 1 and the p95 JCT interval's upper end is at most 1.05; " +
	"keep stock if the mean JCT interval lies entirely above 1 or paddle left a job unstarted; " +
	"mixed if mean JCT is shorter but p95 may be more than 5% longer (not turned on); " +
	"otherwise no difference shown (the interval spans 1: a tie)."

// verdict is decide's outcome.
type verdict int

const (
	noVerdict verdict = iota
	turnOn
	noDifference
	mixed
	keepStock
)

// decide applies the verdict rule to the judged ratios (chosen setting
// over the best single stock configuration) of mean and p95 JCT.
func decide(mean, p95 replay.Interval) verdict {
	switch {
	case math.IsNaN(mean.Point) || math.IsNaN(mean.Hi):
		return noVerdict
	case math.IsInf(mean.Point, 1) || mean.Lo > 1:
		return keepStock
	case mean.Hi < 1 && p95.Hi <= p95Tolerance:
		return turnOn
	case mean.Hi < 1:
		return mixed
	}
	return noDifference
}

func (v verdict) say(c choice, single string, mean, p95 replay.Interval) string {
	figures := fmt.Sprintf("mean JCT %s, p95 JCT %s of the best single stock configuration's", cell(mean), cell(p95))
	switch v {
	case turnOn:
		return fmt.Sprintf("turn paddle on with %s (%s): %s", c.settings, c.name, figures)
	case keepStock:
		return fmt.Sprintf("keep stock (%s): %s with %s", single, c.name, figures)
	case mixed:
		return fmt.Sprintf("mixed, not turned on: %s shortens mean JCT but its p95 may be more than %.0f%% longer: %s", c.name, 100*(p95Tolerance-1), figures)
	case noDifference:
		return fmt.Sprintf("no difference shown: %s against stock is a tie on this history: %s", c.name, figures)
	}
	return "none: no stock configuration started every job of a judging window; the cluster (--nodes) is too small for this history"
}

func pairedOf(ws []*window, f func(*window) replay.Paired) []replay.Paired {
	out := make([]replay.Paired, len(ws))
	for i, w := range ws {
		out[i] = f(w)
	}
	return out
}

// boundRatio is replay.BoundRatio over the windows' figure (their mean or
// p95 JCT), as a table cell.
func boundRatio(ps []replay.Paired, config string) string {
	if r := replay.BoundRatio(ps, config); !math.IsNaN(r) {
		return fmt.Sprintf("%.3f", r)
	}
	return "-"
}

// bestStockCell is the window's best stock mean JCT (means over seeds) and
// which configuration had it.
func bestStockCell(rep *replay.Report) string {
	m, ok := rep.BestStock()
	if !ok {
		return "- (every stock configuration left a job unstarted)"
	}
	return fmt.Sprintf("%.2f h (%s)", m.MeanJCT/3600, m.Config)
}

// windowRange names windows a to b.
func windowRange(a, b int) string {
	if a == b {
		return fmt.Sprintf("window %d", a)
	}
	return fmt.Sprintf("windows %d-%d", a, b)
}

// cell is a ratio with its interval and verdict, with as many decimals as
// it takes (up to 6) for a ratio judged better or worse to show which side
// of 1 its interval lies: "1.000 [1.000, 1.000] worse" would hide it.
func cell(iv replay.Interval) string {
	switch {
	case math.IsNaN(iv.Point):
		return "-"
	case math.IsInf(iv.Point, 1):
		return "loss (a job never started)"
	}
	v := iv.Verdict()
	digits := 3
	for ; digits < 6 && v != "tie"; digits++ {
		one := strconv.FormatFloat(1, 'f', digits, 64)
		if strconv.FormatFloat(iv.Lo, 'f', digits, 64) != one && strconv.FormatFloat(iv.Hi, 'f', digits, 64) != one {
			break
		}
	}
	return fmt.Sprintf("%.*f [%.*f, %.*f] %s", digits, iv.Point, digits, iv.Lo, digits, iv.Hi, v)
}
