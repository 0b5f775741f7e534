package runner

import (
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
)

const testData = "../quality/testdata/pollux"

// testWindows are the catalogue's windows.
func testWindows(t *testing.T) catalogue.Windows {
	t.Helper()
	cat, err := catalogue.Load()
	if err != nil {
		t.Fatal(err)
	}
	return cat.Windows
}

// setOf are the windows of the sets, as the replay takes them.
func setOf(ws catalogue.Windows, s Sets) ([]replay.Options, error) {
	wins, err := Windows(ws, s, testData)
	var out []replay.Options
	for _, w := range wins {
		out = append(out, w.Options)
	}
	return out, err
}

func loadPhilly(t *testing.T) []quality.TraceJob {
	t.Helper()
	trace, err := quality.LoadPhilly(filepath.Join(testData, "philly.csv"))
	if err != nil {
		t.Fatal(err)
	}
	return trace
}

// The held-out rule of issue 35 over philly.csv: at least 12 held-out and
// 6 tuning windows, none overlapping a seen window or another, the same
// number from every stratum of large-gang load, each window's load within
// its stratum's range, and exactly the windows the pages name
// (catalogue.yaml's philly windows). The log lists them.
func TestHeldOutWindows(t *testing.T) {
	sorted := replay.SortBySubmission(loadPhilly(t))
	ws := testWindows(t)
	d, err := draw(ws, sorted, ws.HeldOutRule.Seed)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range d.strata {
		t.Logf("stratum %d (%s): %d eligible windows, large-gang load %.3f to %.3f", i, ws.HeldOutRule.Strata[i], s.candidates, s.from, s.to)
	}
	for _, x := range d.heldOut {
		t.Logf("held-out %d+%d: large-gang load %.3f, stratum %d", x.Start, ws.Jobs, x.Load, x.Stratum)
	}
	for _, x := range d.tuning {
		t.Logf("tuning   %d+%d: large-gang load %.3f, stratum %d", x.Start, ws.Jobs, x.Load, x.Stratum)
	}

	if len(d.heldOut) < 12 {
		t.Errorf("%d held-out windows, want at least 12", len(d.heldOut))
	}
	if len(d.strata) != len(ws.HeldOutRule.Strata) || d.strata[0].to != 0 || d.strata[1].from <= 0 {
		t.Errorf("strata %+v: want %d, the first of load 0 alone", d.strata, len(ws.HeldOutRule.Strata))
	}
	for i := 1; i < len(d.strata); i++ {
		if d.strata[i].from < d.strata[i-1].to {
			t.Errorf("stratum %d starts at load %.3f below stratum %d's %.3f", i, d.strata[i].from, i-1, d.strata[i-1].to)
		}
	}
	// Balanced: every stratum gives the same number to each set, and each
	// window's load is within its stratum.
	for _, set := range []struct {
		name string
		ws   []catalogue.Drawn
		per  int
	}{{"held-out", d.heldOut, ws.HeldOutRule.HeldOutPerStratum}, {"tuning", d.tuning, ws.HeldOutRule.TuningPerStratum}} {
		count := make([]int, len(ws.HeldOutRule.Strata))
		for _, x := range set.ws {
			count[x.Stratum]++
			s := d.strata[x.Stratum]
			if x.Load < s.from || x.Load > s.to {
				t.Errorf("%s %d: load %.3f outside its stratum %d (%.3f to %.3f)", set.name, x.Start, x.Load, x.Stratum, s.from, s.to)
			}
		}
		for s, n := range count {
			if n != set.per {
				t.Errorf("%s: stratum %d gives %d windows, want %d", set.name, s, n, set.per)
			}
		}
	}
	// None overlaps a seen window or another window of either set (the
	// tuning windows of before included).
	all := append(append([]catalogue.Drawn(nil), d.heldOut...), d.tuning...)
	for i, x := range all {
		span := catalogue.Span{Start: x.Start, Jobs: ws.Jobs}
		if ws.OverlapsSeen(span) {
			t.Errorf("window %d overlaps a seen window", x.Start)
		}
		if x.Start%ws.Step != 0 || x.Start+ws.Jobs > len(sorted) {
			t.Errorf("window %d: not on the grid or outside the trace", x.Start)
		}
		for _, y := range all[:i] {
			if span.Overlaps(catalogue.Span{Start: y.Start, Jobs: ws.Jobs}) {
				t.Errorf("windows %d and %d overlap", x.Start, y.Start)
			}
		}
		for _, b := range ws.Tuning {
			if span.Overlaps(catalogue.Span{Start: b.Start, Jobs: b.Jobs}) {
				t.Errorf("window %d overlaps the tuning window %d", x.Start, b.Start)
			}
		}
	}
	// The windows the pages name.
	for _, c := range []struct {
		name      string
		got, want []catalogue.Drawn
	}{{"held-out", d.heldOut, ws.PhillyHeldOut}, {"tuning", d.tuning, ws.PhillyTuning}} {
		if len(c.got) != len(c.want) {
			t.Fatalf("%s: %d windows, the pages name %d", c.name, len(c.got), len(c.want))
		}
		for i := range c.got {
			g, w := c.got[i], c.want[i]
			if g.Start != w.Start || g.Stratum != w.Stratum || math.Abs(g.Load-w.Load) > 0.00005 {
				t.Errorf("%s window %d: %+v, the pages name %+v", c.name, i, g, w)
			}
		}
	}
}

