package report

import (
	"strings"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/catalogue/catalogtest"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
)

// -before joins an earlier run's paddle to the windows it replayed with
// the same options and seeds, and the verdicts give paddle / paddle
// before, paired by seed; a window under other options, or whose seeds
// differ, gets none, and says why.
func TestAddBefore(t *testing.T) {
	window := func(start int, seeds []int64, paddle float64, linkScale float64) *replay.Report {
		o := replay.Options{Preset: quality.A100SXM, Start: start, Jobs: 300, Sensitivity: replay.Sensitivity{LinkScale: linkScale}}
		return seededWindow(catalogue.KindHeldOut, o, seeds, func(k int) []replay.Metrics {
			return []replay.Metrics{jctMetrics(replay.Stock, replay.RoleStock, 10+float64(k)), jctMetrics(replay.Paddle, replay.RolePaddle, paddle+float64(k)),
				jctMetrics(replay.Clairvoyant, replay.RoleReference, 7), jctMetrics(replay.LowerBound, replay.RoleBound, 5)}
		})
	}
	seeds := []int64{1, 2, 3}
	cur := &Report{cat: catalogtest.Load(t), Replay: []*replay.Report{
		window(100, seeds, 9, 0), window(200, seeds, 9, 0), window(300, seeds, 9, 2), window(400, []int64{1, 2, 4}, 9, 0)}}
	before := &Report{cat: catalogtest.Load(t), Replay: []*replay.Report{
		window(100, seeds, 10, 0), window(200, seeds, 10, 0), window(300, seeds, 10, 0), window(400, seeds, 10, 0)}}
	added, missing := cur.AddBefore(before, "docs/bench/old/results.json")
	if added != 2 || len(missing) != 2 || !strings.Contains(missing[0], "300+300") || !strings.Contains(missing[1], "400+300") {
		t.Fatalf("added %d, missing %q; want 2 (windows 100 and 200), the other two missing", added, missing)
	}
	if cur.Before != "docs/bench/old/results.json" {
		t.Errorf("Before = %q", cur.Before)
	}
	for _, rep := range cur.Replay[:2] {
		for k, sr := range rep.PerSeed {
			got, ok := seedMetric(sr, PaddleBefore)
			if !ok || got.MeanJCT != 10+float64(k) || got.Role != replay.RolePaddle {
				t.Errorf("window %d seed %d: paddle-before %+v", rep.Options.Start, sr.Seed, got)
			}
		}
	}
	if _, ok := seedMetric(cur.Replay[2].PerSeed[0], PaddleBefore); ok {
		t.Error("a window under other options got the earlier paddle")
	}
	// Joined again (a page rendered again with -before): nothing doubles.
	if again, _ := cur.AddBefore(before, "docs/bench/old/results.json"); again != 0 {
		t.Errorf("joined again to %d windows", again)
	}
	var b strings.Builder
	cur.writeVerdicts(&b)
	page := b.String()
	// Seeds 1, 2, 3: paddle 9, 10, 11 against 10, 11, 12 before.
	pageHas(t, "page", page, "| windows | node type | paddle / paddle before (docs/bench/old/results.json), mean JCT | p95 JCT |",
		"| held-out (2) | 8xA100-NVSwitch | 0.909 [")
	if strings.Contains(page, "variant / paddle, mean JCT") {
		t.Errorf("paddle-before is listed as a variant of paddle:\n%s", page)
	}
}

func seedMetric(sr replay.SeedResult, config string) (replay.Metrics, bool) {
	for _, m := range sr.Metrics {
		if m.Config == config {
			return m, true
		}
	}
	return replay.Metrics{}, false
}
