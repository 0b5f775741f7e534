package replay

import (
	"fmt"
	"math"
	"math/rand"
	"strings"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
)

// Flex models what the Philly trace does not say: whether a job can be
// checkpointed (and so preempted and restarted elsewhere) and whether a
// collective job is elastic (runs with any number of trainers between a
// minimum and a maximum, faster with more). Both are off by default: the
// default workload is the trace as it is.
type Flex struct {
	// CheckpointShare of the jobs can be checkpointed: their pods are
	// preemptable (Volcano's volcano.sh/preemptable annotation), and a job
	// preempted below its minimum restarts later from its last checkpoint,
	// losing RestartCost seconds of progress (loading the checkpoint,
	// re-forming the ring, the steps since the last checkpoint).
	CheckpointShare float64
	RestartCost     float64
	// ElasticShare of the collective jobs are elastic: minAvailable is
	// ElasticMinFactor of the trainers the trace records (at least one),
	// and the job has ElasticMaxFactor times as many trainers; the pods
	// above minAvailable are preemptable, and the job runs at the speed of
	// the trainers it has (Speedup).
	ElasticShare float64
}

// Elastic bounds, as multiples of the trainers the trace records.
const (
	ElasticMinFactor = 0.5
	ElasticMaxFactor = 2.0
)

// On reports whether any of the model is on.
func (f Flex) On() bool { return f.CheckpointShare > 0 || f.ElasticShare > 0 }

// String says what the model is, for the report.
func (f Flex) String() string {
	if !f.On() {
		return "the trace as it is (no job elastic or checkpointed)"
	}
	var parts []string
	if f.CheckpointShare > 0 {
		parts = append(parts, fmt.Sprintf("%.0f%% of jobs checkpointable (restart cost %.0f min)", 100*f.CheckpointShare, f.RestartCost/60))
	}
	if f.ElasticShare > 0 {
		parts = append(parts, fmt.Sprintf("%.0f%% of collective jobs elastic (%.1fx to %.0fx the recorded trainers, speed-up from the Pollux step times)",
			100*f.ElasticShare, ElasticMinFactor, ElasticMaxFactor))
	}
	return strings.Join(parts, ", ")
}

// flexSeed keeps the model's draws apart from the job shapes' (Build): the
// same window has the same jobs with the model on or off.
const flexSeed = 0x5eed

// applyFlex draws which jobs are checkpointable and elastic.
func applyFlex(w *Workload, f Flex, seed int64) {
	rng := rand.New(rand.NewSource(seed ^ flexSeed))
	for i := range w.Jobs {
		j := &w.Jobs[i]
		cp, el := rng.Float64(), rng.Float64()
		if j.recorded {
			continue // the history says
		}
		j.MinPods, j.MaxPods = j.Pods, j.Pods
		j.Checkpointable = cp < f.CheckpointShare
		if !j.PS && el < f.ElasticShare {
			j.MinPods = max(1, int(math.Ceil(ElasticMinFactor*float64(j.Pods))))
			j.MaxPods = max(j.Pods, int(ElasticMaxFactor*float64(j.Pods)))
			// Never more trainers than the cluster holds.
			j.MaxPods = min(j.MaxPods, w.GPUs()/j.PodGPUs)
		}
	}
}

// normalizeFlex gives jobs built without Build (tests) the trace's shape:
// MinPods = MaxPods = Pods.
func (w *Workload) normalizeFlex() {
	for i := range w.Jobs {
		if j := &w.Jobs[i]; j.MaxPods == 0 {
			j.MinPods, j.MaxPods = j.Pods, j.Pods
		}
	}
}

// Elastic reports whether the job may run with fewer or more trainers than
// the trace records.
func (j Job) Elastic() bool { return j.MinPods != j.MaxPods }

// pollux16 is the largest placement the Pollux profiles measure: 4 nodes
// of 4 GPUs.
const pollux16 = 16

// Speedup is a model's throughput on n GPUs over one GPU's, at its per-GPU
// batch size, from the measured step times of the Pollux artifact
// (../shared/data/pollux/<model>/placements.csv, petuum/adaptdl
// simulator/traces: nodes of 4 T4 GPUs): n GPUs packed on as few nodes as
// possible take step_time(placement) per step and process n batches.
// Beyond 16 GPUs, the per-GPU efficiency of 16 is kept. It counts samples
// per second only: a larger total batch also needs more samples to reach
// the same accuracy (Pollux's statistical efficiency), which this leaves
// out, so it is the most an elastic job can gain.
func Speedup(m quality.Measurements, bsz, n int) float64 {
	if n <= 1 {
		return float64(max(n, 0))
	}
	one, ok := m["1"][bsz]
	if !ok || one <= 0 {
		return float64(n)
	}
	k := min(n, pollux16)
	place := strings.Repeat("4", k/4)
	if k%4 > 0 {
		place = fmt.Sprint(k%4) + place
	}
	step, ok := m[place][bsz]
	if !ok || step <= 0 {
		return float64(n)
	}
	eff := one / step // per-GPU efficiency at k GPUs
	return float64(n) * eff
}

// LoadSpeedups reads the Pollux step times of the workload's models, for
// the elastic jobs' speed-up (SpeedRatio); nothing to read when no job is
// elastic.
func (w *Workload) LoadSpeedups(dir string, models map[string]quality.Model) error {
	w.speed, w.bsz = map[string]quality.Measurements{}, map[string]int{}
	for _, j := range w.Jobs {
		if !j.Elastic() {
			continue
		}
		if _, ok := w.speed[j.Model]; ok {
			continue
		}
		m, err := quality.LoadPlacements(dir, j.Model)
		if err != nil {
			return err
		}
		w.speed[j.Model], w.bsz[j.Model] = m, models[j.Model].Bsz
	}
	return nil
}

// SpeedRatio is how much faster job j runs with n trainers than with the
// trainers the trace records (1 for a job that is not elastic).
func (w *Workload) SpeedRatio(j Job, n int) float64 {
	m, ok := w.speed[j.Model]
	if !j.Elastic() || n == j.Pods || !ok {
		return 1
	}
	b := w.bsz[j.Model]
	return Speedup(m, b, n*j.PodGPUs) / Speedup(m, b, j.Pods*j.PodGPUs)
}
