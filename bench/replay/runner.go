package replay

import (
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
	Workload string
	Options  Options
	Nodes    int
	GPUs     int
	Metrics  []Metrics
	// Notes: what each configuration is.
	Notes map[string]string
	Took  time.Duration
}

// Replay builds the window's workload from dataDir (philly.csv and the
// Pollux model profiles) and replays it under each configuration, then
// adds the lower bound. Every configuration sees the same jobs.
func Replay(o Options, dataDir string, configs []Config, logf func(string, ...interface{})) (*Report, error) {
	start := time.Now()
	trace, err := quality.LoadPhilly(filepath.Join(dataDir, "philly.csv"))
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
	w, err := Build(trace, names, o)
	if err != nil {
		return nil, err
	}
	best := BestSteps(w, models)
	rep := &Report{Workload: w.Describe(), Options: o, Nodes: w.Nodes(), GPUs: w.GPUs(), Notes: map[string]string{}}
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
		r, err := Simulate(w, models, best, c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name(), err)
		}
		runs = append(runs, r)
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
	rep.Metrics = append(rep.Metrics, LowerBoundMetrics(w))
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

// BestStock is the stock configuration (any whose name starts with
// "stock") with the lowest mean JCT: the baseline paddle is held to.
func (r *Report) BestStock() (Metrics, bool) { return r.Best(Stock) }

// BestTuned is the best tuned stock variant (a name starting "stock-").
func (r *Report) BestTuned() (Metrics, bool) { return r.Best(Stock + "-") }

// Best is the configuration whose name starts with prefix that started
// every job with the lowest mean JCT.
func (r *Report) Best(prefix string) (Metrics, bool) {
	var best Metrics
	ok := false
	for _, m := range r.Metrics {
		if strings.HasPrefix(m.Config, prefix) && m.Started == m.Jobs && (!ok || m.MeanJCT < best.MeanJCT) {
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
