package main

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
)

// The held-out windows of philly.csv are the ones docs/benchmarks.md
// names, three per preset, and none overlaps a tuning or seen window.
func TestHeldOutWindows(t *testing.T) {
	trace, err := quality.LoadPhilly(filepath.Join("..", "..", "quality", "testdata", "pollux", "philly.csv"))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := heldOutWindows(len(trace))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int{}
	for _, w := range ws {
		got[w.Preset.Name] = append(got[w.Preset.Name], w.Start)
		if w.Jobs != windowJobs || overlapsSeen(w.Start, w.Jobs) {
			t.Errorf("%s %d+%d: overlaps a seen window or has the wrong size", w.Preset.Name, w.Start, w.Jobs)
		}
		for _, tw := range tuningWindows() {
			if w.Start < tw.Start+tw.Jobs && tw.Start < w.Start+w.Jobs {
				t.Errorf("%s %d overlaps tuning window %d", w.Preset.Name, w.Start, tw.Start)
			}
		}
	}
	want := map[string][]int{quality.A100SXM.Name: {10200, 30800, 51400}, quality.PCIeNVLinkPairs.Name: {20500, 41100, 61600}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("held-out windows %v, want %v (trace of %d jobs)", got, want, len(trace))
	}
	// A window overlapping a seen one moves 1000 jobs later.
	if s := heldOutStarts(100000, 0)[0]; s != 13500 {
		t.Errorf("n=100000: first A100 window %d, want 13500 (12500 overlaps the tuning window)", s)
	}
}

// The second rule's windows of philly.csv are the ones docs/benchmarks.md
// names: three per preset, distinct, each eligible, none overlapping a
// seen, tuning or first-rule window.
func TestSaturatedWindows(t *testing.T) {
	trace, err := quality.LoadPhilly(filepath.Join("..", "..", "quality", "testdata", "pollux", "philly.csv"))
	if err != nil {
		t.Fatal(err)
	}
	ws, err := saturatedWindows(trace)
	if err != nil {
		t.Fatal(err)
	}
	first, err := heldOutWindows(len(trace))
	if err != nil {
		t.Fatal(err)
	}
	earlier := append(tuningWindows(), first...)
	sorted := replay.SortBySubmission(trace)
	got := map[string][]int{}
	for k, w := range ws {
		got[w.Preset.Name] = append(got[w.Preset.Name], w.Start)
		d, err := replay.WindowDemand(sorted, w)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %d: %+v", w.Preset.Name, w.Start, d)
		if w.Jobs != windowJobs || overlapsSeen(w.Start, w.Jobs) || d.OfferedLoad < saturatedMinLoad || d.Racks < saturatedMinRacks || d.Racks > saturatedMaxRacks {
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
