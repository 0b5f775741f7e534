package replay

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
)

// How the replay judges a configuration against stock Volcano: per window,
// the ratio of its mean over seeds to the best stock configuration's, with
// a 95% interval from a bootstrap over the seeds; per node type, the
// geometric mean of the windows' ratios with an interval from a two-level
// bootstrap (windows, then seeds within each). Seeds are paired: every
// configuration replays the same draw of each seed. The best stock
// configuration is chosen again in every resample, so the intervals carry
// the choice's own luck. A seed in which a configuration left a job that
// never started scores +Inf for it: a loss for the judged configuration,
// never the best for stock.

// bootstrapResamples per interval, and the interval's level.
const (
	bootstrapResamples = 4000
	intervalLevel      = 0.95
)

// bootstrapSeed makes every interval repeat from the same figures.
const bootstrapSeed = 35

// Against names the stock baseline a ratio is taken against.
type Against string

const (
	// AgainstBestPerWindow: the stock configuration with the best mean in
	// each window, chosen knowing the outcome (an oracle no operator can
	// deploy).
	AgainstBestPerWindow Against = "best stock per window"
	// AgainstBestSingle: the one stock configuration with the best
	// geometric mean over the node type's windows (what an operator could
	// have picked for that cluster).
	AgainstBestSingle Against = "best single stock"
)

// Figure reads one metric from a configuration's figures.
type Figure struct {
	Name string
	Of   func(Metrics) float64
}

// The figures the replay judges.
var (
	MeanJCTFigure = Figure{Name: "mean JCT", Of: func(m Metrics) float64 { return m.MeanJCT }}
	P95JCTFigure  = Figure{Name: "p95 JCT", Of: func(m Metrics) float64 { return m.P95JCT }}
)

// Paired is one window's figure per configuration and seed.
type Paired struct {
	Window string
	Seeds  []int64
	// Values[config][k]: the figure under seed Seeds[k]; +Inf when a job
	// never started.
	Values map[string][]float64
	Roles  map[string]Role
	// Bound: the lower bound's figure on the window (one value: the bound
	// has no seeds of its own, it is averaged over them); NaN when the
	// report has none.
	Bound float64
}

// PairedOf collects a figure of a report's seeds (PerSeed) and its lower
// bound. A report saved before seeds varied has none and gives an error.
func PairedOf(rep *Report, f Figure) (Paired, error) {
	p := Paired{Window: fmt.Sprintf("%s %d+%d", rep.Options.Preset.Name, rep.Options.Start, rep.Options.Jobs),
		Values: map[string][]float64{}, Roles: map[string]Role{}, Bound: math.NaN()}
	if lb, ok := rep.Get(LowerBound); ok {
		p.Bound = f.Of(lb)
	}
	if len(rep.PerSeed) == 0 {
		return p, fmt.Errorf("window %s: no per-seed figures (saved before seeds varied)", p.Window)
	}
	for k, sr := range rep.PerSeed {
		p.Seeds = append(p.Seeds, sr.Seed)
		for _, m := range sr.Metrics {
			if m.Role == RoleBound {
				continue
			}
			v := f.Of(m)
			if m.Started < m.Jobs {
				v = math.Inf(1)
			}
			if len(p.Values[m.Config]) != k {
				return p, fmt.Errorf("window %s: %s has no figures for seed %d", p.Window, m.Config, p.Seeds[k-1])
			}
			p.Values[m.Config] = append(p.Values[m.Config], v)
			p.Roles[m.Config] = m.Role
		}
	}
	for c, vs := range p.Values {
		if len(vs) != len(p.Seeds) {
			return p, fmt.Errorf("window %s: %s has figures for %d of %d seeds", p.Window, c, len(vs), len(p.Seeds))
		}
	}
	return p, nil
}

// Interval is a point estimate with its 95% interval.
type Interval struct {
	Point, Lo, Hi float64
}

// Verdict of a ratio judged config / baseline (lower is better): better
// or worse only when its whole interval is below or above 1; worse too
// when the judged configuration left a job unstarted under any seed.
func (i Interval) Verdict() string {
	switch {
	case math.IsNaN(i.Point):
		return "no baseline"
	case math.IsInf(i.Point, 1):
		return "worse"
	case i.Hi < 1:
		return "better"
	case i.Lo > 1:
		return "worse"
	}
	return "tie"
}

func (i Interval) String() string {
	return fmt.Sprintf("%.3f [%.3f, %.3f]", i.Point, i.Lo, i.Hi)
}

// seedMean is the mean of vs over the seeds picked (indices into vs); NaN
// when vs has none (a configuration the window did not replay, as the
// reference in reports saved before it existed), which ratio then leaves
// out.
func seedMean(vs []float64, pick []int) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, k := range pick {
		s += vs[k]
	}
	return s / float64(len(pick))
}

