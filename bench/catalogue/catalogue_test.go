package catalogue

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
	"github.com/volcano-paddle/volcano-paddle/deploy"
)

func testCatalogue(t *testing.T) (*Catalogue, Files) {
	t.Helper()
	c, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	f, err := RepoFiles()
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

// Every entry, configuration, variant or sweep step, builds on the files
// the bench reads and on those paddle-replay compiles in, for each
// workload it is replayed with, into text Volcano's own loader parses
// (simsched.ParseConfig: volcano's UnmarshalSchedulerConf); what Print
// shows is that text.
func TestEveryEntryBuildsAndParses(t *testing.T) {
	c, repo := testCatalogue(t)
	compiled := Files{Stock: deploy.StockSchedulerConf(), Paddle: deploy.PaddleSchedulerConf(), StockFrom: "deploy/stock", PaddleFrom: "deploy/paddle"}
	names := c.Names()
	if len(names) < 20 {
		t.Fatalf("%d entries: the catalogue did not load its configurations", len(names))
	}
	for _, name := range names {
		e, _ := c.Lookup(name)
		if !inBuild(e) {
			if _, err := c.Build(e, repo, false); err == nil {
				t.Errorf("%s built on a Volcano without %s", name, e.RequiresAction)
			}
			continue
		}
		for _, flex := range []bool{false, true} {
			if (flex && e.Workload == WorkloadTrace) || (!flex && e.Workload == WorkloadFlex) {
				continue
			}
			var texts []string
			for _, files := range []Files{repo, compiled} {
				b, err := c.Build(e, files, flex)
				if err != nil {
					t.Errorf("%s (flex %t): %v", name, flex, err)
					continue
				}
				again, err := simsched.ParseConfig(name, b.Text)
				if err != nil || !reflect.DeepEqual(again, b.Sched) {
					t.Errorf("%s: its text does not parse to what it runs: %v", name, err)
				}
				if !strings.HasSuffix(b.Print(), b.Text) || strings.Contains(b.Note, "{") {
					t.Errorf("%s: Print does not end with its text, or its note %q keeps a placeholder", name, b.Note)
				}
				if b.Sched.Name != name || b.Role != e.Role {
					t.Errorf("%s: built as %s, role %s", name, b.Sched.Name, b.Role)
				}
				texts = append(texts, b.Text)
			}
			// deploy/stock is the Helm chart's default (harness/localcluster
			// keeps it so): both builds run the same.
			if len(texts) == 2 && texts[0] != texts[1] {
				t.Errorf("%s (flex %t): differs on the compiled-in files:\n%s\n%s", name, flex, texts[0], texts[1])
			}
		}
	}
}

// The shape of some configurations: their actions and each tier's plugins,
// with the settings the levers change.
func TestConfigurationShapes(t *testing.T) {
	c, files := testCatalogue(t)
	order := []string{"priority", "gang", "conformance"}
	helmPlace := []string{"overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"}
	paddlePlace := append([]string{"paddle"}, helmPlace...)
	for _, tc := range []struct {
		name    string
		flex    bool
		actions string
		tiers   [][]string
		// args: plugin/argument: value the configuration must run with.
		args map[string]interface{}
		// preemptable: gang's enablePreemptable.
		preemptable bool
	}{
		{name: "stock", actions: "enqueue,allocate,backfill", tiers: [][]string{order, helmPlace}},
		{name: "stock-binpack", actions: "enqueue,allocate,backfill", tiers: [][]string{order, helmPlace},
			args: map[string]interface{}{"binpack/binpack.resources.nvidia.com/gpu": 10, "nodeorder/leastrequested.weight": 0}},
		{name: "stock-binpack-tasktopology-sla-priority", actions: "enqueue,allocate,backfill",
			tiers: [][]string{{"priority", "gang", "sla", "conformance"}, append(slices.Clone(helmPlace), "task-topology")},
			args:  map[string]interface{}{"sla/sla-waiting-time": "1h", "task-topology/task-topology.weight": 10}},
		{name: "stock-binpack-hypernode", actions: "enqueue,allocate,backfill", tiers: [][]string{order, append(slices.Clone(helmPlace), "network-topology-aware")}},
		{name: "stock-queues", actions: "enqueue,allocate,reclaim,backfill", tiers: [][]string{order, helmPlace}},
		{name: "stock-sla-30m", tiers: [][]string{{"priority", "gang", "sla", "conformance"}, helmPlace}, actions: "enqueue,allocate,backfill",
			args: map[string]interface{}{"sla/sla-waiting-time": "30m"}},
		{name: "reference-shortest-remaining", actions: "enqueue,allocate,backfill", tiers: [][]string{{"clairvoyant", "priority", "gang", "conformance"}, helmPlace}},
		{name: "paddle", actions: "enqueue,allocate,preempt,reclaim,backfill", tiers: [][]string{order, paddlePlace}},
		{name: "paddle-noheadroom", actions: "enqueue,allocate,preempt,reclaim,backfill", tiers: [][]string{order, paddlePlace},
			args: map[string]interface{}{"paddle/paddle.smallJobHeadroom": 0, "paddle/paddle.starvationAfter": "4h"}},
		{name: "paddle-headroom0.2-after16h", actions: "enqueue,allocate,preempt,reclaim,backfill", tiers: [][]string{order, paddlePlace},
			args: map[string]interface{}{"paddle/paddle.smallJobHeadroom": "0.2", "paddle/paddle.starvationAfter": "16h"}},
		// The elastic workload: stock gets preempt and reclaim and gang's
		// enablePreemptable; a file that evicted already keeps its tiers.
		{name: "stock", flex: true, actions: "enqueue,allocate,preempt,reclaim,backfill", tiers: [][]string{order, helmPlace}, preemptable: true},
		{name: "stock-queues", flex: true, actions: "enqueue,allocate,preempt,reclaim,backfill", tiers: [][]string{order, helmPlace}},
		{name: "paddle-nolevers", flex: true, actions: "enqueue,allocate,preempt,reclaim,backfill", tiers: [][]string{order, paddlePlace},
			args: map[string]interface{}{"paddle/paddle.elastic.shrink": false}},
	} {
		e, ok := c.Lookup(tc.name)
		if !ok {
			t.Fatalf("no entry %s", tc.name)
		}
		b, err := c.Build(e, files, tc.flex)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(b.Sched.Actions, ","); got != tc.actions {
			t.Errorf("%s (flex %t): actions %s, want %s", tc.name, tc.flex, got, tc.actions)
		}
		var tiers [][]string
		for _, tier := range b.Sched.Tiers {
			var names []string
			for _, p := range tier.Plugins {
				names = append(names, p.Name)
				for k, v := range p.Arguments {
					if want, ok := tc.args[p.Name+"/"+k]; ok && !reflect.DeepEqual(v, want) {
						t.Errorf("%s: %s %s = %#v, want %#v", tc.name, p.Name, k, v, want)
					}
				}
				if p.Name == "gang" && *p.EnabledPreemptable != tc.preemptable {
					t.Errorf("%s (flex %t): gang enablePreemptable %t", tc.name, tc.flex, *p.EnabledPreemptable)
				}
			}
			tiers = append(tiers, names)
		}
		if !reflect.DeepEqual(tiers, tc.tiers) {
			t.Errorf("%s (flex %t): tiers %v, want %v", tc.name, tc.flex, tiers, tc.tiers)
		}
	}
}

// Shared tiers are written once: every fragment is one tier used by a
// file, and no plugin is written in two fragments.
func TestFragmentsWrittenOnce(t *testing.T) {
	c, _ := testCatalogue(t)
	used := map[string]bool{}
	for _, f := range c.composed {
		for _, tier := range f.Tiers {
			for _, frag := range tier {
				used[frag] = true
			}
		}
	}
	in := map[string]string{}
	for name, f := range c.fragments {
		if !used[name] {
			t.Errorf("conf/%s.conf is used by no file", name)
		}
		for _, p := range f.tiers[0] {
			if other, ok := in[p.name]; ok {
				t.Errorf("plugin %s is written in conf/%s.conf and conf/%s.conf", p.name, other, name)
			}
			in[p.name] = name
		}
	}
	if len(c.fragments) < 4 {
		t.Errorf("%d fragments: conf/ was not read", len(c.fragments))
	}
}

// What a comparison replays depends on the workload and on the build:
// task-topology only with the trace as it is, the ordering levers on
// binpack only with the elastic workload, the gang-aware configurations
// only where Volcano has the gangpreempt action; roles come from the
// entries.
func TestComparison(t *testing.T) {
	c, _ := testCatalogue(t)
	_, v115 := framework.GetAction("gangpreempt")
	names := func(flex bool, variants []string) []string {
		es, err := c.Comparison(flex, variants)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name)
		}
		return out
	}
	gang := func(stock bool) []string {
		if !v115 {
			return nil
		}
		if stock {
			return []string{"stock-priority-gangpreempt", "stock-queues-gangreclaim"}
		}
		return []string{"paddle-gang"}
	}
	trace := slices.Concat([]string{"stock", "stock-binpack", "stock-binpack-tasktopology", "stock-binpack-hypernode", "stock-sla", "stock-priority",
		"stock-binpack-tasktopology-sla", "stock-binpack-tasktopology-priority", "stock-binpack-tasktopology-sla-priority", "stock-queues", "stock-binpack-queues"},
		gang(true), []string{"paddle", "paddle-queues", "paddle-priority", "reference-shortest-remaining"}, gang(false), []string{"paddle-noguard"})
	if got := names(false, []string{"paddle-noguard"}); !reflect.DeepEqual(got, trace) {
		t.Errorf("trace: %v\nwant %v", got, trace)
	}
	flex := slices.Concat([]string{"stock", "stock-binpack", "stock-binpack-hypernode", "stock-sla", "stock-priority", "stock-queues", "stock-binpack-queues"},
		gang(true), []string{"stock-binpack-sla", "stock-binpack-priority", "stock-binpack-sla-priority"},
		[]string{"paddle", "paddle-queues", "paddle-priority", "reference-shortest-remaining"}, gang(false), []string{"paddle-nolevers"})
	if got := names(true, nil); !reflect.DeepEqual(got, flex) {
		t.Errorf("flex: %v\nwant %v", got, flex)
	}
	if _, err := c.Comparison(false, []string{"paddle-none"}); err == nil {
		t.Error("an unknown variant accepted")
	}
	for _, name := range []string{"stock-binpack-hypernode", "paddle-by-gpus", "stock-sla-8h"} {
		if e, _ := c.Lookup(name); c.RoleOf(name) != e.Role || e.Role == "" {
			t.Errorf("%s: role %q", name, c.RoleOf(name))
		}
	}
	for name, want := range map[string]string{"lower-bound": RoleBound, "paddle-holdback": RolePaddle, "stock-binpack-tasktopology": RoleStock, "no-such": ""} {
		if got := c.RoleOf(name); got != want {
			t.Errorf("role of %s: %q, want %q", name, got, want)
		}
	}
}