// Every held-out window is replayed on both 8-GPU presets (24 pairs), and
// the tuning set is the three tuning windows of before and the new ones on
// both presets: at least 6 windows.
func TestWindowSetsOnBothPresets(t *testing.T) {
	ws := testWindows(t)
	held, err := setOf(ws, Sets{HeldOut: true})
	if err != nil {
		t.Fatal(err)
	}
	tuning, err := setOf(ws, Sets{Tuning: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 24 {
		t.Errorf("%d held-out window-preset pairs, want 24", len(held))
	}
	presetsOf := func(os []replay.Options) map[int][]string {
		m := map[int][]string{}
		for _, w := range os {
			if w.Jobs != ws.Jobs || w != Options(ws, catalogue.Window{Preset: w.Preset, Start: w.Start, Jobs: w.Jobs}) {
				t.Errorf("window %s %d+%d is not a replay window of %d jobs", w.Preset.Name, w.Start, w.Jobs, ws.Jobs)
			}
			m[w.Start] = append(m[w.Start], w.Preset.Name)
		}
		return m
	}
	both := []string{quality.A100SXM.Name, quality.PCIeNVLinkPairs.Name}
	heldStarts := presetsOf(held)
	for start, ps := range heldStarts {
		slices.Sort(ps)
		if !reflect.DeepEqual(ps, both) {
			t.Errorf("held-out window %d on %v, want both presets %v", start, ps, both)
		}
	}
	tuningStarts := presetsOf(tuning)
	if len(tuningStarts) < 6 || len(heldStarts) < 12 {
		t.Errorf("%d tuning and %d held-out windows, want at least 6 and 12", len(tuningStarts), len(heldStarts))
	}
	for _, b := range tuningBefore(ws) {
		if !has(tuning, b) {
			t.Errorf("tuning set lacks the tuning window %s %d of before", b.Preset.Name, b.Start)
		}
	}
	for _, x := range ws.PhillyTuning {
		if ps := tuningStarts[x.Start]; len(ps) != 2 {
			t.Errorf("tuning window %d on %v, want both presets", x.Start, ps)
		}
	}
	for start := range heldStarts {
		if _, ok := tuningStarts[start]; ok {
			t.Errorf("window %d is both tuning and held-out", start)
		}
	}
}

// The draw depends on the seed alone: the same seed picks the same windows,
// and another seed other ones (the seed matters).
func TestHeldOutRuleDeterministic(t *testing.T) {
	sorted := replay.SortBySubmission(loadPhilly(t))
	ws := testWindows(t)
	seed := ws.HeldOutRule.Seed
	a, err := draw(ws, sorted, seed)
	if err != nil {
		t.Fatal(err)
	}
	b, err := draw(ws, sorted, seed)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two draws with seed %d differ:\n%+v\n%+v", seed, a, b)
	}
	c, err := draw(ws, sorted, seed+1)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a.heldOut, c.heldOut) {
		t.Errorf("seeds %d and %d draw the same held-out windows", seed, seed+1)
	}
	if !reflect.DeepEqual(a.strata, c.strata) {
		t.Errorf("the strata depend on the seed: %+v, %+v", a.strata, c.strata)
	}
}

