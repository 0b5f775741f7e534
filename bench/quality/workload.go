package quality

import (
	"fmt"
	"math/rand"
	"os"
	"sort"

	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
)

// TraceJob is one job of a trace: the Philly trace, or a cluster's own
// history (pkg/jobhistory, what `paddle-replay export` writes).
type TraceJob struct {
	GPUs     int
	Duration float64 // seconds
	// Submitted is the job's submission time (unix seconds, UTC).
	Submitted float64
	// Queue and Namespace: the Volcano queue and namespace; a Philly job's
	// virtual cluster in both.
	Queue, Namespace string
	// Shape, when the trace records it (a cluster's history; zero for
	// Philly, whose jobs are shaped by Shape).
	Pods, PodGPUs, PServers int
	Mode                    jobhistory.Mode
	MinPods, MaxPods        int
	Checkpointable          bool
}

// LoadPhilly reads philly.csv (timestamp, duration, num_gpus, gpu_time,
// cluster) with the history reader every trace goes through
// (jobhistory.Read), which skips the rows without a time, a positive
// duration or a GPU.
func LoadPhilly(path string) ([]TraceJob, error) {
	return LoadTrace(path)
}

// LoadTrace reads a history file or the Philly trace (jobhistory.Read).
func LoadTrace(path string) ([]TraceJob, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := jobhistory.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make([]TraceJob, 0, len(recs))
	for _, r := range recs {
		out = append(out, TraceJob{GPUs: r.TotalGPUs(), Duration: r.Duration.Seconds(), Submitted: float64(r.SubmitTime.Unix()),
			Queue: r.Queue, Namespace: r.Namespace, Pods: r.Pods, PodGPUs: r.GPUsPerPod, PServers: r.PServers, Mode: r.Mode,
			MinPods: r.MinPods, MaxPods: r.MaxPods, Checkpointable: r.Checkpointable})
	}
	return out, nil
}

// Job is a generated Paddle job: GPUs in pods of PodGPUs each; a PS job
// has PServers CPU pods and one 1-GPU trainer per GPU.
type Job struct {
	Name     string
	GPUs     int
	PodGPUs  int
	Pods     int
	PS       bool
	PServers int
	Model    string
	Duration float64
}

// Weight of the job's slowdown in GPU-time-weighted means: its GPUs. Jobs
// are drawn by duration (a snapshot of a running cluster), so weighting each
// by its GPUs weights by GPU time.
func (j Job) Weight() float64 { return float64(j.GPUs) }

// WorkloadOptions shape Generate.
type WorkloadOptions struct {
	Seed       int64
	TargetGPUs int     // generate jobs until their GPUs reach this
	MaxJobGPUs int     // larger trace jobs are skipped
	PSShare    float64 // share of jobs in parameter-server mode (default 0.3)
	NodeGPUs   int     // pods never ask for more than a node has
	Models     []string
}

// Generate draws a snapshot of jobs running at one moment: each trace job
// with probability proportional to its duration, so multi-GPU jobs hold
// their share of the cluster's GPUs as they hold their share of GPU time in
// the trace (in Philly 93% of jobs use one GPU but jobs of 2+ GPUs hold 82%
// of GPU time). Pod sizes are drawn among the divisors of the job's GPUs that fit
// a node (users split the same job into 1-, 2-, 4- or 8-GPU pods).
func Generate(trace []TraceJob, o WorkloadOptions) []Job {
	rng := rand.New(rand.NewSource(o.Seed))
	var pool []TraceJob
	var cum []float64
	total := 0.0
	for _, j := range trace {
		if j.GPUs > o.MaxJobGPUs || (j.GPUs&(j.GPUs-1)) != 0 {
			continue // power-of-two sizes only: how gangs of 8-GPU nodes are sized
		}
		total += j.Duration
		pool = append(pool, j)
		cum = append(cum, total)
	}
	if o.PSShare == 0 {
		o.PSShare = 0.3
	}
	models := append([]string(nil), o.Models...)
	sort.Strings(models)
	var jobs []Job
	gpus := 0
	for i := 0; gpus < o.TargetGPUs && len(pool) > 0; i++ {
		k := sort.SearchFloat64s(cum, rng.Float64()*total)
		j := Shape(rng, fmt.Sprintf("job-%04d", i), pool[min(k, len(pool)-1)], o.PSShare, o.NodeGPUs, models)
		jobs = append(jobs, j)
		gpus += j.GPUs
	}
	return jobs
}

// Shape turns a trace job into a Paddle job: a PS job with probability
// psShare (one 1-GPU trainer per GPU, a pserver per 4 GPUs, at most 8),
// else a collective job whose pod size is drawn among the divisors of its
// GPUs that fit a node (users split the same job into 1-, 2-, 4- or 8-GPU
// pods); its model is drawn from models (sorted).
func Shape(rng *rand.Rand, name string, tj TraceJob, psShare float64, nodeGPUs int, models []string) Job {
	j := Job{Name: name, GPUs: tj.GPUs, Duration: tj.Duration, Model: models[rng.Intn(len(models))]}
	if tj.Pods > 0 && tj.PodGPUs > 0 {
		// A cluster's history records the shape: only the model is drawn
		// (what the history cannot say).
		j.Pods, j.PodGPUs, j.GPUs = tj.Pods, tj.PodGPUs, tj.Pods*tj.PodGPUs
		if tj.Mode == jobhistory.ModePS {
			j.PS, j.PServers = true, max(1, tj.PServers)
		}
		return j
	}
	if rng.Float64() < psShare {
		j.PS, j.PodGPUs, j.Pods = true, 1, tj.GPUs
		j.PServers = min(8, max(1, tj.GPUs/4))
		return j
	}
	var sizes []int
	for _, s := range []int{1, 2, 4, 8} {
		if s <= tj.GPUs && s <= nodeGPUs && tj.GPUs%s == 0 {
			sizes = append(sizes, s)
		}
	}
	j.PodGPUs = sizes[rng.Intn(len(sizes))]
	j.Pods = tj.GPUs / j.PodGPUs
	return j
}