// The sweeps replay what their rules were written for, in order.
func TestSweeps(t *testing.T) {
	c, _ := testCatalogue(t)
	if got := c.SweepNames(); !reflect.DeepEqual(got, []string{"sla", "paddle", "headroom", "predicted", "predicted-above", "predicted-above-longer"}) {
		t.Errorf("sweeps %v", got)
	}
	_, v115 := framework.GetAction("gangpreempt")
	ordering := []string{"stock-sla", "stock-priority", "stock-binpack-tasktopology-sla", "stock-binpack-tasktopology-priority", "stock-binpack-tasktopology-sla-priority"}
	if v115 {
		ordering = append(ordering, "stock-priority-gangpreempt")
	}
	for name, want := range map[string][]string{
		"sla": {"stock-sla-30m", "stock-binpack-tasktopology-sla-30m", "stock-sla-1h", "stock-binpack-tasktopology-sla-1h", "stock-sla-2h",
			"stock-binpack-tasktopology-sla-2h", "stock-sla-4h", "stock-binpack-tasktopology-sla-4h", "stock-sla-8h", "stock-binpack-tasktopology-sla-8h"},
		"paddle":                 slices.Concat(ordering, []string{"paddle", "paddle-after2h", "paddle-after8h", "paddle-after16h", "paddle-after48h", "paddle-fifo"}),
		"headroom":               slices.Concat(ordering, []string{"paddle", "paddle-headroom0.1", "paddle-headroom0.2", "paddle-headroom0.3", "paddle-headroom0.2-after16h"}),
		"predicted":              {"paddle", "paddle-by-gpus"},
		"predicted-above":        {"paddle", "paddle-above1h", "paddle-above4h"},
		"predicted-above-longer": {"paddle", "paddle-above8h", "paddle-above16h", "paddle-headroom0"},
	} {
		es, err := c.SweepEntries(name)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.Name)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("sweep %s: %v\nwant %v", name, got, want)
		}
	}
	s, _ := c.SweepNamed("headroom")
	if s.AdoptMargin != 0.01 || s.Out != "headroom-sweep" {
		t.Errorf("headroom sweep %+v", s)
	}
	if _, err := c.SweepEntries("none"); err == nil {
		t.Error("an unknown sweep accepted")
	}
}

