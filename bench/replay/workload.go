// Package replay replays a contiguous window of the Philly trace through
// Volcano's real scheduler (bench/simsched) over simulated time: jobs arrive
// at their recorded submission times, one allocate cycle runs whenever
// something changed (an arrival, a completion, a gang crossing the
// starvation threshold), placed gangs run for their recorded duration
// stretched by the cost model's slowdown for the placement they got
// (bench/quality), and leave. It measures what users feel: job completion
// time, queueing delay, utilisation and GPUs left idle while a job waits.
package replay

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
)

// Options choose the trace window and size the cluster.
type Options struct {
	Preset       quality.Preset
	NodesPerRack int
	// Start and Jobs: Jobs consecutive trace jobs, in submission order,
	// from the Start-th.
	Start, Jobs int
	// Load is the offered load the cluster is sized for: the GPU-seconds
	// the window's jobs would use during the arrival span if each ran from
	// its arrival, over the cluster's GPU-seconds in that span.
	Load    float64
	PSShare float64
	Seed    int64
	// Flex: elastic and checkpointable jobs (default none).
	Flex Flex `json:",omitempty"`
	// TracePath: a cluster's history (pkg/jobhistory's CSV) to take the
	// window from instead of the Philly trace; its jobs keep their
	// recorded shapes, queues and elastic range.
	TracePath string `json:",omitempty"`
	// Nodes fixes the cluster's size instead of sizing it for Load (a
	// user's own cluster).
	Nodes int `json:",omitempty"`
	// Sensitivity changes the yardstick, not the scheduler: the cost
	// model's interconnect bandwidths, or how GPUs are picked within a node.
	Sensitivity Sensitivity `json:",omitempty"`
}

// Sensitivity is a pass of the replay with the cost model's assumptions
// changed (the scheduler sees the same cluster).
type Sensitivity struct {
	// LinkScale multiplies every interconnect bandwidth of the preset
	// (quality.Preset.WithLinks); 0 or 1: as published.
	LinkScale float64 `json:",omitempty"`
	// FirstFreeGPUs: pods get their node's lowest-numbered free GPUs, as a
	// topology-blind device plugin gives them (quality.Cluster).
	FirstFreeGPUs bool `json:",omitempty"`
}

// String names the pass ("" for none).
func (s Sensitivity) String() string {
	var parts []string
	if s.LinkScale > 0 && s.LinkScale != 1 {
		parts = append(parts, fmt.Sprintf("interconnect bandwidths x%g", s.LinkScale))
	}
	if s.FirstFreeGPUs {
		parts = append(parts, "GPUs assigned first-free")
	}
	return strings.Join(parts, ", ")
}

// Job is a trace job shaped as a Paddle job, arriving at Arrival seconds
// after the window's first submission.
type Job struct {
	quality.Job
	Arrival float64
	// What the trace does not say (Flex; off: MinPods = MaxPods = Pods and
	// not checkpointable): the trainers an elastic job may run with, and
	// whether the job can be checkpointed and restarted.
	MinPods, MaxPods int
	Checkpointable   bool
	// Queue and Namespace from the trace (a Philly job's virtual cluster
	// in both; "" when the trace has none).
	Queue, Namespace string
	// recorded: the trace says whether the job is elastic and
	// checkpointable (a cluster's history); Flex draws nothing for it.
	recorded bool
}

// Workload is a window and the cluster sized for it.
type Workload struct {
	Options Options
	Jobs    []Job
	Cluster quality.Cluster
	// OfferedLoad after rounding the cluster up to whole racks.
	OfferedLoad float64
	// Span of the arrivals (s); Skipped: jobs of the window larger than the
	// whole cluster (they could never start).
	Span    float64
	Skipped int
	// Queues: the weight of every queue the window's jobs name, from its
	// share of the GPU-time submitted in the trace before the window
	// (queueWeights); configurations with Config.Queues use them.
	Queues map[string]int32
	// History: the trace's jobs submitted in the HistoryLookback before
	// the window, each with when its run time became known (its
	// submission plus its duration; the trace has no start), in seconds
	// from the window's start, in that order: what a cluster's run-time
	// history holds of them (History, sim.go). Start0 is the window's start
	// on the trace's clock (Unix seconds).
	History []PastJob
	Start0  float64
	// Timers: the waits after which any compared configuration orders a
	// waiting job differently (DeclaredTimers); every replay of the
	// comparison runs a cycle when a job has waited that long.
	Timers []time.Duration
	// Pollux step times and per-GPU batch sizes of the elastic jobs'
	// models (LoadSpeedups).
	speed map[string]quality.Measurements
	bsz   map[string]int
}

// Nodes of the cluster.
func (w *Workload) Nodes() int { return w.Cluster.Racks * w.Cluster.NodesPerRack }

// GPUs of the cluster.
func (w *Workload) GPUs() int { return w.Nodes() * w.Cluster.Preset.GPUsPerNode }

