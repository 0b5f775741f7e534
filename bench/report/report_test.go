package report

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/catalogue/catalogtest"
	"github.com/volcano-paddle/volcano-paddle/bench/clusterbench"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
	"github.com/volcano-paddle/volcano-paddle/bench/runner"
	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
)

// Figures measured by `make bench-full` on 2026-11-22 (then docs/benchmarks.md).
var (
	wave250Stock = clusterbench.Measurement{Config: "stock", Size: clusterbench.Size{Nodes: 250, Pods: 2000}, Jobs: 35,
		BoundPerSecond: 43, CreatedPerSecond: 48, LastGangBound: 49 * time.Second, MedianBindLag: 5190 * time.Millisecond,
		GangLag: 2180 * time.Millisecond, SchedulerSessions: 19, SessionMean: 1588 * time.Millisecond, Gang64: 3230 * time.Millisecond,
		CPU: map[string]float64{"etcd": 9, "kube-apiserver": 37, "kube-controller-manager": 3, "kwok": 8, "vc-controller-manager-paddle": 9, "vc-scheduler-paddle": 17}}
	wave5000Stock = clusterbench.Measurement{Config: "stock", Size: clusterbench.Size{Nodes: 5000, Pods: 10000}, Jobs: 197,
		BoundPerSecond: 27, CreatedPerSecond: 48, LastGangBound: 377 * time.Second, MedianBindLag: 62 * time.Second,
		GangLag: 60530 * time.Millisecond, SchedulerSessions: 19, SessionMean: 12204 * time.Millisecond, Gang64: 3450 * time.Millisecond,
		CPU: map[string]float64{"etcd": 41, "kube-apiserver": 182, "kube-controller-manager": 13, "kwok": 51, "vc-controller-manager-paddle": 59, "vc-scheduler-paddle": 344}}
	wave5000Paddle = clusterbench.Measurement{Config: "paddle", Size: clusterbench.Size{Nodes: 5000, Pods: 10000}, Jobs: 197,
		BoundPerSecond: 28, CreatedPerSecond: 48, LastGangBound: 374 * time.Second, MedianBindLag: 100 * time.Second,
		GangLag: 98270 * time.Millisecond, SchedulerSessions: 21, SessionMean: 15742 * time.Millisecond, Gang64: 4300 * time.Millisecond,
		CPU: map[string]float64{"etcd": 41, "kube-apiserver": 180, "kube-controller-manager": 14, "kwok": 48, "vc-controller-manager-paddle": 57, "vc-scheduler-paddle": 338, "vc-webhook-manager-paddle": 1}}
)

func TestLimiterNamesTheStageThatSetsThePace(t *testing.T) {
	small := limiter(wave250Stock)
	if !strings.Contains(small, "pod creation sets the pace") || strings.Contains(small, "scheduler sets the pace") {
		t.Errorf("250 nodes: bound 43/s of 48/s created, 1.6 s sessions: want pod creation named, got %q", small)
	}
	if !strings.Contains(small, "kube-apiserver the busiest process") {
		t.Errorf("250 nodes: want kube-apiserver as busiest, got %q", small)
	}
	large := limiter(wave5000Stock)
	if !strings.Contains(large, "the scheduler sets the pace") || strings.Contains(large, "pod creation sets the pace") {
		t.Errorf("5000 nodes: bound 27/s of 48/s created, 12 s sessions: want the scheduler named, got %q", large)
	}
	if !strings.Contains(large, "saturated") {
		t.Errorf("5000 nodes: 92%% CPU: want the saturation stated, got %q", large)
	}
}