// A value is written so that YAML reads it back as the same type.
func TestScalar(t *testing.T) {
	for v, want := range map[interface{}]string{"16h": "16h", "0": `"0"`, "0.1": `"0.1"`, "true": `"true"`, "nvidia.com/gpu": "nvidia.com/gpu",
		"a: b": `"a: b"`, "": `""`, 0.0: "0", 10.0: "10", 0.2: "0.2", false: "false", 3: "3"} {
		if got, err := scalar(v); err != nil || got != want {
			t.Errorf("scalar(%#v) = %s, %v; want %s", v, got, err, want)
		}
	}
	for d, want := range map[time.Duration]string{30 * time.Minute: "30m", 2 * time.Hour: "2h", 90 * time.Minute: "1h30m", 8 * time.Hour: "8h"} {
		if got := DurationArg(d); got != want {
			t.Errorf("DurationArg(%s) = %s, want %s", d, got, want)
		}
	}
}

func TestParseWindows(t *testing.T) {
	cases := []struct {
		in      string
		want    []Window
		wantErr string
	}{
		{in: "8xA100-NVSwitch:40000+300", want: []Window{{quality.A100SXM, 40000, 300}}},
		{in: "8xA100-NVSwitch:1+2, 8xPCIe-NVLink-pairs:70000+500",
			want: []Window{{quality.A100SXM, 1, 2}, {quality.PCIeNVLinkPairs, 70000, 500}}},
		{in: "8xA100-NVSwitch:40000", wantErr: "want PRESET:START+JOBS"},
		{in: "A100:1+300", wantErr: `no preset "A100"`},
		{in: "8xA100-NVSwitch:-1+300", wantErr: "START must be"},
		{in: "8xA100-NVSwitch:1+1", wantErr: "JOBS at least 2"},
		{in: "8xA100-NVSwitch:x+300", wantErr: "START must be"},
	}
	for _, c := range cases {
		got, err := ParseWindows(c.in)
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

// The windows' parameters as the pages and rules read them.
func TestWindows(t *testing.T) {
	c, _ := testCatalogue(t)
	w := c.Windows
	if w.Jobs != 300 || len(w.Presets) != 2 || len(w.Tuning) != 3 || w.Tuning[2] != (Window{quality.PCIeNVLinkPairs, 45000, 300}) ||
		len(w.PhillyHeldOut) != 12 || len(w.PhillyTuning) != 4 || w.HeldOutRule.Seed != 35 || len(w.HeldOutRule.Strata) != 4 {
		t.Errorf("windows %+v", w)
	}
	if !w.OverlapsSeen(Span{Start: 12600, Jobs: 10}) || w.OverlapsSeen(Span{Start: 13200, Jobs: 300}) || !w.OverlapsAvoided(Span{Start: 30400, Jobs: 300}) {
		t.Error("seen or avoided windows misread")
	}
}
