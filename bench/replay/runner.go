package replay

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"strings"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
)

// Report is one window replayed under every configuration.
type Report struct {
	// Kind says what the window is for (the bench's tuning or held-out
	// windows); empty in reports saved before it was recorded.
	Kind     string `json:",omitempty"`
	Workload string
	Options  Options
	Nodes    int
	GPUs     int
	Metrics  []Metrics
	// Notes: what each configuration is.
	Notes map[string]string
	Took  time.Duration
	// Runs: how many replays of the window Metrics average (Repeat);
	// Spread: per configuration, the lowest and highest of the headline
	// metrics over them.
	Runs   int               `json:",omitempty"`
	Spread map[string]Spread `json:",omitempty"`
	// FreeMeasured: Metrics carry FreeGPUHoursWaiting (false in reports
	// saved before it was measured).
	FreeMeasured bool `json:",omitempty"`
	// PerSeed: every seed's figures (series left out), for intervals;
	// absent from reports saved before seeds varied (their runs repeated
	// one seed).
	PerSeed []SeedResult `json:",omitempty"`
	// Jobs: every job's result, per configuration and run, for the per-job
	// CSV (WriteJobsCSV); not kept in the JSON figures.
	Jobs []RunJobs `json:"-"`
}

// SeedResult is one workload seed's replay of a window.
type SeedResult struct {
	Seed    int64
	Metrics []Metrics
}

// RunJobs is what happened to every job of one replay of a configuration.
type RunJobs struct {
	Config string
	Run    int
	Seed   int64
	Jobs   []JobResult
}

// Spread is the range of a configuration's headline metrics over runs.
type Spread struct {
	MeanJCT, P95JCT, LongestWait, IdleGPUHours Range
}

// Range is the lowest and highest value seen.
type Range struct{ Min, Max float64 }

func (r *Range) add(v float64, first bool) {
	if first || v < r.Min {
		r.Min = v
	}
	if first || v > r.Max {
		r.Max = v
	}
}

// Repeat replays the window under runs workload seeds, o.Seed, o.Seed+1,
// ...: each seed draws the jobs' shapes, PS share, models and the elastic
// and checkpoint model anew from the same trace window, and every
// configuration replays the same draw with Volcano's tie-breaks seeded
// alike, so configurations are paired by seed. It reports the mean of
// every metric over seeds, the range of the headline ones, and each seed's
// figures (PerSeed) for intervals (WindowRatio, GeoMeanRatio).
//
// When ctx is cancelled, Repeat returns the seeds finished so far (nil if
// none) with ctx's error, so an interrupted bench can still write them.
func Repeat(ctx context.Context, o Options, dataDir string, configs []Config, runs int, logf func(string, ...interface{})) (*Report, error) {
	if runs < 1 {
		return nil, fmt.Errorf("runs %d: want at least 1", runs)
	}
	start := time.Now()
	in, err := loadInputs(o, dataDir)
	if err != nil {
		return nil, err
	}
	var reps []*Report
	for i := 0; i < runs; i++ {
		so := o
		so.Seed = o.Seed + int64(i)
		rep, err := replayWith(ctx, in, so, dataDir, configs, logf)
		if err != nil {
			if ctx.Err() != nil && len(reps) > 0 {
				return average(reps, start), err
			}
			return nil, err
		}
		reps = append(reps, rep)
	}
	return average(reps, start), nil
}

// average is the mean of a window's replays, with the range of the
// headline metrics and every run's jobs.
func average(reps []*Report, start time.Time) *Report {
	runs := len(reps)
	out := *reps[0]
	out.Runs, out.Took, out.Spread = runs, time.Since(start), map[string]Spread{}
	out.Jobs, out.PerSeed = nil, nil
	for i, rep := range reps {
		for _, rj := range rep.Jobs {
			rj.Run, rj.Seed = i+1, rep.Options.Seed
			out.Jobs = append(out.Jobs, rj)
		}
		sr := SeedResult{Seed: rep.Options.Seed}
		for _, m := range rep.Metrics {
			m.JCTQuantiles, m.UtilisationOverTime = nil, nil // the averaged series are kept
			sr.Metrics = append(sr.Metrics, m)
		}
		out.PerSeed = append(out.PerSeed, sr)
	}
	out.Metrics = make([]Metrics, len(reps[0].Metrics))
	for k := range reps[0].Metrics {
		ms := make([]Metrics, len(reps))
		var sp Spread
		for i, rep := range reps {
			m := rep.Metrics[k]
			ms[i] = m
			sp.MeanJCT.add(m.MeanJCT, i == 0)
			sp.P95JCT.add(m.P95JCT, i == 0)
			sp.LongestWait.add(m.LongestWait, i == 0)
			sp.IdleGPUHours.add(m.IdleGPUHours, i == 0)
		}
		out.Metrics[k] = averageMetrics(ms)
		out.Spread[out.Metrics[k].Config] = sp
	}
	return &out
}