func TestReportRendersAgainFromSavedFigures(t *testing.T) {
	dir := t.TempDir()
	r := &Report{Mode: "full", Volcano: "v1.15.1", Interrupted: "interrupted after 36m0s", Started: time.Date(2026, 11, 22, 7, 36, 0, 0, time.UTC), Took: 36 * time.Minute, Machine: "test machine, 2 cores",
		AllocCmd: "go test ./bench/allocate",
		Alloc: []AllocResult{
			{Nodes: 100, Pods: 400, Config: "stock-no-nodeorder", NsPerOp: 160e6, Placed: 276, Gpus: 800, N: 2},
			{Nodes: 100, Pods: 400, Config: "stock", NsPerOp: 599e6, Placed: 290, Gpus: 496, N: 2},
			{Nodes: 100, Pods: 400, Config: "paddle", NsPerOp: 364e6, Placed: 278, Gpus: 800, N: 2},
		},
		Quality: []QualityResult{{Preset: quality.T4PCIe, Reports: []*quality.Report{{
			Scenario: quality.Scenario{Preset: quality.T4PCIe, Racks: 8, NodesPerRack: 16, Seed: 1},
			Workload: "132 jobs",
			Metrics: []quality.Metrics{
				{Placer: "random", MeanSlowdown: 3.0, PSCrossNIC: 0.99, Racks: 3, Blocked: 1},
				{Placer: "stock", MeanSlowdown: 2.8, PSCrossNIC: 0.8, Racks: 3, Blocked: 8},
				{Placer: "paddle", MeanSlowdown: 1.4, PSCrossNIC: 0.4, Racks: 1, Blocked: 2},
			}}}}},
		Cluster: []clusterbench.Measurement{wave5000Stock, wave5000Paddle},
	}
	out := filepath.Join(dir, "full")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.save(resultsPath(out)); err != nil {
		t.Fatal(err)
	}
	first := renderTo(t, r, out)
	pageHas(t, "report", first,
		"| 100 | 400 | paddle | 364ms | 0.61x |",   // allocate ratio to stock
		"| 4xT4-PCIe | 0.50x |",                    // mean slowdown 1.4 / 2.8
		"| 5000 | 10000 | 1.04x | 0.99x | 1.61x |", // bound/s 28/27, last gang 374/377, bind lag 100/62
		"the scheduler sets the pace",
		"Last run: full mode, Volcano v1.15.1,",
		"**This run was interrupted after 36m0s: the figures below are the parts and windows it finished.**",
	)
	loaded, err := load(resultsPath(out))
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again")
	if err := os.MkdirAll(again, 0o755); err != nil {
		t.Fatal(err)
	}
	second := renderTo(t, loaded, again)
	// The pages differ only in the folder each names for -render.
	if first != strings.ReplaceAll(second, filepath.ToSlash(again), filepath.ToSlash(out)) {
		t.Errorf("report rendered from saved figures differs from the original")
	}
	// Each run folder's page names its own figures, and links its plots
	// beside it.
	if !strings.Contains(first, "The raw figures are in `results.json`; `go run ./bench/cmd/bench -render "+filepath.ToSlash(filepath.Join(out, "results.json"))+"`") {
		t.Errorf("%s/README.md does not name its results.json", out)
	}
	if !strings.Contains(second, "The raw figures are in `results.json`; `go run ./bench/cmd/bench -render "+filepath.ToSlash(filepath.Join(again, "results.json"))+"`") {
		t.Errorf("%s/README.md does not name its results.json", again)
	}
	for _, f := range []string{allocateSVG, qualitySVG, clusterSVG} {
		if !strings.Contains(first, "]("+f+")") {
			t.Errorf("page does not link %s beside it", f)
		}
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("plot not written beside the page: %v", err)
		}
	}
}

// A run folder inside the repository is named from its root, as a user
// types it.
func TestRenderArgFromRepoRoot(t *testing.T) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{Root: root}
	if got := r.renderArg(filepath.Join(root, "docs", "bench", "full")); got != "docs/bench/full/results.json" {
		t.Errorf("renderArg: %q, want docs/bench/full/results.json", got)
	}
}

