package report

import (
	"fmt"
	"strings"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
)

// writeWindows is the pages' paragraph on the windows: which are tuning,
// which held-out, by which rule, and which were replayed before it.
func (r *Report) writeWindows(b *strings.Builder) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	ws, rule := r.cat.Windows, r.cat.Windows.HeldOutRule
	byStratum := func(drawn []catalogue.Drawn) string {
		var parts []string
		for s, name := range rule.Strata {
			var starts []string
			for _, x := range drawn {
				if x.Stratum == s {
					starts = append(starts, fmt.Sprintf("%d (%.0f%%)", x.Start, 100*x.Load))
				}
			}
			parts = append(parts, name+" "+strings.Join(starts, ", "))
		}
		return strings.Join(parts, "; ")
	}
	w("**Windows.** Defaults (paddle's, and the sla baseline's waiting time) are chosen on *tuning* windows\n")
	w("only, each sweep by a rule committed before it runs; *held-out* windows only judge, and no default is\n")
	w("chosen or changed on a held-out figure. Both sets come from one rule, committed before any window it\n")
	w("picks was replayed (`bench/runner/windows.go`, parameters in `bench/catalogue/catalogue.yaml`, issue 35). Candidates are the windows of %d jobs\n", ws.Jobs)
	w("starting at a multiple of %d that overlap no window replayed before (the catalogue's `seen` list) and whose\n", ws.Step)
	w("cluster, sized as above, is offered a load of at least %.1f after rounding up to whole racks, on %d to\n", ws.MinLoad, ws.MinRacks)
	w("%d racks. Their *large-gang load* is the share of the window's offered GPU-seconds from jobs of %d\n", ws.MaxRacks, rule.LargeGangGPUs)
	w("GPUs or more (a whole node), from the trace alone; they fall into %d strata: none, then the low, middle\n", len(rule.Strata))
	w("and high thirds of the rest. A seeded draw (PCG, seed %d) takes %d held-out windows from each stratum,\n", rule.Seed, rule.HeldOutPerStratum)
	w("then %d tuning window from each, none overlapping another, and every one is replayed on both 8-GPU\n", rule.TuningPerStratum)
	w("presets. For philly.csv (large-gang load in brackets), **held-out**, %d windows, %d window-preset pairs:\n", len(ws.PhillyHeldOut), len(ws.PhillyHeldOut)*len(ws.Presets))
	w("%s.\n", byStratum(ws.PhillyHeldOut))
	w("**Tuning**: 8xA100-NVSwitch 12500, 8xPCIe-NVLink-pairs 12500 and 45000 (those of every sweep before the\n")
	w("rule), and on both presets %s.\n", byStratum(ws.PhillyTuning))
	w("Windows replayed before the rule are *seen* and judge nothing, among them the two earlier held-out\n")
	w("rules' (**rule 1**: A100 10200, 30800, 51400, PCIe 20500, 41100, 61600, bursts of 1-GPU jobs where all\n")
	w("configurations were within 1%%; **rule 2**, saturated with large gangs: A100 71200, 4900, 11900, PCIe\n")
	w("7400, 68700, 68100). Those did not stay held out: the patience default was reverted after the rule-2\n")
	w("figures ([heldout-patience](../heldout-patience/README.md)), the elastic churn fix was found on\n")
	w("PCIe 68100, and the second to fifth headroom sweeps were written after looking at them.\n\n")
}