// Build takes the window from the trace, shapes its jobs (same seed, same
// shapes for every configuration) and sizes the cluster for the load.
func Build(trace []quality.TraceJob, models []string, o Options) (*Workload, error) {
	sorted := SortBySubmission(trace)
	win, span, racks, gpuSeconds, err := size(sorted, o)
	if err != nil {
		return nil, err
	}
	t0 := win[0].Submitted
	perNode := o.Preset.GPUsPerNode
	preset := o.Preset
	if o.Sensitivity.LinkScale > 0 {
		preset = preset.WithLinks(o.Sensitivity.LinkScale)
	}
	w := &Workload{Options: o, Span: span,
		Cluster: quality.Cluster{Preset: preset, Racks: racks, NodesPerRack: o.NodesPerRack, Background: map[string][]int{},
			FirstFreeGPUs: o.Sensitivity.FirstFreeGPUs}}
	sortedModels := append([]string(nil), models...)
	sort.Strings(sortedModels)
	rng := rand.New(rand.NewSource(o.Seed))
	for i, tj := range win {
		if tj.GPUs > w.GPUs() {
			w.Skipped++
			continue
		}
		j := quality.Shape(rng, fmt.Sprintf("job-%05d", i), tj, o.PSShare, perNode, sortedModels)
		job := Job{Job: j, Arrival: tj.Submitted - t0, Queue: queueName(tj.Queue), Namespace: namespaceName(tj.Namespace)}
		if tj.Pods > 0 && tj.MaxPods > 0 {
			job.MinPods, job.MaxPods, job.Checkpointable, job.recorded = tj.MinPods, tj.MaxPods, tj.Checkpointable, true
		}
		w.Jobs = append(w.Jobs, job)
	}
	w.Queues = queueWeights(sorted[:o.Start], t0, w.Jobs)
	w.History, w.Start0 = pastJobs(sorted[:o.Start], t0), t0
	if span > 0 {
		w.OfferedLoad = gpuSeconds / (span * float64(w.GPUs()))
	}
	applyFlex(w, o.Flex, o.Seed)
	return w, nil
}

// HistoryLookback is how much of the trace before a window the cluster's
// run-time history holds: eight of its half-lives, after which an
// observation weighs under 1/256 (jobhistory.DefaultHalfLife).
const HistoryLookback = 8 * jobhistory.DefaultHalfLife

// PastJob is a job of the trace before the window, as the history knows
// it: Known is when its run time became known, in seconds from the
// window's start (after it, for a job still running then).
type PastJob struct {
	Known float64
	Job   quality.TraceJob
}

// pastJobs are the jobs of before submitted within HistoryLookback of t0,
// in the order their run times became known.
func pastJobs(before []quality.TraceJob, t0 float64) []PastJob {
	var out []PastJob
	for _, tj := range before {
		if tj.Submitted >= t0-HistoryLookback.Seconds() {
			out = append(out, PastJob{Known: tj.Submitted + tj.Duration - t0, Job: tj})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Known < out[j].Known })
	return out
}

// QueueShareLookback is how much of the trace before a window its queues'
// shares are taken from: what an operator would size queues on.
const QueueShareLookback = 30 * 24 * time.Hour

// queueWeightScale turns a share into a Volcano queue weight (an integer).
const queueWeightScale = 1000

// queueWeights gives every queue the window's jobs name a weight in
// proportion to the GPU-seconds its jobs were submitted with in the
// QueueShareLookback before the window (t0): shares derived from history,
// never from the window's own demand. A queue without history gets the
// least weight, 1.
func queueWeights(before []quality.TraceJob, t0 float64, jobs []Job) map[string]int32 {
	used, total := map[string]float64{}, 0.0
	for _, tj := range before {
		if tj.Submitted >= t0-QueueShareLookback.Seconds() {
			used[queueName(tj.Queue)] += float64(tj.GPUs) * tj.Duration
			total += float64(tj.GPUs) * tj.Duration
		}
	}
	out := map[string]int32{}
	for _, j := range jobs {
		if j.Queue == "" {
			continue
		}
		wt := int32(1)
		if total > 0 {
			wt = max(1, int32(math.Round(queueWeightScale*used[j.Queue]/total)))
		}
		out[j.Queue] = wt
	}
	return out
}

// queueName is the Volcano queue of a trace's queue or virtual cluster: a
// DNS label (Philly's virtual clusters are hex ids, some starting with a
// digit, which queue names allow), "vc-" first so none is "default".
func queueName(q string) string {
	if q == "" {
		return ""
	}
	return "vc-" + strings.ToLower(q)
}

// namespaceName is the namespace of a trace's job, likewise.
func namespaceName(ns string) string { return queueName(ns) }

