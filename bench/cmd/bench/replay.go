package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
	"github.com/volcano-paddle/volcano-paddle/internal/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

// paddleHoldBack is paddle with the starvation guard it had before the
// reservation, replayed to measure one against the other.
const paddleHoldBack = "paddle-holdback"

// paddleFIFO is paddle without paddle.smallGangsFirst, replayed to measure
// that ordering.
const paddleFIFO = "paddle-fifo"

// paddleAfter30m is paddle with the starvation threshold it had before the
// replay chose 4h; paddleNoGuard is paddle without aging or guard. They
// show what the threshold and the guard buy and cost.
const (
	paddleAfter30m = "paddle-after30m"
	paddleNoGuard  = "paddle-noguard"
)

// defaultReplayRuns: each window is replayed this many times and the
// report averages them; runs of a saturated window differ several-fold in
// idle GPU-hours (replay.Repeat). maxReplayRuns bounds -replay-runs.
const (
	defaultReplayRuns = 3
	maxReplayRuns     = 20
)

// guardWindow is a window where large gangs wait past paddle's starvation
// threshold but the queue is not saturated: there the old hold-back left
// GPUs idle (14 to 17 GPU-hours a waiting job would fit, mean of 3 runs) and the
// reservation replacing it shows what it saves. In the 12500 windows the
// guard hardly acts; in saturated ones every job starves, the hold-back
// holds nothing and only the reservation bounds the wait
// (docs/scheduler-plugin.md, What the guard costs).
var guardWindow = replayWindow(quality.PCIeNVLinkPairs, 45000, 300)

// replayWindow is a trace window on racks of 4 nodes, sized for load 0.9,
// 30% PS jobs, seed 1.
func replayWindow(p quality.Preset, start, jobs int) replay.Options {
	return replay.Options{Preset: p, NodesPerRack: 4, Start: start, Jobs: jobs, Load: 0.9, PSShare: 0.3, Seed: 1}
}

// parseWindows reads -windows: PRESET:START+JOBS, comma-separated.
func parseWindows(s string) ([]replay.Options, error) {
	var out []replay.Options
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		name, span, ok := strings.Cut(w, ":")
		startS, jobsS, ok2 := strings.Cut(span, "+")
		if !ok || !ok2 {
			return nil, fmt.Errorf("%q: want PRESET:START+JOBS, e.g. 8xA100-NVSwitch:40000+300", w)
		}
		var preset *quality.Preset
		for i := range quality.Presets {
			if quality.Presets[i].Name == name {
				preset = &quality.Presets[i]
			}
		}
		if preset == nil {
			return nil, fmt.Errorf("%q: no preset %q (presets: %s)", w, name, presetNames())
		}
		start, err1 := strconv.Atoi(startS)
		jobs, err2 := strconv.Atoi(jobsS)
		if err1 != nil || err2 != nil || start < 0 || jobs < 2 {
			return nil, fmt.Errorf("%q: START must be a trace index (0 or more) and JOBS at least 2", w)
		}
		out = append(out, replayWindow(*preset, start, jobs))
	}
	return out, nil
}