// averageMetrics is the field-by-field mean of one configuration's metrics
// over runs (counts rounded, started jobs the fewest).
func averageMetrics(ms []Metrics) Metrics {
	a := ms[0]
	n := float64(len(ms))
	// The averaged figures of m, in one order for every run.
	figures := func(m *Metrics) []*float64 {
		return []*float64{&m.MeanJCT, &m.MedianJCT, &m.P95JCT, &m.P99JCT, &m.MeanWait, &m.MedianWait, &m.P95Wait, &m.P99Wait,
			&m.LongestWait, &m.MeanWaitSingleGPU, &m.MeanWaitLarge, &m.Makespan, &m.Utilisation, &m.IdleGPUHours, &m.FreeGPUHoursWaiting,
			&m.MeanSlowdown, &m.NodeCrossings, &m.RackCrossings, &m.ExcessNodeX, &m.ExcessRackX, &m.SchedulerSeconds,
			&m.Restarts, &m.Resizes, &m.Evictions, &m.MeanAdmissionWait, &m.WorstQueueWait}
	}
	sums := figures(&a)
	for _, f := range sums {
		*f = 0
	}
	cycles, collective := 0, 0
	for i := range ms {
		for k, f := range figures(&ms[i]) {
			*sums[k] += *f / n
		}
		cycles += ms[i].Cycles
		collective += ms[i].MultiPodCollective
		// The fewest started: a configuration that left a job waiting in
		// any run is not a baseline (Best).
		a.Started = min(a.Started, ms[i].Started)
		if ms[i].WorstQueue != a.WorstQueue {
			a.WorstQueue = "varies by seed"
		}
	}
	a.Cycles = int(math.Round(float64(cycles) / n))
	a.MultiPodCollective = int(math.Round(float64(collective) / n))
	a.LargeWaits = nil // kept per seed (PerSeed)
	a.JCTQuantiles = averageSeries(ms, func(m *Metrics) []float64 { return m.JCTQuantiles })
	a.UtilisationOverTime = averageSeries(ms, func(m *Metrics) []float64 { return m.UtilisationOverTime })
	return a
}

// averageSeries is the element-wise mean of the runs' series, as long as
// the first run's.
func averageSeries(ms []Metrics, get func(m *Metrics) []float64) []float64 {
	first := get(&ms[0])
	if first == nil {
		return nil
	}
	out := make([]float64, len(first))
	for k := range out {
		sum, cnt := 0.0, 0
		for i := range ms {
			if s := get(&ms[i]); k < len(s) {
				sum += s[k]
				cnt++
			}
		}
		out[k] = sum / float64(cnt)
	}
	return out
}

// Replay builds the window's workload from dataDir (philly.csv and the
// Pollux model profiles) and replays it under each configuration, then
// adds the lower bound. Every configuration sees the same jobs.
func Replay(ctx context.Context, o Options, dataDir string, configs []Config, logf func(string, ...interface{})) (*Report, error) {
	in, err := loadInputs(o, dataDir)
	if err != nil {
		return nil, err
	}
	return replayWith(ctx, in, o, dataDir, configs, logf)
}

// inputs are what every seed of a window replays from: the trace and the
// models' step-time profiles, read once.
type inputs struct {
	trace  []quality.TraceJob
	models map[string]quality.Model
	names  []string
}

// loadInputs reads the trace (o.TracePath, else dataDir's philly.csv) and
// the model profiles in dataDir.
func loadInputs(o Options, dataDir string) (*inputs, error) {
	tracePath := o.TracePath
	if tracePath == "" {
		tracePath = filepath.Join(dataDir, "philly.csv")
	}
	trace, err := quality.LoadTrace(tracePath)
	if err != nil {
		return nil, err
	}
	models, err := quality.Models(dataDir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(models))
	for n := range models {
		names = append(names, n)
	}
	return &inputs{trace: trace, models: models, names: names}, nil
}

