// Package runner replays trace windows under the bench's configurations:
// which windows (the rules of bench/catalogue's window sets), every window
// under each workload seed and configuration (replay.Repeat), split into
// shards across processes, each window's results kept as it finishes so
// that a stopped run resumes.
package runner

import (
	"context"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
)

// Workload seeds each window is replayed under (replay.Repeat; the report
// averages them): runs of a saturated window differ several-fold in idle
// GPU-hours.
const (
	DefaultRuns = 3
	// FullRuns: the full mode's.
	FullRuns = 5
	// MaxRuns bounds -replay-runs.
	MaxRuns = 20
)

// perConfigSeed is what one configuration's replay of one window under one
// seed took on average, measured on a 2-core machine of ours (2026-11-27,
// Volcano v1.15.1, 300-job windows, 15 configurations, the trace as it
// is): the estimate a run prints before it starts.
const perConfigSeed = 12 * time.Second

// Configs are the configurations a run replays, built from the catalogue
// on these scheduler files: a sweep's, else the comparison's with the
// paddle variants named; flex: for the elastic and checkpoint workload.
func Configs(cat *catalogue.Catalogue, files catalogue.Files, sweep string, flex bool, variants []string) ([]replay.Config, error) {
	var es []catalogue.Entry
	var err error
	if sweep != "" {
		es, err = cat.SweepEntries(sweep)
	} else {
		es, err = cat.Comparison(flex, variants)
	}
	if err != nil {
		return nil, err
	}
	var out []replay.Config
	for _, e := range es {
		c, err := cat.Build(e, files, flex)
		if err != nil {
			return nil, err
		}
		out = append(out, replay.ConfigOf(c))
	}
	return out, nil
}

// Run is a replay of windows under configurations.
type Run struct {
	Windows []Window
	Configs []replay.Config
	// Seeds: workload seeds per window.
	Seeds       int
	Flex        replay.Flex
	Sensitivity replay.Sensitivity
	// Shard of Shards: replay only every Shards-th window from the
	// Shard-th (Shards 0: all).
	Shard, Shards int
	// Progress: the folder of per-window results ("" keeps none).
	Progress string
	// Data: the trace and the models' profiles (bench/quality/testdata/pollux).
	Data string
	Logf func(string, ...interface{})
}

func (r Run) mine(i int) bool { return r.Shards == 0 || i%r.Shards == r.Shard-1 }

// Replay replays the run's windows, resuming those kept, and returns their
// reports. When ctx is cancelled it returns the windows finished and the
// seeds of the window it was replaying that finished (replay.Repeat), with
// ctx's error.
func (r Run) Replay(ctx context.Context) ([]*replay.Report, error) {
	logf := r.Logf
	if logf == nil {
		logf = func(string, ...interface{}) {}
	}
	names := make([]string, len(r.Configs))
	for k, c := range r.Configs {
		names[k] = c.Name()
	}
	prog := progress{dir: r.Progress, configs: names, seeds: r.Seeds}
	mine, kept := 0, 0
	for i, win := range r.Windows {
		if r.mine(i) {
			mine++
			if prog.has(r.options(win)) {
				kept++
			}
		}
	}
	logf("replay: %d windows (%d for this process, %d of them kept from an earlier run) x %d seeds x %d configurations: expected about %s on one core; per-window results kept in %s",
		len(r.Windows), mine, kept, r.Seeds, len(r.Configs), (time.Duration((mine-kept)*r.Seeds*len(r.Configs)) * perConfigSeed).Round(time.Minute), r.Progress)
	var out []*replay.Report
	started := time.Now()
	done := 0
	for i, win := range r.Windows {
		if !r.mine(i) {
			continue
		}
		o := r.options(win)
		if rep, ok := prog.load(o); ok {
			rep.Kind = win.Kind
			out = append(out, rep)
			logf("replay %s %d+%d: resumed from %s", o.Preset.Name, o.Start, o.Jobs, prog.path(o))
			continue
		}
		rep, err := replay.Repeat(ctx, o, r.Data, r.Configs, r.Seeds, logf)
		if rep != nil {
			rep.Kind = win.Kind
			out = append(out, rep)
		}
		if err != nil {
			return out, err
		}
		if err := prog.save(o, rep); err != nil {
			return out, err
		}
		done++
		left := 0
		for k := i + 1; k < len(r.Windows); k++ {
			if r.mine(k) {
				left++
			}
		}
		logf("replay %s:\n%s", o.Preset.Name, rep.String())
		logf("replay progress: window %d of %d done, %d left for this process, about %s more at this pace",
			i+1, len(r.Windows), left, (time.Since(started) / time.Duration(done) * time.Duration(left)).Round(time.Minute))
	}
	return out, nil
}

// options is a window with the run's workload and sensitivity pass.
func (r Run) options(win Window) replay.Options {
	o := win.Options
	o.Flex, o.Sensitivity = r.Flex, r.Sensitivity
	return o
}