func presetNames() string {
	names := make([]string, len(quality.Presets))
	for i, p := range quality.Presets {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// Sweeps (-sweep): one lever, tuning windows only.
const (
	sweepSLA    = "sla"
	sweepPaddle = "paddle"
)

// fullReplayRuns: the full mode replays every window this many times.
const fullReplayRuns = 5

// Paddle at other starvation thresholds, for the paddle sweep.
var paddleSweepAfter = []string{"1h", "2h", "8h"}

// replayConfigs: every stock configuration and paddle; with variants,
// paddle without small-gangs-first, with the old hold-back guard, at the
// former 30m threshold and without aging or guard.
func replayConfigs(variants bool) ([]replay.Config, error) {
	stockPath, ours, err := baseConfigs()
	if err != nil {
		return nil, err
	}
	cs, err := replay.StockConfigs(stockPath, replay.DefaultSLAWait)
	if err != nil {
		return nil, err
	}
	cs = append(cs, ours)
	if !variants {
		return cs, nil
	}
	return append(cs,
		replay.WithPaddleArgs(ours, paddleFIFO, "paddle with paddle.smallGangsFirst: false (waiting gangs in Volcano's creation order)",
			map[string]interface{}{paddle.ArgSmallGangsFirst: false}),
		replay.WithPaddleArgs(ours, paddleHoldBack, "paddle with paddle.starvationGuard: holdBack (the guard before the reservation)",
			map[string]interface{}{paddle.ArgStarvationGuard: paddle.GuardHoldBack}),
		replay.WithPaddleArgs(ours, paddleAfter30m, "paddle with paddle.starvationAfter: 30m (the default before the replay chose 4h)",
			map[string]interface{}{paddle.ArgStarvationAfter: "30m"}),
		replay.WithPaddleArgs(ours, paddleNoGuard, "paddle with paddle.starvationAfter: 0 (no aging, no guard, no smallGangsFirst)",
			map[string]interface{}{paddle.ArgStarvationAfter: "0"})), nil
}

// baseConfigs: the Helm chart's configuration file and deploy/paddle's.
func baseConfigs() (string, replay.Config, error) {
	stockPath, err := localcluster.StockSchedulerConf()
	if err != nil {
		return "", replay.Config{}, err
	}
	oursPath, err := localcluster.DeploySchedulerConf()
	if err != nil {
		return "", replay.Config{}, err
	}
	ours, err := replay.PaddleConfig(oursPath)
	return stockPath, ours, err
}

// sweepConfigs are the configurations of a sweep: the sla plugin at each
// waiting time on the Helm tiers and on binpack + task-topology; or paddle
// at other starvation thresholds, without smallGangsFirst and without a
// guard, beside the best stock ordering levers.
func sweepConfigs(sweep string) ([]replay.Config, error) {
	stockPath, ours, err := baseConfigs()
	if err != nil {
		return nil, err
	}
	if sweep == sweepSLA {
		return replay.SLASweepConfigs(stockPath, replay.SLAWaits)
	}
	cs := []replay.Config{ours}
	for _, after := range paddleSweepAfter {
		cs = append(cs, replay.WithPaddleArgs(ours, "paddle-after"+after, "paddle with paddle.starvationAfter: "+after,
			map[string]interface{}{paddle.ArgStarvationAfter: after}))
	}
	return append(cs,
		replay.WithPaddleArgs(ours, paddleFIFO, "paddle with paddle.smallGangsFirst: false (waiting gangs in Volcano's creation order)",
			map[string]interface{}{paddle.ArgSmallGangsFirst: false}),
		replay.WithPaddleArgs(ours, paddleNoGuard, "paddle with paddle.starvationAfter: 0 (no aging, no guard, no smallGangsFirst)",
			map[string]interface{}{paddle.ArgStarvationAfter: "0"})), nil
}

// windowsOf: the windows a plan replays, the held-out ones from the rule
// over the trace's length.
func windowsOf(p *plan, data string) ([]replay.Options, error) {
	if p.replays != nil {
		return p.replays, nil
	}
	var out []replay.Options
	if p.tuning {
		out = append(out, tuningWindows()...)
	}
	if p.heldOut {
		trace, err := quality.LoadPhilly(filepath.Join(data, "philly.csv"))
		if err != nil {
			return nil, err
		}
		held, err := heldOutWindows(len(trace))
		if err != nil {
			return nil, err
		}
		out = append(out, held...)
	}
	return out, nil
}

func runReplay(p *plan, r *report) error {
	cfgs, err := replayConfigs(p.paddleVariants)
	if p.sweep != "" {
		cfgs, err = sweepConfigs(p.sweep)
	}
	if err != nil {
		return err
	}
	data := filepath.Join(r.root, "bench", "quality", "testdata", "pollux")
	windows, err := windowsOf(p, data)
	if err != nil {
		return err
	}
	for _, o := range windows {
		rep, err := replay.Repeat(o, data, cfgs, p.replayRuns, logf)
		if err != nil {
			return err
		}
		logf("replay %s:\n%s", o.Preset.Name, rep.String())
		r.Replay = append(r.Replay, rep)
	}
	return nil
}

func hours(s float64) string { return fmt.Sprintf("%.2f", s/3600) }

func (r *report) writeReplay(b *strings.Builder, dir string) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	w("## Job completion time: a Philly trace replay\n\n")
	w("What users feel. A contiguous window of the Philly trace (`philly.csv`, jobs in submission order,\n")
	w("GPU counts as recorded, 30%% of jobs in PS mode, pods of 1, 2, 4 or 8 GPUs) arrives at its recorded\n")
	w("times on a cluster sized so that the offered load during the arrivals is about 0.9; Volcano's real\n")
	w("scheduler (the in-process harness, `bench/simsched`) runs one allocate cycle whenever something\n")
	w("changed (an arrival, a completion, a gang passing paddle's starvation threshold, a cycle that started\n")
	w("jobs); a placed gang runs for its recorded duration stretched by the cost model's slowdown for the\n")
	w("placement it got (section 2), then leaves. Same trace, seed and cluster for every configuration, in\n")
	w("one run (`bench/replay`; command: `go run ./bench/cmd/bench -mode %s -skip allocate,quality,cluster,jobsize`).\n", r.Mode)
	w("Another window: add `-windows 8xA100-NVSwitch:30000+300` (PRESET:START+JOBS, comma-separated) and\n")
	w("`-out DIR/benchmarks.md` to keep this page.\n\n")
	w("Configurations: **stock** is Volcano's Helm default; the **stock-binpack*** variants are the best a\n")
	w("Volcano operator can configure without us (nodeorder's spreading off and binpack on GPUs at weight\n")
	w("10; plus `task-topology` with `ps,worker` / `trainer` affinity annotations; or plus\n")
	w("`network-topology-aware` with the racks as HyperNodes and every job hard-limited to the top tier, so\n")
	w("the allocate action tries one rack first). The best stock configuration below is the one with the\n")
	w("lowest mean JCT in the same run. **lower-bound**: every job alone at its best placement, no waiting.\n")
	w("Volcano breaks ties between equally scored nodes at random; the replay seeds that per configuration,\n")
	w("but runs of the same window still differ (its sessions also walk Go maps): stock's mean JCT on the A100\n")
	w("window ranged from 4.33 h to 4.57 h over five runs, and a saturated window's idle GPU-hours can differ\n")
	w("several-fold. So each window is replayed several times (`-replay-runs`, default %d), every figure is\n", defaultReplayRuns)
	w("the mean, and each window lists the range of the headline figures. task-topology\n")
	w("together with hard network topology panics in Volcano v1.14.1 (see `bench/replay/configs.go`), so that\n")
	w("combination is not replayed.\n\n")
	w("Each window's *Starvation guard* line compares the reservation (paddle's guard) with the old hold-back.\n")
	w("They differ only where large gangs wait past the threshold while the queue is not saturated, as in the\n")
	w("window 8xPCIe-NVLink-pairs 45000 to 45299 of both modes; saturated windows, where every job starves, are\n")
	w("in [scheduler-plugin.md](scheduler-plugin.md), *What the guard costs*.\n\n")
	w("**Who waits, and why the Helm default can win on mean JCT.** Job by job, the replay shows that the\n")
	w("about one-hour median wait of paddle and of every binpack configuration is queueing for capacity,\n")
	w("not an artifact: their idle GPU-hours are near zero, so no GPU a waiting job could use was free.\n")
	w("Binpack-style placement keeps whole nodes free, so 8-GPU gangs start on arrival and then hold their\n")
	w("GPUs for days (Philly's large jobs are its long ones); single-GPU jobs arriving later queue behind\n")
	w("them. The Helm default spreads single-GPU pods over every node, so 8-GPU gangs find no whole node\n")
	w("and wait (hours on average, up to a day or more) while the GPUs they would use sit idle (its idle GPU-hours) and go to\n")
	w("later single-GPU jobs instead. The mean JCT counts the many small jobs, so starving the few large\n")
	w("ones by accident lowers it; the p95 and longest waits show the price. The column *mean wait, 1-GPU /\n")
	w("%d+-GPU jobs* shows this split. paddle's `smallGangsFirst` gets part of the same effect on purpose\n", replay.LargeJobGPUs)
	w("with a bound (the starvation guard); `paddle-fifo` is paddle without it. It needs a threshold above the\n")
	w("typical wait: with the former 30m (`paddle-after30m`, full mode), nearly every job of a queue whose wait is about an\n")
	w("hour counted as starving, so the order was first come, first served and reservations formed in front of\n")
	w("jobs that would have started anyway; `paddle-noguard` has no aging and no guard.\n\n")
	for _, rep := range r.Replay {
		r.writeReplayOne(b, dir, rep)
	}
}

func (r *report) writeReplayOne(b *strings.Builder, dir string, rep *replay.Report) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	id := fmt.Sprintf("%s-%d-%d", strings.ToLower(rep.Options.Preset.Name), rep.Options.Start, rep.Options.Jobs)
	w("### %s, trace jobs %d to %d\n\n", rep.Options.Preset.Name, rep.Options.Start, rep.Options.Start+rep.Options.Jobs-1)
	w("%s. Replayed in %s on %s.", rep.Workload, rep.Took.Round(1e9), r.Machine)
	if rep.Runs > 1 {
		w(" Every figure is the mean of %d replays of the window: Volcano's tie-breaks and map walks make\n", rep.Runs)
		w("runs differ, a saturated window's idle GPU-hours several-fold (ranges below the tables).")
	}
	w("\n\n")
	w("| config | mean JCT h | median | p95 | p99 | mean wait h | median | p95 | p99 | longest wait h | mean wait h, 1-GPU / %d+-GPU jobs | makespan h | GPU util | idle GPU-h* | rank crossings node / rack (excess**) | cycles |\n", replay.LargeJobGPUs)
	w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range rep.Metrics {
		cross := "-"
		if m.MultiPodCollective > 0 {
			cross = fmt.Sprintf("%.2f / %.2f (%.2f / %.2f)", m.NodeCrossings, m.RackCrossings, m.ExcessNodeX, m.ExcessRackX)
		}
		w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %.0f%% | %.0f | %s | %d |\n", m.Config,
			hours(m.MeanJCT), hours(m.MedianJCT), hours(m.P95JCT), hours(m.P99JCT),
			hours(m.MeanWait), hours(m.MedianWait), hours(m.P95Wait), hours(m.P99Wait), hours(m.LongestWait),
			hours(m.MeanWaitSingleGPU), hours(m.MeanWaitLarge),
			hours(m.Makespan), 100*m.Utilisation, m.IdleGPUHours, cross, m.Cycles)
	}
	w("\n\\* GPU-hours free that waiting jobs would fit: at each moment, the GPUs of every waiting job whose\n")
	w("pods fit the free GPUs node by node, at most the free GPUs (it waited for ordering or a guard, not for\n")
	w("capacity; free GPUs spread too thinly for any waiting pod are fragmentation and not counted). \\*\\* Boundaries between consecutive trainer\n")
	w("ranks of a collective job of 2+ pods that cross a node / a rack, per job; excess: above the minimum\n")
	w("the job's node / rack count allows (nodes - 1).\n\n")
	best, okBest := rep.BestStock()
	ours, okOurs := rep.Get(replay.Paddle)
	if okBest && okOurs {
		w("paddle / best stock (%s), below 1 is better (utilisation: above 1):\n\n", best.Config)
		w("| mean JCT | median JCT | p95 JCT | p99 JCT | mean wait | p95 wait | longest wait | makespan | GPU util | idle GPU-h |\n|---|---|---|---|---|---|---|---|---|---|\n")
		w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n\n",
			ratioOf(ours.MeanJCT, best.MeanJCT), ratioOf(ours.MedianJCT, best.MedianJCT), ratioOf(ours.P95JCT, best.P95JCT),
			ratioOf(ours.P99JCT, best.P99JCT), ratioOf(ours.MeanWait, best.MeanWait), ratioOf(ours.P95Wait, best.P95Wait),
			ratioOf(ours.LongestWait, best.LongestWait), ratioOf(ours.Makespan, best.Makespan), ratioOf(ours.Utilisation, best.Utilisation),
			ratioOf(ours.IdleGPUHours, best.IdleGPUHours))
		if tuned, ok := rep.BestTuned(); ok && tuned.Config != best.Config {
			w("paddle / best tuned stock (%s): mean JCT %s, p95 JCT %s, mean wait %s, longest wait %s, idle GPU-h %.0f vs %.0f.\n\n",
				tuned.Config, ratioOf(ours.MeanJCT, tuned.MeanJCT), ratioOf(ours.P95JCT, tuned.P95JCT), ratioOf(ours.MeanWait, tuned.MeanWait),
				ratioOf(ours.LongestWait, tuned.LongestWait), ours.IdleGPUHours, tuned.IdleGPUHours)
		}
		if stock, ok := rep.Get(replay.Stock); ok {
			w("paddle / stock (Helm default): mean JCT %s, p95 JCT %s, mean wait %s, longest wait %s.\n\n",
				ratioOf(ours.MeanJCT, stock.MeanJCT), ratioOf(ours.P95JCT, stock.P95JCT), ratioOf(ours.MeanWait, stock.MeanWait),
				ratioOf(ours.LongestWait, stock.LongestWait))
		}
	}
	if hold, ok := rep.Get(paddleHoldBack); ok && okOurs {
		w("Starvation guard (paddle.starvationAfter %gh): the reservation left %.1f GPU-hours idle that a waiting\n",
			paddle.DefaultStarvationAfter.Hours(), ours.IdleGPUHours)
		w("job would fit, the old hold-back %.1f. Longest wait %s h with the reservation, %s h with the hold-back",
			hold.IdleGPUHours, hours(ours.LongestWait), hours(hold.LongestWait))
		if none, ok := rep.Get(paddleNoGuard); ok {
			w(", %s h with\nno guard (mean wait of %d+-GPU jobs %s, %s and %s h)", hours(none.LongestWait), replay.LargeJobGPUs, hours(ours.MeanWaitLarge), hours(hold.MeanWaitLarge), hours(none.MeanWaitLarge))
		}
		w("; mean JCT %s, %s h.\n", hours(ours.MeanJCT), hours(hold.MeanJCT))
		if old, ok := rep.Get(paddleAfter30m); ok {
			w("With the former 30m threshold: mean JCT %s h, idle %.1f GPU-h, longest wait %s h.\n", hours(old.MeanJCT), old.IdleGPUHours, hours(old.LongestWait))
		}
		w("\n")
	}
	if rep.Runs > 1 && len(rep.Spread) > 0 {
		w("Over the %d runs (lowest to highest): mean JCT h, p95 JCT h, longest wait h, idle GPU-h.\n\n", rep.Runs)
		w("| config | mean JCT | p95 JCT | longest wait | idle GPU-h |\n|---|---|---|---|---|\n")
		for _, m := range rep.Metrics {
			sp, ok := rep.Spread[m.Config]
			if !ok || m.Config == replay.LowerBound {
				continue
			}
			w("| %s | %s to %s | %s to %s | %s to %s | %.1f to %.1f |\n", m.Config, hours(sp.MeanJCT.Min), hours(sp.MeanJCT.Max),
				hours(sp.P95JCT.Min), hours(sp.P95JCT.Max), hours(sp.LongestWait.Min), hours(sp.LongestWait.Max),
				sp.IdleGPUHours.Min, sp.IdleGPUHours.Max)
		}
		w("\n")
	}
	w("| config | what it is |\n|---|---|\n")
	for _, m := range rep.Metrics {
		note := rep.Notes[m.Config]
		if m.Config == replay.LowerBound {
			note = "each job alone at its best placement from its arrival"
		}
		w("| %s | %s |\n", m.Config, note)
	}
	w("\n")
	cdf, util := r.replayCharts(rep)
	_ = os.WriteFile(filepath.Join(dir, "bench-replay-jct-"+id+".svg"), []byte(cdf.SVG()), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "bench-replay-util-"+id+".svg"), []byte(util.SVG()), 0o644)
	w("![JCT CDF](bench-replay-jct-%s.svg)\n\n![GPU utilisation over time](bench-replay-util-%s.svg)\n\n", id, id)
}

