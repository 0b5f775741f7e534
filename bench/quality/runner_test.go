package quality

import (
	"testing"

	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
)

// A small scenario end to end: every placer places something and the
// metrics are finite. (The benchmarks report the numbers; a test does not
// judge them.)
func TestRunSmallScenario(t *testing.T) {
	stock, ours, err := simsched.LoadCompared()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(Scenario{Preset: PCIeNVLinkPairs, Racks: 2, NodesPerRack: 8, Seed: 1, PSShare: 0.3, Load: 0.9}, polluxDir, stock, ours)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.String())
	if len(r.Metrics) != 3 {
		t.Fatalf("metrics for %d placers", len(r.Metrics))
	}
	for _, m := range r.Metrics {
		if m.Placed == 0 || m.MeanSlowdown < 1-1e-9 {
			t.Errorf("%s: %+v", m.Placer, m)
		}
	}
}
