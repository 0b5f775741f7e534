package replay

import (
	"math"
	"sort"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
)

// Metrics of one configuration's replay. Times are in seconds.
type Metrics struct {
	Config string
	// Role of the configuration (empty in reports saved before roles were
	// recorded: the bench's report fills those from bench/catalogue).
	Role          Role `json:",omitempty"`
	Jobs, Started int
	// Job completion time (arrival to end) and queueing delay (arrival to
	// start), over the jobs that started.
	MeanJCT, MedianJCT, P95JCT, P99JCT     float64
	MeanWait, MedianWait, P95Wait, P99Wait float64
	LongestWait                            float64
	// Mean queueing delay of single-GPU jobs and of jobs of a whole node or
	// more (LargeJobGPUs): who waits under each configuration.
	MeanWaitSingleGPU, MeanWaitLarge float64
	// LargeWaits: the wait of every started job of a whole node or more,
	// in whole seconds, in arrival order: pooled over windows and seeds,
	// their quantiles say how long such gangs wait (Report: Pooled). Kept
	// per seed only (PerSeed), not in a window's averaged figures; absent
	// from reports saved before it was kept.
	LargeWaits []float64 `json:",omitempty"`
	// Makespan: first arrival to last end.
	Makespan float64
	// Utilisation: GPU-seconds used over the cluster's during the makespan.
	Utilisation float64
	// IdleGPUHours: GPUs free while some waiting job asked for no more GPUs
	// than were free.
	IdleGPUHours float64
	// FreeGPUHoursWaiting: GPUs free while any job waits, fitting a waiting
	// job or not. IdleGPUHours leaves out free GPUs no waiting job fits, as
	// 8 free GPUs on 8 nodes beside an 8-GPU gang: the headroom's and the
	// reservation's holds are idle, spreading's fragmentation is not; this
	// counts both. Absent (0) from reports saved before it was measured
	// (Report.FreeMeasured).
	FreeGPUHoursWaiting float64 `json:",omitempty"`
	// MeanSlowdown of run time from placement (duration weighted).
	MeanSlowdown float64
	// Collective jobs of more than one trainer: mean boundaries between
	// consecutive ranks that cross a node / a rack, and the mean excess
	// over the minimum the job's node / rack count allows (nodes-1).
	MultiPodCollective           int
	NodeCrossings, RackCrossings float64
	ExcessNodeX, ExcessRackX     float64
	Cycles                       int
	SchedulerSeconds             float64
	// With Flex: restarts from a checkpoint and resizes of elastic jobs,
	// over all jobs.
	Restarts, Resizes float64
	// What the levers did: running pods evicted (preempt, reclaim); the
	// mean time from arrival to the enqueue action's admission (0 without
	// enqueue); the mean wait of the queue whose jobs waited longest on
	// average, and that queue (every job in "default" unless the
	// configuration uses queues).
	Evictions         float64 `json:",omitempty"`
	MeanAdmissionWait float64 `json:",omitempty"`
	WorstQueueWait    float64 `json:",omitempty"`
	WorstQueue        string  `json:",omitempty"`
	// JCTQuantiles: JCT at quantiles 1%, 2%, ... 100% (the CDF plot).
	JCTQuantiles []float64
	// UtilisationOverTime: share of GPUs in use, averaged per UtilBin.
	UtilisationOverTime []float64
	UtilBin             float64
}

// LargeJobGPUs: jobs of at least this many GPUs count as large in
// MeanWaitLarge (a whole node of the replayed presets).
const LargeJobGPUs = 8

// utilBins is how many points the utilisation-over-time plot has.
const utilBins = 120

// Measure computes a run's metrics; gpus is the cluster's GPUs and horizon
// the time axis of the utilisation series (the longest makespan of the
// compared runs, so series line up).
func Measure(r *Run, w *Workload, horizon float64) Metrics {
	m := Metrics{Config: r.Config, Role: r.Role, Jobs: len(r.Jobs), Cycles: r.Cycles, SchedulerSeconds: r.SchedulerTime.Seconds(),
		IdleGPUHours: r.IdleWhileWaiting / 3600, FreeGPUHoursWaiting: r.FreeWhileWaiting / 3600}
	var jct, wait, waitSingle, waitLarge, admission []float64
	var sw, sd float64
	m.Evictions = float64(r.Evictions)
	queueWait, queueJobs := map[string]float64{}, map[string]int{}
	for k, j := range r.Jobs {
		if !j.Started() {
			continue
		}
		m.Started++
		admission = append(admission, j.Admitted-j.Arrival)
		queueWait[j.Queue] += j.Start - j.Arrival
		queueJobs[j.Queue]++
		m.Restarts += float64(j.Restarts)
		m.Resizes += float64(j.Resizes)
		jct = append(jct, j.End-j.Arrival)
		wait = append(wait, j.Start-j.Arrival)
		switch {
		case j.GPUs == 1:
			waitSingle = append(waitSingle, j.Start-j.Arrival)
		case j.GPUs >= LargeJobGPUs:
			waitLarge = append(waitLarge, j.Start-j.Arrival)
			m.LargeWaits = append(m.LargeWaits, math.Round(j.Start-j.Arrival))
		}
		m.Makespan = math.Max(m.Makespan, j.End)
		d := w.Jobs[k].Duration
		sd += j.Slowdown * d
		sw += d
		if j.Nodes > 0 {
			m.MultiPodCollective++
			m.NodeCrossings += float64(j.NodeCrossings)
			m.RackCrossings += float64(j.RackCrossings)
			m.ExcessNodeX += float64(j.NodeCrossings - (j.Nodes - 1))
			m.ExcessRackX += float64(j.RackCrossings - (j.Racks - 1))
		}
	}
	if n := float64(m.MultiPodCollective); n > 0 {
		m.NodeCrossings, m.RackCrossings, m.ExcessNodeX, m.ExcessRackX = m.NodeCrossings/n, m.RackCrossings/n, m.ExcessNodeX/n, m.ExcessRackX/n
	}
	if sw > 0 {
		m.MeanSlowdown = sd / sw
	}
	m.fillTimes(jct, wait)
	m.MeanAdmissionWait = meanOrZero(admission)
	for q, n := range queueJobs {
		if mw := queueWait[q] / float64(n); mw > m.WorstQueueWait || (mw == m.WorstQueueWait && q < m.WorstQueue) {
			m.WorstQueueWait, m.WorstQueue = mw, q
		}
	}
	// 0 where the window has no such job: JSON has no NaN.
	m.MeanWaitSingleGPU, m.MeanWaitLarge = meanOrZero(waitSingle), meanOrZero(waitLarge)
	// GPU-seconds used: the step function of the samples.
	used := 0.0
	for k, s := range r.Samples {
		if k+1 < len(r.Samples) {
			used += float64(s.Used) * (r.Samples[k+1].T - s.T)
		}
	}
	if m.Makespan > 0 {
		m.Utilisation = used / (float64(w.GPUs()) * m.Makespan)
	}
	m.UtilBin = horizon / utilBins
	m.UtilisationOverTime = binUtilisation(r.Samples, w.GPUs(), m.UtilBin)
	return m
}

