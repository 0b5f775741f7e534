package quality

import (
	"math"
	"sort"
)

// Metrics of one placer on one workload.
type Metrics struct {
	Placer string
	Jobs   int
	Placed int
	// Slowdown against each job's best placement, weighted by GPU time,
	// over the jobs every placer placed (so placers are compared on the
	// same jobs).
	MeanSlowdown, P95Slowdown float64
	// Q = (random - this) / (random - best) on the mean slowdown: 1 is the
	// best placement, 0 no better than random.
	Q float64
	// OneNode: of the multi-GPU jobs that fit in one node, the share placed
	// on one node.
	OneNode float64
	// PSCrossNIC: share of PS trainer-pserver bytes that cross a NIC.
	PSCrossNIC float64
	// Racks: mean racks spanned by jobs of more than one pod.
	Racks float64
	// Blocked: jobs not placed; BlockedByFragmentation: of those, jobs
	// whose GPUs would fit in the GPUs left free in total.
	Blocked, BlockedByFragmentation int
}

// Evaluate computes the metrics of every placer's placements. placements
// maps placer name to its placements; "random" must be among them.
func Evaluate(c Cluster, jobs []Job, models map[string]Model, placements map[string][]Placement) []Metrics {
	type jobEval struct {
		pods []Pod
	}
	resolved := map[string]map[string][]Pod{}
	placedBy := map[string]map[string]bool{}
	for name, ps := range placements {
		resolved[name] = c.Resolve(ps)
		placedBy[name] = map[string]bool{}
		for _, p := range ps {
			placedBy[name][p.Job.Name] = true
		}
	}
	// Jobs placed by every placer.
	var common []Job
	for _, j := range jobs {
		all := true
		for name := range placements {
			if !placedBy[name][j.Name] {
				all = false
			}
		}
		if all {
			common = append(common, j)
		}
	}
	best := map[string]float64{}
	for _, j := range jobs {
		empty, p := c.BestPlacement(j)
		best[j.Name] = empty.Step(models[j.Model], j, empty.Resolve([]Placement{p})[j.Name])
	}
	var out []Metrics
	means := map[string]float64{}
	names := make([]string, 0, len(placements))
	for n := range placements {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		m := Metrics{Placer: name, Jobs: len(jobs), Placed: len(placements[name])}
		var sd []weighted
		for _, j := range common {
			step := c.Step(models[j.Model], j, resolved[name][j.Name])
			sd = append(sd, weighted{step / best[j.Name], j.Weight()})
		}
		m.MeanSlowdown, m.P95Slowdown = weightedMean(sd), weightedQuantile(sd, 0.95)
		means[name] = m.MeanSlowdown

		oneNodeFit, oneNode := 0, 0
		var cross, total, racks float64
		multi := 0
		freeGPUs := c.FreeGPUs()
		for _, p := range placements[name] {
			j := p.Job
			freeGPUs -= j.GPUs
			pods := resolved[name][j.Name]
			nodes, rks := map[string]bool{}, map[string]bool{}
			for _, pod := range pods {
				nodes[pod.Node] = true
				rks[pod.Rack] = true
			}
			if j.GPUs > 1 && j.GPUs <= c.Preset.GPUsPerNode {
				oneNodeFit++
				if len(nodes) == 1 {
					oneNode++
				}
			}
			if len(pods) > 1 {
				multi++
				racks += float64(len(rks))
			}
			if j.PS {
				cr, t := PSCrossNICBytes(models[j.Model], pods)
				cross += cr
				total += t
			}
		}
		if oneNodeFit > 0 {
			m.OneNode = float64(oneNode) / float64(oneNodeFit)
		}
		if total > 0 {
			m.PSCrossNIC = cross / total
		}
		if multi > 0 {
			m.Racks = racks / float64(multi)
		}
		for _, j := range jobs {
			if !placedBy[name][j.Name] {
				m.Blocked++
				if j.GPUs <= freeGPUs {
					m.BlockedByFragmentation++
				}
			}
		}
		out = append(out, m)
	}
	for i := range out {
		if r := means["random"]; r > 1 {
			out[i].Q = (r - out[i].MeanSlowdown) / (r - 1)
		}
	}
	return out
}

type weighted struct{ v, w float64 }

func weightedMean(xs []weighted) float64 {
	var s, w float64
	for _, x := range xs {
		s += x.v * x.w
		w += x.w
	}
	if w == 0 {
		return math.NaN()
	}
	return s / w
}

func weightedQuantile(xs []weighted, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sorted := append([]weighted(nil), xs...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].v < sorted[b].v })
	var total float64
	for _, x := range sorted {
		total += x.w
	}
	acc := 0.0
	for _, x := range sorted {
		acc += x.w
		if acc >= q*total {
			return x.v
		}
	}
	return sorted[len(sorted)-1].v
}
