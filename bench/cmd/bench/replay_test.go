package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
)

// The replay section names the best stock configuration by mean JCT, states
// paddle's ratios to it and the guard's idle GPU-hours, the number of runs
// and their ranges, and writes its plots.
func TestReplaySectionRatiosAndPlots(t *testing.T) {
	m := func(name string, meanJCT, p95, idle, longest float64) replay.Metrics {
		return replay.Metrics{Config: name, Jobs: 10, Started: 10, MeanJCT: meanJCT * 3600, P95JCT: p95 * 3600, IdleGPUHours: idle,
			LongestWait: longest * 3600, JCTQuantiles: []float64{3600, 7200}, UtilisationOverTime: []float64{0.5, 0.7}, UtilBin: 3600}
	}
	rep := &replay.Report{Workload: "w", Options: replay.Options{Preset: quality.A100SXM, Start: 5, Jobs: 10},
		Metrics: []replay.Metrics{m(replay.Stock, 5, 20, 600, 15), m(replay.StockBinpack, 4, 16, 0, 3),
			m(replay.Paddle, 3, 12, 4, 2), m(paddleHoldBack, 3.2, 12, 30, 4), m(paddleAfter30m, 3.5, 13, 9, 1.5),
			m(paddleNoGuard, 2.9, 12, 0, 9), replay.LowerBoundMetrics(&replay.Workload{}, nil, nil)},
		Notes: map[string]string{}, Runs: 3,
		Spread: map[string]replay.Spread{replay.Paddle: {MeanJCT: replay.Range{Min: 2.5 * 3600, Max: 3.5 * 3600},
			P95JCT: replay.Range{Min: 11 * 3600, Max: 13 * 3600}, LongestWait: replay.Range{Min: 1 * 3600, Max: 3 * 3600},
			IdleGPUHours: replay.Range{Min: 0.5, Max: 8}}}}
	dir := t.TempDir()
	r := &report{Mode: "quick", Replay: []*replay.Report{rep}}
	var b strings.Builder
	r.writeReplay(&b, dir)
	page := b.String()
	for _, want := range []string{
		"paddle / best stock (stock-binpack)",
		"| 0.75x | - | 0.75x |", // mean and p95 JCT 3/4 and 12/16; median 0/0
		"the reservation left 4.0 GPU-hours idle",
		"the old hold-back 30.0",
		"Longest wait 2.00 h with the reservation, 4.00 h with the hold-back, 9.00 h with\nno guard",
		"former 30m threshold: mean JCT 3.50 h, idle 9.0 GPU-h, longest wait 1.50 h",
		"Every figure is the mean of 3 replays",
		"| paddle | 2.50 to 3.50 | 11.00 to 13.00 | 1.00 to 3.00 | 0.5 to 8.0 |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("section lacks %q:\n%s", want, page)
		}
	}
	for _, f := range []string{"replay-jct-8xa100-nvswitch-5-10.svg", "replay-util-8xa100-nvswitch-5-10.svg"} {
		if !strings.Contains(page, "]("+f+")") {
			t.Errorf("section does not link %s beside the page", f)
		}
		svg, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !strings.Contains(string(svg), "<polyline") {
			t.Errorf("%s: %v, no lines", f, err)
		}
	}
}

func TestParseWindows(t *testing.T) {
	cases := []struct {
		in      string
		want    []replay.Options
		wantErr string
	}{
		{in: "8xA100-NVSwitch:40000+300", want: []replay.Options{replayWindow(quality.A100SXM, 40000, 300)}},
		{in: "8xA100-NVSwitch:1+2, 8xPCIe-NVLink-pairs:70000+500",
			want: []replay.Options{replayWindow(quality.A100SXM, 1, 2), replayWindow(quality.PCIeNVLinkPairs, 70000, 500)}},
		{in: "8xA100-NVSwitch:40000", wantErr: "want PRESET:START+JOBS"},
		{in: "A100:1+300", wantErr: `no preset "A100"`},
		{in: "8xA100-NVSwitch:-1+300", wantErr: "START must be"},
		{in: "8xA100-NVSwitch:1+1", wantErr: "JOBS at least 2"},
		{in: "8xA100-NVSwitch:x+300", wantErr: "START must be"},
	}
	for _, c := range cases {
		got, err := parseWindows(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: error %v, want one saying %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

// The target of issue 27, at the tables' precision.
func TestTarget(t *testing.T) {
	m := func(mean, p95, idle float64) replay.Metrics {
		return replay.Metrics{MeanJCT: mean, P95JCT: p95, IdleGPUHours: idle}
	}
	lb := m(1, 1, 0)
	const h = 3600.0
	tests := []struct {
		name        string
		ours, stock replay.Metrics
		lb          replay.Metrics
		flex        bool
		want        string
	}{
		{"ties, no room to win", m(1.004, 2, 0.04), m(1, 2, 0), m(0.9, 1, 0), false, "met"},
		{"ties where stock is 1.2x the lower bound", m(1.2, 2, 0), m(1.2, 2, 0), lb, false, "not met: mean 1.00x > 0.95x"},
		{"wins by 5% where there is room", m(1.14, 2, 0), m(1.2, 2, 0), lb, false, "met"},
		{"worse p95 and idle", m(1, 2.2, 3), m(1, 2, 0), m(0.95, 1, 0), false, "not met: p95 1.10x > 1.00x, idle 3.0 > 0.0 GPU-h"},
		{"flex: 0.85x mean, 0.95x p95", m(0.85, 1.9, 9), m(1, 2, 0), lb, true, "met"},
		{"flex: a tie is not enough", m(1, 2, 0), m(1, 2, 0), m(0.5, 1, 0), true, "not met: mean 1.00x > 0.85x, p95 1.00x > 0.95x"},
		// A100 71200's flex figures (README): 0.85x the best stock mean is
		// below the lower bound; 0.95x its p95 is not.
		{"flex: a target below the lower bound says so", m(3.91*h, 19.87*h, 0), m(3.71*h, 14.87*h, 0), m(3.41*h, 13.96*h, 0), true,
			"not met: mean 1.05x > 0.85x (0.85x is 3.15 h, below the lower bound's 3.41 h: no schedule meets it), p95 1.34x > 0.95x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := target(tc.ours, tc.stock, tc.stock, tc.stock, tc.lb, tc.flex); got != tc.want {
				t.Errorf("target: %q, want %q", got, tc.want)
			}
		})
	}
}

// The go command of the allocate part builds the Volcano this test binary
// embeds (both read the same module file).
func TestSameVolcano(t *testing.T) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := sameVolcano(context.Background(), root); err != nil {
		t.Error(err)
	}
}

// A run's first line names only the parts it runs: a full run that skips
// every part but the replay promises no duration the replay's own estimate
// does not give.
func TestPlanDescribe(t *testing.T) {
	p, err := planOf(flags{mode: "full", skip: "allocate,cluster,quality,jobsize"})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.describe(); d != "the replay (its estimate follows once its windows are known)" {
		t.Errorf("replay only: %q", d)
	}
	p, err = planOf(flags{mode: "full", skip: "replay,cluster"})
	if err != nil {
		t.Fatal(err)
	}
	d := p.describe()
	for _, want := range []string{"allocate (", "quality 2 presets", "job size", "at most about 10m0s"} {
		if !strings.Contains(d, want) {
			t.Errorf("%q lacks %q", d, want)
		}
	}
	for _, not := range []string{"cluster", "replay"} {
		if strings.Contains(d, not) {
			t.Errorf("%q names %q, which is skipped", d, not)
		}
	}
}
