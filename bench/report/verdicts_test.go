package report

import (
	"strings"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/catalogue/catalogtest"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
)

// A run with seeds gets the verdict table: per node type the geometric
// means against the best per window and the best single stock
// configuration, with intervals and verdicts, the reference and the bound
// beside them, and each window's ratio.
func TestVerdictsTable(t *testing.T) {
	window := func(start int, paddle []float64) *replay.Report {
		return seededWindow(catalogue.KindTuning, replay.Options{Preset: quality.A100SXM, Start: start, Jobs: 300}, []int64{0, 1, 2}, func(k int) []replay.Metrics {
			return []replay.Metrics{
				jctMetrics(replay.Stock, replay.RoleStock, 10+float64(k)), jctMetrics("stock-binpack", replay.RoleStock, 11+float64(k)),
				jctMetrics(replay.Paddle, replay.RolePaddle, paddle[k]), jctMetrics(replay.Clairvoyant, replay.RoleReference, 7+float64(k)),
				jctMetrics(replay.LowerBound, replay.RoleBound, 5)}
		})
	}
	r := &Report{Replay: []*replay.Report{window(100, []float64{9, 9.9, 10.8}), window(200, []float64{9, 9.9, 10.8})}, cat: catalogtest.Load(t)}
	var b strings.Builder
	r.writeVerdicts(&b)
	page := b.String()
	pageHas(t, "page", page,
		"| tuning (2) | 8xA100-NVSwitch | mean JCT | 0.900 [0.900, 0.900] better | 0.900 [0.900, 0.900] better (stock) | 0.727 [0.710, 0.743] better | 0.45 |",
		"| tuning: 8xA100-NVSwitch 100+300 | 0.900 [0.900, 0.900] better |",
		// Target 0.95 S (the bound, 5, leaves room): 0.9 / 0.95.
		"| tuning (2) | 8xA100-NVSwitch | mean JCT | 0.95 | 0.947 [0.947, 0.947] better | 0.947 [0.947, 0.947] better (stock) |",
		// Pooled: no waits kept in these figures, no p99.
		"| windows | node type | config | jobs of 8+ GPUs | their p99 wait h | free GPU-h while jobs waited | jobs never started |",
		"| tuning (2) | 8xA100-NVSwitch | stock | 0 | - | 0 | 0 |",
	)
	// The elastic and checkpoint workload's targets: mean 0.80 S (the bound,
	// 5, leaves room down to 8.8: 0.9 / 0.8), p95 0.95 S.
	flex := func(rep *replay.Report) *replay.Report { rep.Options.Flex = replay.Flex{ElasticShare: 0.5}; return rep }
	fr := &Report{Replay: []*replay.Report{flex(window(100, []float64{9, 9.9, 10.8})), flex(window(200, []float64{9, 9.9, 10.8}))}, cat: catalogtest.Load(t)}
	var fb strings.Builder
	fr.writeVerdicts(&fb)
	pageHas(t, "flex page", fb.String(),
		"| tuning (2) | 8xA100-NVSwitch | mean JCT | 0.80 | 1.125 [1.125, 1.125] worse | 1.125 [1.125, 1.125] worse (stock) |",
		"| tuning (2) | 8xA100-NVSwitch | p95 JCT | 0.95 |",
	)
	// Reports saved before seeds varied have no verdicts.
	var old strings.Builder
	(&Report{Replay: []*replay.Report{{Kind: catalogue.KindTuning}}, cat: catalogtest.Load(t)}).writeVerdicts(&old)
	if old.Len() != 0 {
		t.Errorf("verdicts for a report without seeds: %s", old.String())
	}
}

// jctMetrics is a configuration's figures with mean JCT mean and p95 JCT
// twice that, every job started.
func jctMetrics(c string, role replay.Role, mean float64) replay.Metrics {
	return replay.Metrics{Config: c, Role: role, Jobs: 2, Started: 2, MeanJCT: mean, P95JCT: 2 * mean}
}

// seededWindow is a window of set kind replayed under seeds, the k-th
// seed's figures rows(k); its averaged figures are the first seed's.
func seededWindow(kind string, o replay.Options, seeds []int64, rows func(k int) []replay.Metrics) *replay.Report {
	rep := &replay.Report{Kind: kind, Options: o}
	for k, s := range seeds {
		rep.PerSeed = append(rep.PerSeed, replay.SeedResult{Seed: s, Metrics: rows(k)})
	}
	rep.Metrics = rep.PerSeed[0].Metrics
	return rep
}
