package quality

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"time"
)

// TraceJob is one job of the Philly trace.
type TraceJob struct {
	GPUs     int
	Duration float64 // seconds
	// Submitted is the job's submission time (unix seconds, UTC).
	Submitted float64
}

// phillyTime is the layout of philly.csv's timestamp column.
const phillyTime = "2006-01-02 15:04:05"

// LoadPhilly reads philly.csv (timestamp, duration, num_gpus, gpu_time, cluster).
func LoadPhilly(path string) ([]TraceJob, error) {
	rows, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	var out []TraceJob
	for i, r := range rows {
		if i == 0 || len(r) < 3 {
			continue
		}
		d, err1 := strconv.ParseFloat(r[1], 64)
		g, err2 := strconv.Atoi(r[2])
		if err1 != nil || err2 != nil || g < 1 || d <= 0 {
			continue
		}
		tj := TraceJob{GPUs: g, Duration: d}
		if ts, err := time.Parse(phillyTime, r[0]); err == nil {
			tj.Submitted = float64(ts.Unix())
		}
		out = append(out, tj)
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