// replayWith is Replay on inputs already read.
func replayWith(ctx context.Context, in *inputs, o Options, dataDir string, configs []Config, logf func(string, ...interface{})) (*Report, error) {
	start := time.Now()
	models := in.models
	w, err := Build(in.trace, in.names, o)
	if err != nil {
		return nil, err
	}
	if err := w.LoadSpeedups(dataDir, models); err != nil {
		return nil, err
	}
	w.Timers = DeclaredTimers(configs)
	best := BestSteps(w, models)
	rep := &Report{Workload: w.Describe(), Options: o, Nodes: w.Nodes(), GPUs: w.GPUs(), Notes: map[string]string{}, FreeMeasured: true}
	var runs []*Run
	horizon := 0.0
	for _, c := range configs {
		t := time.Now()
		// Volcano breaks ties between equally scored nodes with the global
		// math/rand (util.SelectBestNodeAndScore): seed it per configuration
		// so a replay repeats. rand.Seed takes effect only in binaries built
		// with GODEBUG randseednop=0 (bench/cmd/bench sets it; Go 1.24 made
		// Seed a no-op by default).
		rand.Seed(o.Seed) //nolint:staticcheck // the only way to seed Volcano's tie-breaks
		r, err := Simulate(ctx, w, models, best, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name(), err)
		}
		runs = append(runs, r)
		rep.Jobs = append(rep.Jobs, RunJobs{Config: c.Name(), Run: 1, Jobs: r.Jobs})
		rep.Notes[c.Name()] = c.Note
		for _, j := range r.Jobs {
			horizon = math.Max(horizon, j.End)
		}
		if logf != nil {
			logf("replay %s: %d cycles, %s (%s in scheduling cycles)", c.Name(), r.Cycles, time.Since(t).Round(time.Second), r.SchedulerTime.Round(time.Second))
		}
	}
	for _, r := range runs {
		rep.Metrics = append(rep.Metrics, Measure(r, w, horizon))
	}
	rep.Metrics = append(rep.Metrics, LowerBoundMetrics(w, models, best))
	rep.Took = time.Since(start)
	return rep, nil
}

// Get returns the metrics of a configuration.
func (r *Report) Get(config string) (Metrics, bool) {
	for _, m := range r.Metrics {
		if m.Config == config {
			return m, true
		}
	}
	return Metrics{}, false
}

// BestStock is the stock configuration with the lowest mean JCT among
// those that started every job: the baseline paddle is held to.
func (r *Report) BestStock() (Metrics, bool) {
	return r.BestStockBy(func(m Metrics) float64 { return m.MeanJCT })
}

// BestTuned is the best stock configuration other than Volcano's default
// tiers (Stock).
func (r *Report) BestTuned() (Metrics, bool) {
	return r.best(func(m Metrics) bool { return m.Role == RoleStock && m.Config != Stock },
		func(m Metrics) float64 { return m.MeanJCT })
}

// BestStockBy is the stock configuration that started every job with the
// lowest value of one metric: "best stock" is chosen per metric, so paddle
// is held to the best mean JCT, the best p95 and the fewest idle GPU-hours
// of any stock configuration, even when no one configuration has all three.
func (r *Report) BestStockBy(metric func(Metrics) float64) (Metrics, bool) {
	return r.best(func(m Metrics) bool { return m.Role == RoleStock }, metric)
}

// best is the configuration among those keep accepts that started every
// job with the lowest value of metric.
func (r *Report) best(keep func(Metrics) bool, metric func(Metrics) float64) (Metrics, bool) {
	var best Metrics
	ok := false
	for _, m := range r.Metrics {
		if keep(m) && m.Started == m.Jobs && (!ok || metric(m) < metric(best)) {
			best, ok = m, true
		}
	}
	return best, ok
}

// String is the report as a small table (hours).
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  %-40s %7s %7s %7s %7s %7s %7s %7s %6s %8s %6s %6s %7s %6s %6s\n", r.Workload, "config", "meanJCT", "p50JCT", "p95JCT", "p99JCT",
		"meanW", "p95W", "maxW", "util", "idleGPUh", "nodeX+", "rackX+", "started", "W1gpu", "W8+gpu")
	for _, m := range r.Metrics {
		fmt.Fprintf(&b, "  %-40s %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %7.2f %5.0f%% %8.1f %6.2f %6.2f %3d/%3d %6.2f %6.2f\n", m.Config, m.MeanJCT/3600, m.MedianJCT/3600,
			m.P95JCT/3600, m.P99JCT/3600, m.MeanWait/3600, m.P95Wait/3600, m.LongestWait/3600, 100*m.Utilisation, m.IdleGPUHours, m.ExcessNodeX, m.ExcessRackX, m.Started, m.Jobs, m.MeanWaitSingleGPU/3600, m.MeanWaitLarge/3600)
	}
	return b.String()
}