// replayCharts: the CDF of JCT (log hours) and GPU utilisation over time,
// for stock, the best stock configuration, paddle and the lower bound.
func (r *report) replayCharts(rep *replay.Report) (lineChart, lineChart) {
	shown := []string{replay.Stock}
	if best, ok := rep.BestStock(); ok && best.Config != replay.Stock {
		shown = append(shown, best.Config)
	}
	shown = append(shown, replay.Paddle, replay.LowerBound)
	cdf := lineChart{Title: "JCT CDF, " + rep.Options.Preset.Name, XLabel: "job completion time (hours, log scale)", YLabel: "share of jobs", LogX: true}
	util := lineChart{Title: "GPUs in use, " + rep.Options.Preset.Name, XLabel: "hours since the first arrival", YLabel: "share of GPUs in use"}
	for _, name := range shown {
		m, ok := rep.Get(name)
		if !ok {
			continue
		}
		var xs, ys []float64
		for q, v := range m.JCTQuantiles {
			xs = append(xs, math.Max(v/3600, 0.01))
			ys = append(ys, float64(q+1)/100)
		}
		cdf.Series = append(cdf.Series, lineSeries{Name: name, X: xs, Y: ys})
		if len(m.UtilisationOverTime) == 0 {
			continue
		}
		xs, ys = nil, nil
		for k, v := range m.UtilisationOverTime {
			xs = append(xs, (float64(k)+0.5)*m.UtilBin/3600)
			ys = append(ys, v)
		}
		util.Series = append(util.Series, lineSeries{Name: name, X: xs, Y: ys})
	}
	return cdf, util
}
