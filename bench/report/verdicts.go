package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/volcano-paddle/volcano-paddle/bench/replay"
)

// verdictGroup is the seeded windows of one window set and node type.
type verdictGroup struct {
	kind, preset string
	reps         []*replay.Report
}

// verdictGroups are the run's windows replayed under several seeds, by
// window set and node type.
func (r *Report) verdictGroups() []*verdictGroup {
	var groups []*verdictGroup
	for _, rep := range r.Replay {
		if len(rep.PerSeed) < 2 {
			continue
		}
		k, p := r.kindOf(rep), rep.Options.Preset.Name
		i := slices.IndexFunc(groups, func(g *verdictGroup) bool { return g.kind == k && g.preset == p })
		if i < 0 {
			groups = append(groups, &verdictGroup{kind: k, preset: p})
			i = len(groups) - 1
		}
		groups[i].reps = append(groups[i].reps, rep)
	}
	return groups
}

// writeVerdicts is the judgement of a run whose windows were replayed
// under several workload seeds (replay.Report.PerSeed): per node type and
// window set, paddle's geometric mean ratio to stock with its interval,
// against the best stock configuration per window (an oracle) and against
// the best single stock configuration of that node type, for mean and p95
// JCT; the clairvoyant reference and the lower bound beside them; then
// every window's ratio with its interval. Runs saved before seeds varied
// have nothing here.
func (r *Report) writeVerdicts(b *strings.Builder) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	type group = verdictGroup
	groups := r.verdictGroups()
	if len(groups) == 0 {
		return
	}
	w("### Verdicts, with intervals\n\n")
	w("Each window is replayed under %d workload seeds (job shapes, PS share, models, elastic and checkpoint\n", len(groups[0].reps[0].PerSeed))
	w("draws; every configuration on the same draw of a seed). A ratio is paddle's mean over seeds over the\n")
	w("baseline's; per node type the geometric mean over windows. Intervals are 95%% bootstrap intervals\n")
	w("(per window over seeds; per node type over windows, then seeds), the best stock configuration chosen\n")
	w("again in every resample. A ratio whose interval spans 1 is a **tie**; a window where paddle left a job\n")
	w("unstarted under any seed is a loss. *Best per window* is an oracle (the stock configuration that did\n")
	w("best on that window, known afterwards); *best single* is the one stock configuration with the best\n")
	w("geometric mean on that node type's windows, what an operator could have deployed. The clairvoyant\n")
	w("reference (%s: knows every job's duration, shortest remaining GPU-time first, no\n", replay.Clairvoyant)
	w("preemption; not deployable) and the lower bound (no configuration can beat it) show how much room is left.\n\n")
	w("| windows | node type | figure | paddle / best per window | paddle / best single (which) | reference / best single | lower bound / best single |\n")
	w("|---|---|---|---|---|---|---|\n")
	for _, g := range groups {
		for _, f := range []replay.Figure{replay.MeanJCTFigure, replay.P95JCTFigure} {
			ps := pairedOf(g.reps, f)
			if len(ps) == 0 {
				continue
			}
			oracle, _, skipped := replay.GeoMeanRatio(ps, replay.Paddle, replay.AgainstBestPerWindow)
			single, name, _ := replay.GeoMeanRatio(ps, replay.Paddle, replay.AgainstBestSingle)
			ref, _, _ := replay.GeoMeanRatio(ps, replay.Clairvoyant, replay.AgainstBestSingle)
			note := ""
			if skipped > 0 {
				note = fmt.Sprintf(" (%d windows without a baseline left out)", skipped)
			}
			w("| %s (%d) | %s | %s | %s | %s (%s) | %s | %s |\n", g.kind, len(ps), g.preset, f.Name, verdictCell(oracle)+note,
				verdictCell(single), name, verdictCell(ref), boundRatio(ps, name))
		}
	}
	r.writeTargets(b, groups)
	r.writeVariantVerdicts(b, groups)
	r.writeBeforeVerdicts(b, groups)
	r.writePooled(b, groups)
	w("\n| window | paddle / best per window, mean JCT | p95 JCT | paddle-queues / best per window, mean |\n|---|---|---|---|\n")
	for _, g := range groups {
		for _, rep := range g.reps {
			mean, err1 := replay.PairedOf(rep, replay.MeanJCTFigure)
			p95, err2 := replay.PairedOf(rep, replay.P95JCTFigure)
			if err1 != nil || err2 != nil {
				continue
			}
			queues := "-"
			if _, ok := mean.Values[paddleQueues]; ok {
				queues = verdictCell(replay.WindowRatio(mean, paddleQueues))
			}
			w("| %s: %s | %s | %s | %s |\n", g.kind, mean.Window, verdictCell(replay.WindowRatio(mean, replay.Paddle)),
				verdictCell(replay.WindowRatio(p95, replay.Paddle)), queues)
		}
	}
	w("\n")
}

