package main

import (
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
)

const testData = "../../quality/testdata/pollux"

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
// (phillyHeldOut, phillyTuning). The log lists them.
func TestHeldOutWindows(t *testing.T) {
	sorted := replay.SortBySubmission(loadPhilly(t))
	d, err := drawWindows(sorted)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range d.strata {
		t.Logf("stratum %d (%s): %d eligible windows, large-gang load %.3f to %.3f", i, stratumNames[i], s.candidates, s.from, s.to)
	}
	for _, x := range d.heldOut {
		t.Logf("held-out %d+%d: large-gang load %.3f, stratum %d", x.start, windowJobs, x.share, x.stratum)
	}
	for _, x := range d.tuning {
		t.Logf("tuning   %d+%d: large-gang load %.3f, stratum %d", x.start, windowJobs, x.share, x.stratum)
	}

	if len(d.heldOut) < 12 {
		t.Errorf("%d held-out windows, want at least 12", len(d.heldOut))
	}
	if len(d.strata) != loadStrata || d.strata[0].to != 0 || d.strata[1].from <= 0 {
		t.Errorf("strata %+v: want %d, the first of load 0 alone", d.strata, loadStrata)
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
		ws   []drawnWindow
		per  int
	}{{"held-out", d.heldOut, heldOutPerStratum}, {"tuning", d.tuning, tuningPerStratum}} {
		count := make([]int, loadStrata)
		for _, x := range set.ws {
			count[x.stratum]++
			s := d.strata[x.stratum]
			if x.share < s.from || x.share > s.to {
				t.Errorf("%s %d: load %.3f outside its stratum %d (%.3f to %.3f)", set.name, x.start, x.share, x.stratum, s.from, s.to)
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
	all := append(append([]drawnWindow(nil), d.heldOut...), d.tuning...)
	for i, x := range all {
		if overlapsSeen(x.start, windowJobs) {
			t.Errorf("window %d overlaps a seen window", x.start)
		}
		if x.start%windowStep != 0 || x.start+windowJobs > len(sorted) {
			t.Errorf("window %d: not on the grid or outside the trace", x.start)
		}
		for _, y := range all[:i] {
			if overlaps(x.start, windowJobs, y.start, windowJobs) {
				t.Errorf("windows %d and %d overlap", x.start, y.start)
			}
		}
		for _, b := range baseTuningWindows() {
			if overlaps(x.start, windowJobs, b.Start, b.Jobs) {
				t.Errorf("window %d overlaps the tuning window %d", x.start, b.Start)
			}
		}
	}
	// The windows the pages name.
	for _, c := range []struct {
		name      string
		got, want []drawnWindow
	}{{"held-out", d.heldOut, phillyHeldOut}, {"tuning", d.tuning, phillyTuning}} {
		if len(c.got) != len(c.want) {
			t.Fatalf("%s: %d windows, the pages name %d", c.name, len(c.got), len(c.want))
		}
		for i := range c.got {
			g, w := c.got[i], c.want[i]
			if g.start != w.start || g.stratum != w.stratum || math.Abs(g.share-w.share) > 0.00005 {
				t.Errorf("%s window %d: %+v, the pages name %+v", c.name, i, g, w)
			}
		}
	}
}

// Every held-out window is replayed on both 8-GPU presets (24 pairs), and
// the tuning set is the three tuning windows of before and the new ones on
// both presets: at least 6 windows.
func TestWindowSetsOnBothPresets(t *testing.T) {
	trace := loadPhilly(t)
	held, err := heldOutWindows(trace)
	if err != nil {
		t.Fatal(err)
	}
	tuning, err := tuningWindows(trace)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 24 {
		t.Errorf("%d held-out window-preset pairs, want 24", len(held))
	}
	presetsOf := func(ws []replay.Options) map[int][]string {
		m := map[int][]string{}
		for _, w := range ws {
			if w.Jobs != windowJobs || w != replayWindow(w.Preset, w.Start, w.Jobs) {
				t.Errorf("window %s %d+%d is not a replay window of %d jobs", w.Preset.Name, w.Start, w.Jobs, windowJobs)
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
	for _, b := range baseTuningWindows() {
		if !hasWindow(tuning, b) {
			t.Errorf("tuning set lacks the tuning window %s %d of before", b.Preset.Name, b.Start)
		}
	}
	for _, x := range phillyTuning {
		if ps := tuningStarts[x.start]; len(ps) != 2 {
			t.Errorf("tuning window %d on %v, want both presets", x.start, ps)
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
	a, err := drawWindows(sorted)
	if err != nil {
		t.Fatal(err)
	}
	b, err := drawWindows(sorted)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two draws with seed %d differ:\n%+v\n%+v", windowSeed, a, b)
	}
	c, err := drawWindowsSeeded(sorted, windowSeed+1)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a.heldOut, c.heldOut) {
		t.Errorf("seeds %d and %d draw the same held-out windows", windowSeed, windowSeed+1)
	}
	if !reflect.DeepEqual(a.strata, c.strata) {
		t.Errorf("the strata depend on the seed: %+v, %+v", a.strata, c.strata)
	}
}

// The windows of the two earlier held-out rules, and the tuning windows of
// before, are all seen windows now.
func TestEarlierWindowsAreSeen(t *testing.T) {
	trace := loadPhilly(t)
	sat, err := saturatedWindows(trace)
	if err != nil {
		t.Fatal(err)
	}
	first, err := rule1Windows(len(trace))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range append(append(baseTuningWindows(), sat...), first...) {
		if !overlapsSeen(w.Start, w.Jobs) {
			t.Errorf("%s %d+%d replayed before the rule and not in seenWindows", w.Preset.Name, w.Start, w.Jobs)
		}
	}
	for _, s := range rulesOneTwoSeen {
		if !overlapsSeen(s.start, s.jobs) {
			t.Errorf("%d+%d seen by rules 1 and 2 and not in seenWindows", s.start, s.jobs)
		}
	}
}

// The modes replay the sets: the full mode the tuning and held-out
// windows, the quick mode the second rule's (seen) windows, -window-set
// one set, a sweep the tuning windows; -windows keeps each window's kind.
func TestWindowsOfPlans(t *testing.T) {
	kinds := func(ws []window) map[string]int {
		m := map[string]int{}
		for _, w := range ws {
			m[w.kind]++
		}
		return m
	}
	for _, c := range []struct {
		name string
		f    flags
		want map[string]int
	}{
		{"full", flags{mode: "full"}, map[string]int{kindTuning: 11, kindHeldOut: 24}},
		{"quick", flags{mode: "quick"}, map[string]int{kindRule2: 6}},
		{"held-out", flags{mode: "quick", windowSet: "held-out"}, map[string]int{kindHeldOut: 24}},
		{"tuning", flags{mode: "full", windowSet: "tuning"}, map[string]int{kindTuning: 11}},
		{"rule1", flags{mode: "quick", windowSet: "rule1"}, map[string]int{kindRule1: 6}},
		{"sweep", flags{mode: "quick", sweep: sweepHeadroom}, map[string]int{kindTuning: 11}},
		{"windows", flags{mode: "quick", windows: "8xA100-NVSwitch:13200+300,8xPCIe-NVLink-pairs:24900+300,8xPCIe-NVLink-pairs:68100+300,8xA100-NVSwitch:30100+300,8xA100-NVSwitch:100+300"},
			map[string]int{kindHeldOut: 1, kindTuning: 1, kindRule2: 1, kindSeen: 1, kindOther: 1}},
	} {
		p, err := planOf(c.f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ws, err := windowsOf(p, testData)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := kinds(ws); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: windows of kinds %v, want %v", c.name, got, c.want)
		}
	}
}

// The pages say which set each window's figures come from, name the rule
// and its windows, and call the earlier rules' windows seen, a report saved
// before the rule (with the old kinds) included.
func TestPagesSayWhichSet(t *testing.T) {
	rep := func(kind string, p quality.Preset, start int) *replay.Report {
		return &replay.Report{Kind: kind, Options: replayWindow(p, start, windowJobs)}
	}
	r := &report{Replay: []*replay.Report{rep(kindHeldOut, quality.A100SXM, 13200), rep(kindTuning, quality.A100SXM, 12500),
		rep(savedKindRule2, quality.PCIeNVLinkPairs, 68100)}}
	if got := kindOf(r.Replay[2]); got != kindRule2 {
		t.Errorf("saved kind %q reads as %q, want %q", savedKindRule2, got, kindRule2)
	}
	var b strings.Builder
	r.writeWindows(&b)
	page := b.String()
	for _, want := range []string{
		"committed before any window it\npicks was replayed",
		"seed 35",
		"**held-out**, 12 windows, 24 window-preset pairs:\nno large-gang load 13200 (0%), 24000 (0%), 37000 (0%); low 20000 (5%), 21300 (2%), 13900 (3%); middle 23000 (15%), 76100 (36%), 67500 (22%); high 74000 (77%), 47200 (53%), 35600 (58%).\n",
		"**Tuning**: 8xA100-NVSwitch 12500, 8xPCIe-NVLink-pairs 12500 and 45000",
		"on both presets no large-gang load 24900 (0%); low 9200 (1%); middle 72300 (17%); high 58800 (67%).\n",
		"the patience default was reverted after the rule-2\nfigures",
		"the elastic churn fix was found on\nPCIe 68100",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("windows paragraph lacks %q:\n%s", want, page)
		}
	}
}

// The first rule's windows of philly.csv, three per preset (seen since
// issue 35's rule).
func TestRule1Windows(t *testing.T) {
	trace := loadPhilly(t)
	ws, err := rule1Windows(len(trace))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int{}
	for _, w := range ws {
		got[w.Preset.Name] = append(got[w.Preset.Name], w.Start)
		if w.Jobs != windowJobs || overlapsRulesOneTwoSeen(w.Start, w.Jobs) {
			t.Errorf("%s %d+%d: overlaps a window the rule avoided or has the wrong size", w.Preset.Name, w.Start, w.Jobs)
		}
	}
	want := map[string][]int{quality.A100SXM.Name: {10200, 30800, 51400}, quality.PCIeNVLinkPairs.Name: {20500, 41100, 61600}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rule-1 windows %v, want %v (trace of %d jobs)", got, want, len(trace))
	}
	// A window overlapping a seen one moves 1000 jobs later.
	if s := heldOutStarts(100000, 0)[0]; s != 13500 {
		t.Errorf("n=100000: first A100 window %d, want 13500 (12500 overlaps the tuning window)", s)
	}
}

// The second rule's windows of philly.csv (seen since issue 35's rule):
// three per preset, distinct, each eligible, none overlapping a window the
// rule avoided, a tuning or a first-rule window.
func TestSaturatedWindows(t *testing.T) {
	trace := loadPhilly(t)
	ws, err := saturatedWindows(trace)
	if err != nil {
		t.Fatal(err)
	}
	first, err := rule1Windows(len(trace))
	if err != nil {
		t.Fatal(err)
	}
	earlier := append(baseTuningWindows(), first...)
	sorted := replay.SortBySubmission(trace)
	got := map[string][]int{}
	for k, w := range ws {
		got[w.Preset.Name] = append(got[w.Preset.Name], w.Start)
		d, err := replay.WindowDemand(sorted, w)
		if err != nil {
			t.Fatal(err)
		}
		if w.Jobs != windowJobs || overlapsRulesOneTwoSeen(w.Start, w.Jobs) || d.OfferedLoad < saturatedMinLoad || d.Racks < saturatedMinRacks || d.Racks > saturatedMaxRacks {
			t.Errorf("%s %d+%d: not eligible (%+v)", w.Preset.Name, w.Start, w.Jobs, d)
		}
		for _, o := range append(earlier, ws[:k]...) {
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
