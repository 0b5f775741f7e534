package quality

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
)

// TraceJob is one job of the Philly trace.
type TraceJob struct {
	GPUs     int
	Duration float64 // seconds
}

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
		out = append(out, TraceJob{GPUs: g, Duration: d})
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
		tj := pool[min(k, len(pool)-1)]
		j := Job{Name: fmt.Sprintf("job-%04d", i), GPUs: tj.GPUs, Duration: tj.Duration, Model: models[rng.Intn(len(models))]}
		if rng.Float64() < o.PSShare {
			j.PS, j.PodGPUs, j.Pods = true, 1, tj.GPUs
			j.PServers = min(8, max(1, tj.GPUs/4))
		} else {
			var sizes []int
			for _, s := range []int{1, 2, 4, 8} {
				if s <= tj.GPUs && s <= o.NodeGPUs && tj.GPUs%s == 0 {
					sizes = append(sizes, s)
				}
			}
			j.PodGPUs = sizes[rng.Intn(len(sizes))]
			j.Pods = tj.GPUs / j.PodGPUs
		}
		jobs = append(jobs, j)
		gpus += j.GPUs
	}
	return jobs
}