// Targets below stock, per workload and figure: the share of the stock
// baseline paddle is asked to reach where the lower bound leaves room
// (replay.Target): issue 38's targets for the trace as it is (mean JCT) and
// for the elastic and checkpoint workload (mean and p95 JCT).
var (
	traceTargets = []figureTarget{{replay.MeanJCTFigure, 0.95}}
	flexTargets  = []figureTarget{{replay.MeanJCTFigure, 0.80}, {replay.P95JCTFigure, 0.95}}
)

type figureTarget struct {
	figure replay.Figure
	shrink float64
}

// writeTargets: paddle against targets below the best stock configuration
// (per window and best single), T = min(S, max(shrink*S, (S+L)/2)) with L
// the window's lower bound; at most 1 meets the target.
func (r *Report) writeTargets(b *strings.Builder, groups []*verdictGroup) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	w("\nAgainst targets below stock: on a window whose stock baseline is S and whose lower bound is L, the\n")
	w("target is T = min(S, max(f S, (S + L) / 2)), f of the baseline where the bound leaves room, halfway to\n")
	w("the bound where it does not. Paddle / T at most 1 meets it.\n\n")
	w("| windows | node type | figure | f | paddle / T, best per window | paddle / T, best single (which) |\n|---|---|---|---|---|---|\n")
	for _, g := range groups {
		targets := traceTargets
		if g.reps[0].Options.Flex.On() {
			targets = flexTargets
		}
		for _, t := range targets {
			ps := pairedOf(g.reps, t.figure)
			if len(ps) == 0 {
				continue
			}
			target := replay.Target{Shrink: t.shrink}
			oracle, _ := replay.GeoMeanRatioToTarget(ps, replay.Paddle, replay.AgainstBestPerWindow, target)
			single, name := replay.GeoMeanRatioToTarget(ps, replay.Paddle, replay.AgainstBestSingle, target)
			w("| %s (%d) | %s | %s | %.2f | %s | %s (%s) |\n", g.kind, len(ps), g.preset, t.figure.Name, t.shrink,
				verdictCell(oracle), verdictCell(single), name)
		}
	}
}

// writeVariantVerdicts: every other paddle configuration the run replayed
// (its variants, paddle on queues or priorities) against paddle itself, paired by seed, per node type and window set: what
// a sweep's decision rule reads (docs/benchmarks.md).
func (r *Report) writeVariantVerdicts(b *strings.Builder, groups []*verdictGroup) {
	var variants []string
	for _, g := range groups {
		for _, m := range g.reps[0].Metrics {
			if m.Role == replay.RolePaddle && m.Config != replay.Paddle && m.Config != PaddleBefore && !slices.Contains(variants, m.Config) {
				variants = append(variants, m.Config)
			}
		}
	}
	if len(variants) == 0 {
		return
	}
	fmt.Fprintf(b, "\n| windows | node type | variant | variant / paddle, mean JCT | p95 JCT |\n|---|---|---|---|---|\n")
	for _, g := range groups {
		mean := pairedOf(g.reps, replay.MeanJCTFigure)
		p95 := pairedOf(g.reps, replay.P95JCTFigure)
		for _, v := range variants {
			fmt.Fprintf(b, "| %s (%d) | %s | %s | %s | %s |\n", g.kind, len(mean), g.preset, v,
				verdictCell(replay.GeoMeanRatioTo(mean, v, replay.Paddle)), verdictCell(replay.GeoMeanRatioTo(p95, v, replay.Paddle)))
		}
	}
}