func (m *Metrics) fillTimes(jct, wait []float64) {
	m.MeanJCT, m.MeanWait = mean(jct), mean(wait)
	sort.Float64s(jct)
	sort.Float64s(wait)
	m.MedianJCT, m.P95JCT, m.P99JCT = quantile(jct, 0.5), quantile(jct, 0.95), quantile(jct, 0.99)
	m.MedianWait, m.P95Wait, m.P99Wait = quantile(wait, 0.5), quantile(wait, 0.95), quantile(wait, 0.99)
	if len(wait) > 0 {
		m.LongestWait = wait[len(wait)-1]
	}
	m.JCTQuantiles = make([]float64, 100)
	for q := range m.JCTQuantiles {
		m.JCTQuantiles[q] = quantile(jct, float64(q+1)/100)
	}
}

// LowerBoundMetrics are figures no configuration can beat, computed from
// the workload alone: every job starts when it arrives and runs at the
// fastest its shape allows under the cost model (quality.StepLowerBound,
// which no placement beats, where the best placement the slowdowns are
// measured against can be beaten), an elastic job at its fastest number
// of trainers for the whole run, without restarts. best holds each job's
// step time at its best placement (BestSteps).
func LowerBoundMetrics(w *Workload, models map[string]quality.Model, best map[string]float64) Metrics {
	m := Metrics{Config: LowerBound, Role: RoleBound, Jobs: len(w.Jobs), Started: len(w.Jobs), MeanSlowdown: 1}
	var jct, wait []float64
	gpuSeconds := 0.0
	for _, j := range w.Jobs {
		d, gpus := boundRun(w, models[j.Model], best[j.Name], j)
		jct = append(jct, d)
		wait = append(wait, 0)
		m.Makespan = math.Max(m.Makespan, j.Arrival+d)
		gpuSeconds += float64(gpus) * d
	}
	m.fillTimes(jct, wait)
	if m.Makespan > 0 {
		m.Utilisation = gpuSeconds / (float64(w.GPUs()) * m.Makespan)
	}
	return m
}

// boundRun is the shortest run job j can have and the GPUs it holds then.
// A replay runs the job Duration x step(placement) / step(best placement
// of n trainers) / SpeedRatio(n) per second of recorded run with n
// trainers (sim.progress); the bound takes the bound step and the n that
// minimise it. best is its step time at its best placement as recorded.
func boundRun(w *Workload, m quality.Model, best float64, j Job) (float64, int) {
	factor := func(n int) float64 {
		shape := withTrainers(j, n)
		b := best
		if n != j.Pods {
			b = bestStepWith(w, m, j, n)
		}
		return quality.StepLowerBound(w.Cluster.Preset, m, shape, w.Cluster.NodesPerRack) / b / w.SpeedRatio(j, n)
	}
	fastest, f := j.Pods, factor(j.Pods)
	for n := max(j.MinPods, 1); j.Elastic() && n <= j.MaxPods; n++ {
		if x := factor(n); x < f {
			fastest, f = n, x
		}
	}
	return j.Duration * f, fastest * j.PodGPUs
}

// binUtilisation averages GPUs in use over bins of width bin.
func binUtilisation(samples []Sample, gpus int, bin float64) []float64 {
	out := make([]float64, utilBins)
	if bin <= 0 || gpus == 0 {
		return out
	}
	for k, s := range samples {
		end := s.T
		if k+1 < len(samples) {
			end = samples[k+1].T
		}
		for b := int(s.T / bin); b < utilBins && float64(b)*bin < end; b++ {
			overlap := math.Min(end, float64(b+1)*bin) - math.Max(s.T, float64(b)*bin)
			if overlap > 0 {
				out[b] += float64(s.Used) * overlap
			}
		}
	}
	for b := range out {
		out[b] /= bin * float64(gpus)
	}
	return out
}

// meanOrZero is the mean, 0 for no values.
func meanOrZero(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return mean(xs)
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// quantile of sorted xs (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}