// renderTo writes r's page into the run folder dir and returns its text.
func renderTo(t *testing.T, r *Report, dir string) string {
	t.Helper()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(PagePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// -render merges several runs' figures: every run's windows in order, the
// other parts from the first that has them; never runs of two releases.
func TestLoadReportsMerges(t *testing.T) {
	dir := t.TempDir()
	win := func(start int) *replay.Report {
		return &replay.Report{Options: replay.Options{Preset: quality.A100SXM, Start: start, Jobs: 300}}
	}
	save := func(name string, r *Report) string {
		path := filepath.Join(dir, name)
		if err := r.save(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := save("a.json", &Report{Mode: "quick", Volcano: "v1.15.1", Took: time.Minute, Replay: []*replay.Report{win(1), win(2)}})
	b := save("b.json", &Report{Mode: "quick", Volcano: "v1.15.1", Took: time.Minute, Replay: []*replay.Report{win(3)},
		AllocCmd: "go test ./bench/allocate", Alloc: []AllocResult{{Nodes: 100, Pods: 400, Config: "stock", N: 1}}})
	old := save("old.json", &Report{Mode: "quick", Replay: []*replay.Report{win(4)}})
	r, err := Load(a + "," + b)
	if err != nil {
		t.Fatal(err)
	}
	var starts []int
	for _, rep := range r.Replay {
		starts = append(starts, rep.Options.Start)
	}
	if !reflect.DeepEqual(starts, []int{1, 2, 3}) || len(r.Alloc) != 1 || r.Merged != 1 || r.Took != 2*time.Minute {
		t.Errorf("merged: windows %v, %d allocate results, merged %d, took %s; want windows 1 2 3, b's allocate result, 1 merged, 2m", starts, len(r.Alloc), r.Merged, r.Took)
	}
	if _, err := Load(a + "," + old); err == nil {
		t.Errorf("merged a v1.15.1 run with a v1.14.1 one")
	}
}

// A page's figures kept gzipped load under the name its render command
// gives (results.json, read from results.json.gz).
func TestLoadReportGzipped(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "results.json")
	want := &Report{Mode: "full", Volcano: "v1.15.1", Took: time.Hour}
	if err := want.save(plain); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain+".gz", z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(plain); err != nil {
		t.Fatal(err)
	}
	got, err := load(plain)
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode != want.Mode || got.Took != want.Took {
		t.Errorf("loaded %+v, want %+v", got, want)
	}
	if _, err := load(filepath.Join(dir, "none.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want not found", err)
	}
}

// The headroom sweep's rule: the best headroom share is adopted only when
// its mean ratio is at least the sweep's margin below paddle's.
func TestAdoptVerdict(t *testing.T) {
	cases := []struct {
		name       string
		ratios     map[string]float64
		candidates []string
		want       string
	}{
		{"clearly better: adopted", map[string]float64{"paddle": 1.05, "paddle-headroom0.1": 1.03, "paddle-headroom0.2": 1.02, "stock-sla": 1.0},
			[]string{"paddle-headroom0.1", "paddle-headroom0.2"},
			"`paddle-headroom0.2` has the lowest mean ratio, 1.020x against paddle's 1.050x without the headroom, at least 1% lower: it is adopted"},
		{"within the margin: kept out", map[string]float64{"paddle": 1.012, "paddle-headroom0.3": 1.005}, []string{"paddle-headroom0.3"},
			"the best headroom configuration, `paddle-headroom0.3`, has a mean ratio of 1.005x against paddle's 1.012x without the headroom, not 1% lower: it is not adopted"},
		{"worse: kept out", map[string]float64{"paddle": 1.0, "paddle-headroom0.1": 1.2}, []string{"paddle-headroom0.1"}, "not adopted"},
		{"paddle missing", map[string]float64{"paddle-headroom0.1": 1.0}, []string{"paddle-headroom0.1"}, "paddle did not finish every window"},
		{"no headroom config", map[string]float64{"paddle": 1.0}, nil, "no headroom configuration finished"},
		{"a candidate that did not finish", map[string]float64{"paddle": 1.0}, []string{"paddle-headroom0.1"}, "no headroom configuration finished"},
	}
	for _, tc := range cases {
		if got := adoptVerdict(tc.ratios, tc.candidates, 0.01); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q lacks %q", tc.name, got, tc.want)
		}
	}
}

// The replay section names the best stock configuration by mean JCT, states
// paddle's ratios to it and the guard's idle GPU-hours, the number of runs
// and their ranges, and writes its plots.
func TestReplaySectionRatiosAndPlots(t *testing.T) {
	cat := catalogtest.Load(t)
	m := func(name string, meanJCT, p95, idle, longest float64) replay.Metrics {
		return replay.Metrics{Config: name, Role: replay.Role(cat.RoleOf(name)), Jobs: 10, Started: 10, MeanJCT: meanJCT * 3600, P95JCT: p95 * 3600, IdleGPUHours: idle,
			LongestWait: longest * 3600, JCTQuantiles: []float64{3600, 7200}, UtilisationOverTime: []float64{0.5, 0.7}, UtilBin: 3600}
	}
	rep := &replay.Report{Workload: "w", Options: replay.Options{Preset: quality.A100SXM, Start: 5, Jobs: 10},
		Metrics: []replay.Metrics{m(replay.Stock, 5, 20, 600, 15), m("stock-binpack", 4, 16, 0, 3),
			m(replay.Paddle, 3, 12, 4, 2), m(paddleHoldBack, 3.2, 12, 30, 4), m(paddleAfter30m, 3.5, 13, 9, 1.5),
			m(paddleNoGuard, 2.9, 12, 0, 9), replay.LowerBoundMetrics(&replay.Workload{}, nil, nil)},
		Notes: map[string]string{}, Runs: 3,
		Spread: map[string]replay.Spread{replay.Paddle: {MeanJCT: replay.Range{Min: 2.5 * 3600, Max: 3.5 * 3600},
			P95JCT: replay.Range{Min: 11 * 3600, Max: 13 * 3600}, LongestWait: replay.Range{Min: 1 * 3600, Max: 3 * 3600},
			IdleGPUHours: replay.Range{Min: 0.5, Max: 8}}}}
	dir := t.TempDir()
	r := &Report{Mode: "quick", Replay: []*replay.Report{rep}, cat: cat}
	var b strings.Builder
	r.writeReplay(&b, dir)
	page := b.String()
	pageHas(t, "section", page,
		"paddle / best stock (stock-binpack)",
		"| 0.75x | - | 0.75x |", // mean and p95 JCT 3/4 and 12/16; median 0/0
		"the reservation left 4.0 GPU-hours idle",
		"the old hold-back 30.0",
		"Longest wait 2.00 h with the reservation, 4.00 h with the hold-back, 9.00 h with\nno guard",
		"former 30m threshold: mean JCT 3.50 h, idle 9.0 GPU-h, longest wait 1.50 h",
		"Every figure is the mean of 3 replays",
		"| paddle | 2.50 to 3.50 | 11.00 to 13.00 | 1.00 to 3.00 | 0.5 to 8.0 |",
	)
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

// The pages say which set each window's figures come from, name the rule
// and its windows, and call the earlier rules' windows seen, a report saved
// before the rule (with the old kinds) included.
func TestPagesSayWhichSet(t *testing.T) {
	cat := catalogtest.Load(t)
	rep := func(kind string, p quality.Preset, start int) *replay.Report {
		return &replay.Report{Kind: kind, Options: runner.Options(cat.Windows, catalogue.Window{Preset: p, Start: start, Jobs: cat.Windows.Jobs})}
	}
	r := &Report{Replay: []*replay.Report{rep(catalogue.KindHeldOut, quality.A100SXM, 13200), rep(catalogue.KindTuning, quality.A100SXM, 12500),
		rep(savedKindRule2, quality.PCIeNVLinkPairs, 68100), rep("", quality.PCIeNVLinkPairs, 45000), rep("", quality.A100SXM, 30100)}, cat: cat}
	for k, want := range []string{catalogue.KindHeldOut, catalogue.KindTuning, catalogue.KindRule2, catalogue.KindTuning, catalogue.KindSeen} {
		if got := r.kindOf(r.Replay[k]); got != want {
			t.Errorf("window %d of kind %q reads as %q, want %q", k, r.Replay[k].Kind, got, want)
		}
	}
	var b strings.Builder
	r.writeWindows(&b)
	page := b.String()
	pageHas(t, "windows paragraph", page,
		"committed before any window it\npicks was replayed",
		"seed 35",
		"**held-out**, 12 windows, 24 window-preset pairs:\nno large-gang load 13200 (0%), 24000 (0%), 37000 (0%); low 20000 (5%), 21300 (2%), 13900 (3%); middle 23000 (15%), 76100 (36%), 67500 (22%); high 74000 (77%), 47200 (53%), 35600 (58%).\n",
		"**Tuning**: 8xA100-NVSwitch 12500, 8xPCIe-NVLink-pairs 12500 and 45000",
		"on both presets no large-gang load 24900 (0%); low 9200 (1%); middle 72300 (17%); high 58800 (67%).\n",
		"the patience default was reverted after the rule-2\nfigures",
		"the elastic churn fix was found on\nPCIe 68100",
	)
}

// pageHas fails t for each of wants that page (what it is: a report, a
// section) lacks.
func pageHas(t *testing.T, what, page string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(page, want) {
			t.Errorf("%s lacks %q:\n%s", what, want, page)
		}
	}
}