// QueueObjects are the window's queues as Volcano Queue objects, open and
// reclaimable, weighted (Queues).
func (w *Workload) QueueObjects() []*schedulingv1.Queue {
	names := make([]string, 0, len(w.Queues))
	for q := range w.Queues {
		names = append(names, q)
	}
	sort.Strings(names)
	out := make([]*schedulingv1.Queue, 0, len(names))
	reclaimable := true
	for _, q := range names {
		out = append(out, &schedulingv1.Queue{ObjectMeta: metav1.ObjectMeta{Name: q},
			Spec:   schedulingv1.QueueSpec{Weight: w.Queues[q], Reclaimable: &reclaimable},
			Status: schedulingv1.QueueStatus{State: schedulingv1.QueueStateOpen}})
	}
	return out
}

// SortBySubmission is the trace in submission order, the order windows
// are taken in.
func SortBySubmission(trace []quality.TraceJob) []quality.TraceJob {
	sorted := append([]quality.TraceJob(nil), trace...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].Submitted < sorted[b].Submitted })
	return sorted
}

// size takes the window from a trace in submission order and sizes the
// cluster for the load: the window's jobs, their arrival span, the racks
// and the GPU-seconds they offer during the span.
func size(sorted []quality.TraceJob, o Options) (win []quality.TraceJob, span float64, racks int, gpuSeconds float64, err error) {
	if o.Start < 0 || o.Jobs < 2 || o.Start+o.Jobs > len(sorted) {
		return nil, 0, 0, 0, fmt.Errorf("window %d+%d outside the trace's %d jobs", o.Start, o.Jobs, len(sorted))
	}
	win = sorted[o.Start : o.Start+o.Jobs]
	t0 := win[0].Submitted
	span = win[len(win)-1].Submitted - t0
	if span <= 0 && o.Nodes <= 0 {
		// Sizing for a load needs the span; a cluster of given nodes does
		// not (a history's jobs may all come in one second).
		return nil, 0, 0, 0, fmt.Errorf("window %d+%d has no arrival span", o.Start, o.Jobs)
	}
	// The GPUs the window's jobs would hold during the arrival span if each
	// ran from its arrival: what the cluster is offered while jobs arrive.
	// (A job's GPU-time after the span is not offered load of the window;
	// counting it would size the cluster for the heavy tail of durations.)
	for _, tj := range win {
		gpuSeconds += offered(tj, t0, span)
	}
	nodes := o.Nodes
	if nodes <= 0 {
		nodes = int(math.Ceil(gpuSeconds / (o.Load * span * float64(o.Preset.GPUsPerNode))))
	}
	racks = max(1, (nodes+o.NodesPerRack-1)/o.NodesPerRack)
	return win, span, racks, gpuSeconds, nil
}

// offered is the GPU-seconds a job holds during the window's arrival span
// [t0, t0+span] if it runs from its arrival.
func offered(tj quality.TraceJob, t0, span float64) float64 {
	from := tj.Submitted - t0
	return float64(tj.GPUs) * math.Max(0, math.Min(from+tj.Duration, span)-from)
}

// Demand is what a window offers the cluster Build sizes for it, from the
// trace alone (nothing replayed): how saturated it is, and how much of it
// is large gangs, which is where job order and preemption matter.
type Demand struct {
	Racks       int
	OfferedLoad float64
	// LargeLoad is the part of OfferedLoad from jobs of at least a whole
	// node's GPUs that fit the cluster (Build leaves larger ones out).
	LargeLoad float64
}

// WindowDemand is the Demand of window o of a trace in submission order
// (SortBySubmission).
func WindowDemand(sorted []quality.TraceJob, o Options) (Demand, error) {
	win, span, racks, gpuSeconds, err := size(sorted, o)
	if err != nil {
		return Demand{}, err
	}
	gpus := float64(racks * o.NodesPerRack * o.Preset.GPUsPerNode)
	large := 0.0
	for _, tj := range win {
		if tj.GPUs >= o.Preset.GPUsPerNode && float64(tj.GPUs) <= gpus {
			large += offered(tj, win[0].Submitted, span)
		}
	}
	return Demand{Racks: racks, OfferedLoad: gpuSeconds / (span * gpus), LargeLoad: large / (span * gpus)}, nil
}

// Describe is a one-line summary of the window and cluster.
func (w *Workload) Describe() string {
	ps, multi, gpus := 0, 0, 0
	for _, j := range w.Jobs {
		gpus += j.GPUs
		if j.PS {
			ps++
		}
		if j.GPUs > 1 {
			multi++
		}
	}
	d := fmt.Sprintf("trace jobs %d-%d (%d jobs, %d multi-GPU, %d PS, %d GPUs requested, %d larger than the cluster left out), arrivals over %.1f h; %d racks x %d nodes of %s (%d GPUs), offered load %.2f",
		w.Options.Start, w.Options.Start+w.Options.Jobs-1, len(w.Jobs), multi, ps, gpus, w.Skipped, w.Span/3600,
		w.Cluster.Racks, w.Cluster.NodesPerRack, w.Cluster.Preset.Name, w.GPUs(), w.OfferedLoad)
	if s := w.Options.Sensitivity.String(); s != "" {
		d += "; sensitivity: " + s
	}
	return d
}