// bestStock is the stock configuration with the lowest mean over the seeds
// picked, and that mean (+Inf when every stock configuration left a job
// unstarted in a picked seed).
func (p Paired) bestStock(pick []int) (string, float64) {
	best, v := "", math.Inf(1)
	for _, c := range p.stockConfigs() {
		if m := seedMean(p.Values[c], pick); m < v || best == "" {
			best, v = c, m
		}
	}
	return best, v
}

// stockConfigs are the stock configurations, in name order.
func (p Paired) stockConfigs() []string {
	var out []string
	for c, r := range p.Roles {
		if r == RoleStock {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// ratio is config's mean over the picked seeds against baseline's: +Inf
// when config left a job unstarted, NaN when the baseline did (no ratio).
func ratio(config, baseline float64) float64 {
	switch {
	case math.IsInf(baseline, 1):
		return math.NaN()
	case math.IsInf(config, 1):
		return math.Inf(1)
	}
	return config / baseline
}

func allSeeds(n int) []int {
	pick := make([]int, n)
	for k := range pick {
		pick[k] = k
	}
	return pick
}

func resample(rng *rand.Rand, n int) []int {
	pick := make([]int, n)
	for k := range pick {
		pick[k] = rng.Intn(n)
	}
	return pick
}

// WindowRatio is config's figure over the best stock configuration of the
// window (chosen in each resample), the ratio of means over seeds, with a
// bootstrap interval over the seeds.
func WindowRatio(p Paired, config string) Interval {
	vs, ok := p.Values[config]
	if !ok {
		return Interval{Point: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	at := func(pick []int) float64 {
		_, b := p.bestStock(pick)
		return ratio(seedMean(vs, pick), b)
	}
	rng := rand.New(rand.NewSource(bootstrapSeed))
	n := len(p.Seeds)
	return interval(at(allSeeds(n)), func() float64 { return at(resample(rng, n)) })
}

// GeoMeanRatio is config's geometric mean ratio over windows (of one node
// type) against a baseline, with an interval from resampling windows and
// then, within each, seeds. Windows with no baseline (every stock
// configuration left a job unstarted) are left out; skipped counts them.
// With AgainstBestSingle, single names the stock configuration chosen on
// all windows.
func GeoMeanRatio(ps []Paired, config string, against Against) (iv Interval, single string, skipped int) {
	return geoMeanRatio(ps, config, against, nil)
}

// Target is a goal below a stock baseline that still leaves room above the
// lower bound: on a window whose baseline is S and whose lower bound is L
// (Paired.Bound), T = min(S, max(Shrink*S, (S+L)/2)): Shrink of the
// baseline where the bound allows it, halfway to the bound where it does
// not, and never more than the baseline.
type Target struct {
	Shrink float64
}

// of is the target on window p whose baseline is s (s itself without a
// target; NaN without a bound, which leaves the window out).
func (t *Target) of(p Paired, s float64) float64 {
	if t == nil {
		return s
	}
	return math.Min(s, math.Max(t.Shrink*s, (s+p.Bound)/2))
}

// GeoMeanRatioToTarget is GeoMeanRatio against each window's target t
// instead of its baseline.
func GeoMeanRatioToTarget(ps []Paired, config string, against Against, t Target) (iv Interval, single string) {
	iv, single, _ = geoMeanRatio(ps, config, against, &t)
	return iv, single
}

func geoMeanRatio(ps []Paired, config string, against Against, target *Target) (iv Interval, single string, skipped int) {
	at := func(ws []pickedWindow) (float64, string) {
		chosen := ""
		if against == AgainstBestSingle {
			chosen = bestSingle(ws)
		}
		logs, k := 0.0, 0
		for _, w := range ws {
			var base float64
			if chosen != "" {
				base = seedMean(w.p.Values[chosen], w.pick)
			} else {
				_, base = w.p.bestStock(w.pick)
			}
			r := ratio(seedMean(w.p.Values[config], w.pick), target.of(w.p, base))
			if math.IsNaN(r) {
				continue
			}
			logs += math.Log(r)
			k++
		}
		if k == 0 {
			return math.NaN(), chosen
		}
		return math.Exp(logs / float64(k)), chosen
	}
	full := make([]pickedWindow, len(ps))
	for i, p := range ps {
		full[i] = pickedWindow{p, allSeeds(len(p.Seeds))}
		_, b := p.bestStock(full[i].pick)
		if math.IsInf(b, 1) {
			skipped++
		}
	}
	point, single := at(full)
	rng := rand.New(rand.NewSource(bootstrapSeed))
	iv = interval(point, func() float64 {
		ws := make([]pickedWindow, len(ps))
		for i := range ws {
			p := ps[rng.Intn(len(ps))]
			ws[i] = pickedWindow{p, resample(rng, len(p.Seeds))}
		}
		r, _ := at(ws)
		return r
	})
	return iv, single, skipped
}

// GeoMeanRatioTo is config's geometric mean ratio over windows to another
// configuration, baseline (a variant against paddle, say), paired by seed,
// with the interval of GeoMeanRatio. Windows lacking either are left out.
func GeoMeanRatioTo(ps []Paired, config, baseline string) Interval {
	var two []Paired
	for _, p := range ps {
		c, okC := p.Values[config]
		b, okB := p.Values[baseline]
		if !okC || !okB {
			continue
		}
		// The baseline as the window's only stock configuration.
		two = append(two, Paired{Window: p.Window, Seeds: p.Seeds,
			Values: map[string][]float64{config: c, baseline: b},
			Roles:  map[string]Role{config: RolePaddle, baseline: RoleStock}})
	}
	if len(two) == 0 {
		return Interval{Point: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	iv, _, _ := GeoMeanRatio(two, config, AgainstBestPerWindow)
	return iv
}

// pickedWindow is a window and the seeds a resample picked.
type pickedWindow struct {
	p    Paired
	pick []int
}

// bestSingle is the stock configuration with the lowest geometric mean of
// its figure over the windows (+Inf where it left a job unstarted), among
// the configurations every window ran.
func bestSingle(ws []pickedWindow) string {
	if len(ws) == 0 {
		return ""
	}
	best, bestLog := "", math.Inf(1)
	for _, c := range ws[0].p.stockConfigs() {
		logs := 0.0
		for _, w := range ws {
			vs, ok := w.p.Values[c]
			if !ok {
				logs = math.Inf(1)
				break
			}
			logs += math.Log(seedMean(vs, w.pick))
		}
		if best == "" || logs < bestLog {
			best, bestLog = c, logs
		}
	}
	return best
}

// BestSingle is the stock configuration with the lowest geometric mean of
// the figure over the windows, all seeds.
func BestSingle(ps []Paired) string {
	ws := make([]pickedWindow, len(ps))
	for i, p := range ps {
		ws[i] = pickedWindow{p, allSeeds(len(p.Seeds))}
	}
	return bestSingle(ws)
}

// interval is the point estimate with the percentile interval of draw's
// bootstrap resamples (NaN resamples left out; +Inf kept, a loss).
func interval(point float64, draw func() float64) Interval {
	var xs []float64
	for k := 0; k < bootstrapResamples; k++ {
		if x := draw(); !math.IsNaN(x) {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return Interval{Point: point, Lo: math.NaN(), Hi: math.NaN()}
	}
	sort.Float64s(xs)
	tail := (1 - intervalLevel) / 2
	return Interval{Point: point, Lo: quantile(xs, tail), Hi: quantile(xs, 1-tail)}
}

// BoundRatio is the geometric mean over windows of the lower bound's
// figure (Paired.Bound) over config's mean over seeds: how far below that
// configuration no schedule can go. NaN when no window has both.
func BoundRatio(ps []Paired, config string) float64 {
	logs, n := 0.0, 0
	for _, p := range ps {
		vs, ok := p.Values[config]
		if !ok {
			continue
		}
		if m := seedMean(vs, allSeeds(len(vs))); m > 0 && !math.IsInf(m, 1) && p.Bound > 0 {
			logs += math.Log(p.Bound / m)
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return math.Exp(logs / float64(n))
}

// Pooled is what one configuration did over a set of windows and seeds,
// pooled: the waits of jobs of a whole node or more, and the GPUs left
// free while jobs waited.
type Pooled struct {
	Config string
	Role   Role
	// LargeGangs: the started jobs of LargeJobGPUs or more, over every
	// window and seed; P99LargeWait their 99th percentile wait in seconds
	// (NaN when the reports kept no waits: saved before LargeWaits).
	LargeGangs   int
	P99LargeWait float64
	// FreeGPUHoursWaiting summed over windows and seeds; Runs how many
	// window-seed replays it sums; Unstarted the jobs left unstarted.
	FreeGPUHoursWaiting float64
	Runs, Unstarted     int
}

// PoolRuns pools every configuration's per-seed figures of reps (the
// lower bound left out), in the order the first report lists them.
func PoolRuns(reps []*Report) []Pooled {
	var out []Pooled
	index := map[string]int{}
	waits := map[string][]float64{}
	for _, rep := range reps {
		for _, sr := range rep.PerSeed {
			for _, m := range sr.Metrics {
				if m.Role == RoleBound {
					continue
				}
				k, ok := index[m.Config]
				if !ok {
					k = len(out)
					index[m.Config] = k
					out = append(out, Pooled{Config: m.Config, Role: m.Role})
				}
				p := &out[k]
				p.Runs++
				p.FreeGPUHoursWaiting += m.FreeGPUHoursWaiting
				p.Unstarted += m.Jobs - m.Started
				waits[m.Config] = append(waits[m.Config], m.LargeWaits...)
			}
		}
	}
	for k := range out {
		w := waits[out[k].Config]
		out[k].LargeGangs, out[k].P99LargeWait = len(w), math.NaN()
		if len(w) > 0 {
			sort.Float64s(w)
			out[k].P99LargeWait = quantile(w, 0.99)
		}
	}
	return out
}
