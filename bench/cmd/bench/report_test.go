package main

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

	"github.com/volcano-paddle/volcano-paddle/bench/clusterbench"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
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
	r := &report{Mode: "full", Volcano: "v1.15.1", Interrupted: "interrupted after 36m0s", Started: time.Date(2026, 11, 22, 7, 36, 0, 0, time.UTC), Took: 36 * time.Minute, Machine: "test machine, 2 cores",
		AllocCmd: "go test ./bench/allocate",
		Alloc: []allocResult{
			{Nodes: 100, Pods: 400, Config: "stock-no-nodeorder", NsPerOp: 160e6, Placed: 276, Gpus: 800, N: 2},
			{Nodes: 100, Pods: 400, Config: "stock", NsPerOp: 599e6, Placed: 290, Gpus: 496, N: 2},
			{Nodes: 100, Pods: 400, Config: "paddle", NsPerOp: 364e6, Placed: 278, Gpus: 800, N: 2},
		},
		Quality: []qualityResult{{Preset: quality.T4PCIe, Reports: []*quality.Report{{
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
	for _, want := range []string{
		"| 100 | 400 | paddle | 364ms | 0.61x |",   // allocate ratio to stock
		"| 4xT4-PCIe | 0.50x |",                    // mean slowdown 1.4 / 2.8
		"| 5000 | 10000 | 1.04x | 0.99x | 1.61x |", // bound/s 28/27, last gang 374/377, bind lag 100/62
		"the scheduler sets the pace",
		"Last run: full mode, Volcano v1.15.1,",
		"**This run was interrupted after 36m0s: the figures below are the parts and windows it finished.**",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("report lacks %q:\n%s", want, first)
		}
	}
	loaded, err := loadReport(resultsPath(out))
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
	r := &report{root: root}
	if got := r.renderArg(filepath.Join(root, "docs", "bench", "full")); got != "docs/bench/full/results.json" {
		t.Errorf("renderArg: %q, want docs/bench/full/results.json", got)
	}
}

// The default run folders, one per mode, lever swept and the flex
// workload, all under docs/bench; -out names a folder, never a page.
func TestDefaultOut(t *testing.T) {
	for _, tc := range []struct {
		f    flags
		want string
	}{
		{flags{mode: "quick"}, "/r/docs/bench/quick"},
		{flags{mode: "full"}, "/r/docs/bench/full"},
		{flags{mode: "scale"}, "/r/docs/bench/scale"},
		{flags{mode: "quick", sweep: "sla"}, "/r/docs/bench/sla-sweep"},
		{flags{mode: "quick", elastic: 0.5}, "/r/docs/bench/flex"},
		{flags{mode: "quick", checkpoint: 0.3}, "/r/docs/bench/flex"},
	} {
		if got := filepath.ToSlash(defaultOut("/r", tc.f)); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.f, got, tc.want)
		}
	}
	if err := checkOut("docs/benchmarks.md"); err == nil {
		t.Error("-out docs/benchmarks.md accepted: a run writes a folder, and docs/benchmarks.md is the hand-written guide")
	}
	if err := checkOut("docs/bench/x"); err != nil {
		t.Errorf("-out docs/bench/x: %v", err)
	}
}

// renderTo writes r's page into the run folder dir and returns its text.
func renderTo(t *testing.T, r *report, dir string) string {
	t.Helper()
	if err := r.write(dir); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(pagePath(dir))
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
	save := func(name string, r *report) string {
		path := filepath.Join(dir, name)
		if err := r.save(path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	a := save("a.json", &report{Mode: "quick", Volcano: "v1.15.1", Took: time.Minute, Replay: []*replay.Report{win(1), win(2)}})
	b := save("b.json", &report{Mode: "quick", Volcano: "v1.15.1", Took: time.Minute, Replay: []*replay.Report{win(3)},
		AllocCmd: "go test ./bench/allocate", Alloc: []allocResult{{Nodes: 100, Pods: 400, Config: "stock", N: 1}}})
	old := save("old.json", &report{Mode: "quick", Replay: []*replay.Report{win(4)}})
	r, err := loadReports(a + "," + b)
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
	if _, err := loadReports(a + "," + old); err == nil {
		t.Errorf("merged a v1.15.1 run with a v1.14.1 one")
	}
}

// A page's figures kept gzipped load under the name its render command
// gives (results.json, read from results.json.gz).
func TestLoadReportGzipped(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "results.json")
	want := &report{Mode: "full", Volcano: "v1.15.1", Took: time.Hour}
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
	got, err := loadReport(plain)
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode != want.Mode || got.Took != want.Took {
		t.Errorf("loaded %+v, want %+v", got, want)
	}
	if _, err := loadReport(filepath.Join(dir, "none.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want not found", err)
	}
}

// The headroom sweep's rule: the best headroom share is adopted only when
// its mean ratio is at least headroomAdoptMargin below paddle's.
func TestHeadroomVerdict(t *testing.T) {
	cases := []struct {
		name   string
		ratios map[string]float64
		want   string
	}{
		{"clearly better: adopted", map[string]float64{"paddle": 1.05, "paddle-headroom0.1": 1.03, "paddle-headroom0.2": 1.02, "stock-sla": 1.0},
			"`paddle-headroom0.2` has the lowest mean ratio, 1.020x against paddle's 1.050x without the headroom, at least 1% lower: it is adopted"},
		{"within the margin: kept out", map[string]float64{"paddle": 1.012, "paddle-headroom0.3": 1.005},
			"the best headroom configuration, `paddle-headroom0.3`, has a mean ratio of 1.005x against paddle's 1.012x without the headroom, not 1% lower: it is not adopted"},
		{"worse: kept out", map[string]float64{"paddle": 1.0, "paddle-headroom0.1": 1.2}, "not adopted"},
		{"paddle missing", map[string]float64{"paddle-headroom0.1": 1.0}, "paddle did not finish every window"},
		{"no headroom config", map[string]float64{"paddle": 1.0}, "no headroom configuration finished"},
	}
	for _, tc := range cases {
		if got := headroomVerdict(tc.ratios); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q lacks %q", tc.name, got, tc.want)
		}
	}
}

// The KWOK cluster part runs deploy/paddle's configuration with the
// headroom off, and nothing else changed.
func TestWithoutHeadroom(t *testing.T) {
	oursPath, err := localcluster.DeploySchedulerConf()
	if err != nil {
		t.Fatal(err)
	}
	after, err := withoutHeadroom(oursPath)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(oursPath)
	if !strings.Contains(string(before), "paddle.smallJobHeadroom: 0.2\n") || !strings.Contains(string(after), "paddle.smallJobHeadroom: 0\n") {
		t.Fatalf("headroom line not turned off:\n%s", after)
	}
	if strings.Replace(string(before), "paddle.smallJobHeadroom: 0.2\n", "paddle.smallJobHeadroom: 0\n", 1) != string(after) {
		t.Errorf("more than the headroom changed:\n%s", after)
	}
	if _, err := withoutHeadroom(oursPath + ".missing"); err == nil {
		t.Error("a missing file gave no error")
	}
}
