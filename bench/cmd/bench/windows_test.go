package main

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
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
