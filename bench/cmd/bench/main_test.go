package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/catalogue/catalogtest"
	"github.com/volcano-paddle/volcano-paddle/bench/runner"
	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
)

const testData = "../../quality/testdata/pollux"

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
	p, err := planOf(catalogtest.Load(t), flags{mode: "full", skip: "allocate,cluster,quality,jobsize"})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.describe(); d != "the replay (its estimate follows once its windows are known)" {
		t.Errorf("replay only: %q", d)
	}
	p, err = planOf(catalogtest.Load(t), flags{mode: "full", skip: "replay,cluster"})
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
		if got := filepath.ToSlash(defaultOut(catalogtest.Load(t), "/r", tc.f)); got != tc.want {
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

// The modes replay the sets: the full mode the tuning and held-out
// windows, the quick mode the second rule's (seen) windows, -window-set
// one set, a sweep the tuning windows; -windows keeps each window's kind.
func TestWindowsOfPlans(t *testing.T) {
	kinds := func(ws []runner.Window) map[string]int {
		m := map[string]int{}
		for _, w := range ws {
			m[w.Kind]++
		}
		return m
	}
	cat := catalogtest.Load(t)
	for _, c := range []struct {
		name string
		f    flags
		want map[string]int
	}{
		{"full", flags{mode: "full"}, map[string]int{catalogue.KindTuning: 11, catalogue.KindHeldOut: 24}},
		{"quick", flags{mode: "quick"}, map[string]int{catalogue.KindRule2: 6}},
		{"held-out", flags{mode: "quick", windowSet: "held-out"}, map[string]int{catalogue.KindHeldOut: 24}},
		{"tuning", flags{mode: "full", windowSet: "tuning"}, map[string]int{catalogue.KindTuning: 11}},
		{"rule1", flags{mode: "quick", windowSet: "rule1"}, map[string]int{catalogue.KindRule1: 6}},
		{"sensitivity", flags{mode: "quick", windowSet: "sensitivity"}, map[string]int{catalogue.KindHeldOut: 8}},
		{"sweep", flags{mode: "quick", sweep: "headroom"}, map[string]int{catalogue.KindTuning: 11}},
		{"windows", flags{mode: "quick", windows: "8xA100-NVSwitch:13200+300,8xPCIe-NVLink-pairs:24900+300,8xPCIe-NVLink-pairs:68100+300,8xA100-NVSwitch:30100+300,8xA100-NVSwitch:100+300"},
			map[string]int{catalogue.KindHeldOut: 1, catalogue.KindTuning: 1, catalogue.KindRule2: 1, catalogue.KindSeen: 1, catalogue.KindOther: 1}},
	} {
		p, err := planOf(cat, c.f)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ws, err := runner.Windows(cat.Windows, p.sets, testData)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := kinds(ws); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: windows of kinds %v, want %v", c.name, got, c.want)
		}
	}
}

func TestParseShard(t *testing.T) {
	for _, c := range []struct {
		in   string
		k, n int
		ok   bool
	}{{"1/2", 1, 2, true}, {"2/2", 2, 2, true}, {"3/2", 0, 0, false}, {"0/2", 0, 0, false}, {"1/0", 0, 0, false}, {"1/2x", 0, 0, false}, {"a", 0, 0, false}} {
		k, n, err := parseShard(c.in)
		if (err == nil) != c.ok || k != c.k || n != c.n {
			t.Errorf("%q: %d/%d %v", c.in, k, n, err)
		}
	}
}