// The windows of the two earlier held-out rules, and the tuning windows of
// before, are all seen windows now.
func TestEarlierWindowsAreSeen(t *testing.T) {
	trace, ws := loadPhilly(t), testWindows(t)
	sat, err := rule2(ws, replay.SortBySubmission(trace))
	if err != nil {
		t.Fatal(err)
	}
	first, err := rule1(ws, len(trace))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range append(append(tuningBefore(ws), sat...), first...) {
		if !ws.OverlapsSeen(catalogue.Span{Start: w.Start, Jobs: w.Jobs}) {
			t.Errorf("%s %d+%d replayed before the rule and not in the catalogue's seen list", w.Preset.Name, w.Start, w.Jobs)
		}
	}
	for _, s := range ws.Avoided {
		if !ws.OverlapsSeen(s) {
			t.Errorf("%d+%d seen by rules 1 and 2 and not in the catalogue's seen list", s.Start, s.Jobs)
		}
	}
}

// The first rule's windows of philly.csv, three per preset (seen since
// issue 35's rule).
func TestRule1Windows(t *testing.T) {
	trace, ws := loadPhilly(t), testWindows(t)
	wins, err := rule1(ws, len(trace))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int{}
	for _, w := range wins {
		got[w.Preset.Name] = append(got[w.Preset.Name], w.Start)
		if w.Jobs != ws.Jobs || ws.OverlapsAvoided(catalogue.Span{Start: w.Start, Jobs: w.Jobs}) {
			t.Errorf("%s %d+%d: overlaps a window the rule avoided or has the wrong size", w.Preset.Name, w.Start, w.Jobs)
		}
	}
	want := map[string][]int{quality.A100SXM.Name: {10200, 30800, 51400}, quality.PCIeNVLinkPairs.Name: {20500, 41100, 61600}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rule-1 windows %v, want %v (trace of %d jobs)", got, want, len(trace))
	}
	// A window overlapping a seen one moves 1000 jobs later.
	if s := rule1Starts(ws, 100000, 0)[0]; s != 13500 {
		t.Errorf("n=100000: first A100 window %d, want 13500 (12500 overlaps the tuning window)", s)
	}
}

// The second rule's windows of philly.csv (seen since issue 35's rule):
// three per preset, distinct, each eligible, none overlapping a window the
// rule avoided, a tuning or a first-rule window.
func TestSaturatedWindows(t *testing.T) {
	trace, ws := loadPhilly(t), testWindows(t)
	sorted := replay.SortBySubmission(trace)
	wins, err := rule2(ws, sorted)
	if err != nil {
		t.Fatal(err)
	}
	first, err := rule1(ws, len(trace))
	if err != nil {
		t.Fatal(err)
	}
	earlier := append(tuningBefore(ws), first...)
	got := map[string][]int{}
	for k, w := range wins {
		got[w.Preset.Name] = append(got[w.Preset.Name], w.Start)
		d, err := replay.WindowDemand(sorted, w)
		if err != nil {
			t.Fatal(err)
		}
		if w.Jobs != ws.Jobs || ws.OverlapsAvoided(catalogue.Span{Start: w.Start, Jobs: w.Jobs}) || !eligible(ws, d) {
			t.Errorf("%s %d+%d: not eligible (%+v)", w.Preset.Name, w.Start, w.Jobs, d)
		}
		for _, o := range append(earlier, wins[:k]...) {
			if w.Start < o.Start+o.Jobs && o.Start < w.Start+w.Jobs {
				t.Errorf("%s %d overlaps window %s %d", w.Preset.Name, w.Start, o.Preset.Name, o.Start)
			}
		}
	}
	want := map[string][]int{quality.A100SXM.Name: {71200, 4900, 11900}, quality.PCIeNVLinkPairs.Name: {7400, 68700, 68100}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("saturated windows %v, want %v (trace of %d jobs)", got, want, len(trace))
	}
}
