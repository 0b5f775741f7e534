package report

import (
	"sort"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
)

// AllocResult is one configuration and size of the allocate benchmark,
// averaged over the runs of `go test -bench`.
type AllocResult struct {
	Nodes, Pods int
	Config      string
	NsPerOp     float64
	Allocs      float64
	Bytes       float64
	Placed      float64
	Gpus        float64
	// N is how many runs were averaged.
	N int
}

// QualityResult is the placement quality of one preset, every seed.
type QualityResult struct {
	Preset  quality.Preset
	Reports []*quality.Report
}

// mean of a metric over seeds, for one placer.
func (q QualityResult) mean(placer string, f func(quality.Metrics) float64) float64 {
	s, n := 0.0, 0
	for _, r := range q.Reports {
		for _, m := range r.Metrics {
			if m.Placer == placer {
				s += f(m)
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

// Metrics read by the quality tables and chart.
func meanSlowdown(x quality.Metrics) float64           { return x.MeanSlowdown }
func p95Slowdown(x quality.Metrics) float64            { return x.P95Slowdown }
func qScore(x quality.Metrics) float64                 { return x.Q }
func oneNode(x quality.Metrics) float64                { return x.OneNode }
func psCrossNIC(x quality.Metrics) float64             { return x.PSCrossNIC }
func racks(x quality.Metrics) float64                  { return x.Racks }
func blocked(x quality.Metrics) float64                { return float64(x.Blocked) }
func blockedByFragmentation(x quality.Metrics) float64 { return float64(x.BlockedByFragmentation) }

func sortedKeys(m map[string]float64) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
