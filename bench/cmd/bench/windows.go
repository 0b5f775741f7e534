package main

import (
	"fmt"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
)

// Trace windows are of two kinds. Tuning windows are where paddle's
// defaults (and the sla baseline's waiting time) were chosen: the three
// windows published before held-out windows existed. Held-out windows are
// where the figures are judged; the rule that picks them (heldOutStarts)
// was committed before any of them was replayed, and no default was
// changed after looking at them.

// windowJobs is how many consecutive trace jobs a window holds.
const windowJobs = 300

// tuningWindows: 8xA100-NVSwitch 12500, 8xPCIe-NVLink-pairs 12500 and
// 8xPCIe-NVLink-pairs 45000 (the starvation guard's window).
func tuningWindows() []replay.Options {
	return []replay.Options{replayWindow(quality.A100SXM, 12500, windowJobs), replayWindow(quality.PCIeNVLinkPairs, 12500, windowJobs), guardWindow}
}

// seenWindows are every window an earlier bench replayed or an issue
// quoted (the tuning windows and the full mode's former A100 windows 30000
// and 52500 of 500 jobs): a held-out window overlaps none of them.
var seenWindows = []struct{ start, jobs int }{{12500, 300}, {45000, 300}, {30000, 500}, {52500, 500}}

// heldOutPresets are the node types held-out windows are replayed on, in
// the order heldOutStarts numbers them (i).
var heldOutPresets = []quality.Preset{quality.A100SXM, quality.PCIeNVLinkPairs}

// heldOutPerPreset is how many held-out windows each preset gets.
const heldOutPerPreset = 3

// heldOutStarts is the rule, fixed before measuring: for preset i (0:
// 8xA100-NVSwitch, 1: 8xPCIe-NVLink-pairs) and k = 1, 2, 3 the window
// starts at the trace job floor(n * (2k - 1 + i) / 8), rounded down to a
// multiple of 100, where n is the number of trace jobs: the windows
// alternate between the presets at every eighth of the trace after the
// first. A window that overlaps a seen one moves 1000 jobs later until it
// does not. For the 82,247 jobs of philly.csv: A100 10200, 30800, 51400;
// PCIe 20500, 41100, 61600.
func heldOutStarts(n, i int) []int {
	var out []int
	for k := 1; k <= heldOutPerPreset; k++ {
		start := n * (2*k - 1 + i) / 8 / 100 * 100
		for overlapsSeen(start, windowJobs) {
			start += 1000
		}
		out = append(out, start)
	}
	return out
}

func overlapsSeen(start, jobs int) bool {
	for _, s := range seenWindows {
		if start < s.start+s.jobs && s.start < start+jobs {
			return true
		}
	}
	return false
}

// heldOutWindows are the held-out windows of a trace of n jobs, preset by
// preset.
func heldOutWindows(n int) ([]replay.Options, error) {
	var out []replay.Options
	for i, p := range heldOutPresets {
		for _, start := range heldOutStarts(n, i) {
			if start+windowJobs > n {
				return nil, fmt.Errorf("held-out window %d+%d outside the trace's %d jobs", start, windowJobs, n)
			}
			out = append(out, replayWindow(p, start, windowJobs))
		}
	}
	return out, nil
}