// writeBeforeVerdicts: paddle against paddle as an earlier run replayed
// it on the same windows and seeds (-before: AddBefore), paired by seed.
func (r *Report) writeBeforeVerdicts(b *strings.Builder, groups []*verdictGroup) {
	header := false
	for _, g := range groups {
		mean := pairedOf(g.reps, replay.MeanJCTFigure)
		p95 := pairedOf(g.reps, replay.P95JCTFigure)
		mean, p95 = withConfig(mean, PaddleBefore), withConfig(p95, PaddleBefore)
		if len(mean) == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(b, "\n| windows | node type | paddle / paddle before (%s), mean JCT | p95 JCT |\n|---|---|---|---|\n", r.Before)
			header = true
		}
		fmt.Fprintf(b, "| %s (%d) | %s | %s | %s |\n", g.kind, len(mean), g.preset,
			verdictCell(replay.GeoMeanRatioTo(mean, replay.Paddle, PaddleBefore)), verdictCell(replay.GeoMeanRatioTo(p95, replay.Paddle, PaddleBefore)))
	}
}

// writePooled: per node type and window set, each configuration's waits of
// jobs of a whole node or more, pooled over windows and seeds (their 99th
// percentile), and the GPUs it left free while jobs waited, summed: who
// holds GPUs, and what that buys the large gangs.
func (r *Report) writePooled(b *strings.Builder, groups []*verdictGroup) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	w("\nPooled over the windows and seeds of each node type: the jobs of %d GPUs or more (a whole node) that\n", replay.LargeJobGPUs)
	w("started, their 99th percentile wait, and the GPU-hours left free while any job waited, summed.\n\n")
	w("| windows | node type | config | jobs of %d+ GPUs | their p99 wait h | free GPU-h while jobs waited | jobs never started |\n|---|---|---|---|---|---|---|\n", replay.LargeJobGPUs)
	for _, g := range groups {
		for _, p := range replay.PoolRuns(g.reps) {
			p99 := "-"
			if !math.IsNaN(p.P99LargeWait) {
				p99 = hours(p.P99LargeWait)
			}
			w("| %s (%d) | %s | %s | %d | %s | %.0f | %d |\n", g.kind, len(g.reps), g.preset, p.Config, p.LargeGangs, p99, p.FreeGPUHoursWaiting, p.Unstarted)
		}
	}
}

// withConfig keeps the windows that have config.
func withConfig(ps []replay.Paired, config string) []replay.Paired {
	return slices.DeleteFunc(ps, func(p replay.Paired) bool { _, ok := p.Values[config]; return !ok })
}

// pairedOf is every window's figure per configuration and seed, with its
// lower bound.
func pairedOf(reps []*replay.Report, f replay.Figure) []replay.Paired {
	var ps []replay.Paired
	for _, rep := range reps {
		if p, err := replay.PairedOf(rep, f); err == nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// boundRatio is replay.BoundRatio as a table cell.
func boundRatio(ps []replay.Paired, config string) string {
	if r := replay.BoundRatio(ps, config); !math.IsNaN(r) {
		return fmt.Sprintf("%.2f", r)
	}
	return "-"
}

// verdictCell is a ratio with its interval and verdict.
func verdictCell(iv replay.Interval) string {
	if math.IsNaN(iv.Point) {
		return "-"
	}
	if math.IsInf(iv.Point, 1) {
		return "**loss** (a job never started)"
	}
	return fmt.Sprintf("%.3f [%.3f, %.3f] %s", iv.Point, iv.Lo, iv.Hi, iv.Verdict())
}
