package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
)

// t0 is when the synthetic histories begin.
var t0 = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

// job is one row of a synthetic history: submitted at the offset, running
// for the duration, pods of gpus GPUs each.
type job struct {
	at, run    time.Duration
	pods, gpus int
}

// writeHistory writes jobs as a history file (pkg/jobhistory's Writer, as
// paddle-replay export writes it) and returns its path.
func writeHistory(t *testing.T, jobs []job) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.csv")
	var b bytes.Buffer
	w := jobhistory.NewWriter(&b)
	for i, j := range jobs {
		r := jobhistory.Record{SubmitTime: t0.Add(j.at), Duration: j.run, Pods: j.pods, GPUsPerPod: j.gpus,
			MinPods: j.pods, MaxPods: j.pods, Queue: "default", Namespace: "ml", Mode: jobhistory.ModeCollective,
			Phase: "Completed", TimesFrom: jobhistory.TimesFromPods, Name: fmt.Sprintf("job-%d", i)}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// every is n jobs of one shape, one every gap.
func every(n int, gap, run time.Duration, pods, gpus int) []job {
	out := make([]job, n)
	for i := range out {
		out[i] = job{at: time.Duration(i) * gap, run: run, pods: pods, gpus: gpus}
	}
	return out
}

func TestRunCommandLine(t *testing.T) {
	short := writeHistory(t, every(30, 10*time.Minute, 30*time.Minute, 1, 1))
	badRow := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(badRow, []byte("submit_time,duration_s,pods,gpus_per_pod,queue\n2024-05-01T00:00:00Z,60,1,0,default\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-history.csv")
	nodes := "8xA100-NVSwitch:2"
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr []string
	}{
		{"help run", []string{"help", "run"}, 0, nil},
		{"no trace", []string{"run", "--nodes", nodes}, 2, []string{"--trace FILE is required"}},
		{"no nodes", []string{"run", "--trace", short}, 2, []string{"--nodes PRESET:COUNT is required", "8xA100-NVSwitch"}},
		{"nodes without a count", []string{"run", "--trace", short, "--nodes", "8xA100-NVSwitch"}, 2, []string{"want PRESET:COUNT"}},
		{"bad preset", []string{"run", "--trace", short, "--nodes", "8xV100:4"}, 2, []string{`no node type "8xV100"`, "presets: 8xH100-NVSwitch"}},
		{"count 0", []string{"run", "--trace", short, "--nodes", "8xA100-NVSwitch:0"}, 2, []string{`COUNT "0"`, "at least 1"}},
		{"count not a number", []string{"run", "--trace", short, "--nodes", "8xA100-NVSwitch:many"}, 2, []string{`COUNT "many"`}},
		{"partial rack", []string{"run", "--trace", short, "--nodes", "8xA100-NVSwitch:6"}, 2, []string{"not whole racks of --nodes-per-rack 4", "a divisor of 6"}},
		{"seeds 0", []string{"run", "--trace", short, "--nodes", nodes, "--seeds", "0"}, 2, []string{"--seeds 0", "1 to 20"}},
		{"one window", []string{"run", "--trace", short, "--nodes", nodes, "--max-windows", "1"}, 2, []string{"--max-windows 1", "at least 2"}},
		{"window of one job", []string{"run", "--trace", short, "--nodes", nodes, "--window-jobs", "1"}, 2, []string{"--window-jobs 1"}},
		{"unknown setting", []string{"run", "--trace", short, "--nodes", nodes, "--settings", "paddle,paddle-turbo"}, 2, []string{`no setting "paddle-turbo"`, "paddle-noheadroom"}},
		{"stray argument", []string{"run", "--trace", short, "--nodes", nodes, "extra"}, 2, []string{`unexpected argument "extra"`}},
		{"missing file", []string{"run", "--trace", missing, "--nodes", nodes}, 1, []string{"--trace", "no-such-history.csv", "no such file", "paddle-replay export"}},
		{"bad row", []string{"run", "--trace", badRow, "--nodes", nodes}, 1, []string{"line 2", "gpus_per_pod"}},
		{"too few jobs", []string{"run", "--trace", short, "--nodes", nodes, "--window-jobs", "20"}, 1, []string{"has 30 jobs", "at least 40", "lower --window-jobs"}},
		{"bad data folder", []string{"run", "--trace", short, "--nodes", nodes, "--window-jobs", "10", "--data", missing}, 1, []string{"--data", "placements.csv"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// A cluster smaller than a rack is one rack of its nodes: the replay must
// not add nodes to fill the default rack of 4.
func TestParseRunRacks(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		nodes     int
		perRack   int
		presetGPU int
	}{
		{[]string{"--nodes", "8xA100-NVSwitch:2"}, 2, 2, 8},
		{[]string{"--nodes", "4xt4-pcie:8"}, 8, 4, 4}, // preset names ignore case
		{[]string{"--nodes", "8xH100-NVSwitch:6", "--nodes-per-rack", "3"}, 6, 3, 8},
	} {
		p, err := parseRun(append([]string{"--trace", "h.csv"}, tc.args...), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if p.nodes != tc.nodes || p.nodesPerRack != tc.perRack || p.preset.GPUsPerNode != tc.presetGPU {
			t.Errorf("%v: %d nodes, racks of %d, %d GPUs a node; want %d, %d, %d", tc.args, p.nodes, p.nodesPerRack, p.preset.GPUsPerNode,
				tc.nodes, tc.perRack, tc.presetGPU)
		}
		if len(p.candidates) != len(candidates) {
			t.Errorf("%v: %d settings tried by default, want all %d", tc.args, len(p.candidates), len(candidates))
		}
	}
}

func TestDecide(t *testing.T) {
	iv := func(point, lo, hi float64) replay.Interval { return replay.Interval{Point: point, Lo: lo, Hi: hi} }
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name      string
		mean, p95 replay.Interval
		want      verdict
	}{
		{"shorter mean, same tail", iv(0.9, 0.85, 0.95), iv(1, 0.97, 1.03), turnOn},
		{"shorter mean, tail at most 5% longer", iv(0.9, 0.85, 0.95), iv(1, 0.97, 1.05), turnOn},
		{"shorter mean, tail maybe 6% longer", iv(0.9, 0.85, 0.95), iv(1, 0.97, 1.06), mixed},
		{"mean interval reaches 1", iv(0.97, 0.94, 1), iv(1, 1, 1), noDifference},
		{"mean interval spans 1", iv(1, 0.95, 1.05), iv(0.9, 0.8, 0.95), noDifference},
		{"exactly equal", iv(1, 1, 1), iv(1, 1, 1), noDifference},
		{"longer mean", iv(1.1, 1.02, 1.2), iv(0.9, 0.85, 0.95), keepStock},
		{"a job never started", iv(inf, 1.1, inf), iv(inf, 1, inf), keepStock},
		{"no baseline", iv(nan, nan, nan), iv(nan, nan, nan), noVerdict},
	} {
		if got := decide(tc.mean, tc.p95); got != tc.want {
			t.Errorf("%s: verdict %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The replay's ties between equally scored nodes repeat only if
// rand.Seed works, which the //go:debug line of run.go turns on.
func TestRandSeedTakesEffect(t *testing.T) {
	rand.Seed(7) //nolint:staticcheck // what Volcano's tie-breaks read
	a := rand.Int63()
	rand.Seed(7) //nolint:staticcheck
	if b := rand.Int63(); a != b {
		t.Fatalf("rand.Seed is a no-op (randseednop): replays would not repeat")
	}
}

// Histories whose answer follows from the scheduler's code, replayed end to
// end through the command on 2 nodes of 8 GPUs, windows of 20 jobs, 2
// seeds. A forced win of paddle over every stock configuration is not
// among them: see docs/paddle-replay.md ("What a tie means").
func TestRunKnownAnswers(t *testing.T) {
	// Whole-node gangs, one every 4 h, each running 4.5 h: two at a time
	// fit the 16 GPUs, so every stock configuration starts each at its
	// arrival (JCT 4.5 h). Paddle's headroom (paddle.smallJobHeadroom 0.2:
	// 4 of 16 GPUs) holds a gang while the other runs, since starting it
	// would leave no GPU free and the history predicts (or cannot yet
	// predict) at least paddle.smallJobHeadroom.predictedAbove's 4 h, so
	// the gangs run one at a time: the k-th (from 0) of a window starts at
	// 4.5k h and ends 0.5k+4.5 h after its arrival (no wait reaches the
	// 16 h starvation threshold).
	gangs := every(40, 4*time.Hour, 270*time.Minute, 1, 8)
	heldMean := 0.0
	for k := 0; k < 20; k++ {
		heldMean += (0.5*float64(k) + 4.5) / 20
	}
	heldRatio := fmt.Sprintf("%.3f [%.3f, %.3f] worse", heldMean/4.5, heldMean/4.5, heldMean/4.5)

	for _, tc := range []struct {
		name    string
		history []job
		args    []string
		want    []string
	}{
		{
			// 1-GPU jobs, at most 3 at a time on 16 GPUs: every job starts
			// at its arrival on one GPU under every configuration, so every
			// JCT is equal: a tie, exactly 1, and the shipped settings are
			// chosen (first on a tie).
			name:    "never saturated",
			history: every(40, 10*time.Minute, 30*time.Minute, 1, 1),
			want: []string{"chosen: paddle (deploy/paddle/volcano-scheduler.conf as shipped)",
				"Verdict: no difference shown: paddle against stock is a tie on this history: mean JCT 1.000 [1.000, 1.000] tie, p95 JCT 1.000 [1.000, 1.000] tie"},
		},
		{
			name: "headroom idles GPUs, shipped settings only", history: gangs, args: []string{"--settings", "paddle"},
			want: []string{heldRatio, "Verdict: keep stock (stock): paddle with mean JCT " + heldRatio},
		},
		{
			// Gangs of 1.5 h, one an hour: from the first that ends, the
			// history predicts 1.5 h, under predictedAbove's 4 h, and the
			// headroom lets each start at its arrival, as stock does.
			name: "short gangs are not held once the history predicts them short", history: every(40, time.Hour, 90*time.Minute, 1, 8),
			args: []string{"--settings", "paddle"},
			want: []string{"Verdict: no difference shown: paddle against stock is a tie on this history: mean JCT 1.000 [1.000, 1.000] tie"},
		},
		{
			// The same history with every setting: the choosing part sees
			// the headroom's loss and picks the setting without it, which
			// ties with stock on the judging part.
			name: "headroom idles GPUs, the choice avoids it", history: gangs,
			want: []string{"chosen: paddle-noheadroom", "Verdict: no difference shown: paddle-noheadroom against stock", "1.000 [1.000, 1.000] tie"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeHistory(t, tc.history)
			args := append([]string{"run", "--trace", path, "--nodes", "8xA100-NVSwitch:2", "--seeds", "2", "--window-jobs", "20"}, tc.args...)
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
			}
			want := append([]string{"(history format, 40 jobs) on 2 nodes of 8xA100-NVSwitch (16 GPUs, racks of 2)",
				"Choosing part: window 1 (", "Judging part: window 2 (", "Rule: "}, tc.want...)
			for _, w := range want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout does not say %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range []string{"window 1, seed 1 took", "2 windows x 2 seeds should take about", "replayed 2 windows x 2 seeds"} {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// The Philly trace goes through the same reader: its rows are read (a row
// without GPUs skipped and counted), shapes drawn. On one node every pod
// lands on the same node under every configuration, and with one 1-GPU
// job at a time every job starts at its arrival: a tie.
func TestRunPhillyTrace(t *testing.T) {
	var b strings.Builder
	b.WriteString("timestamp,duration,num_gpus,gpu_time,cluster\n")
	for i := 0; i < 40; i++ {
		at := t0.Add(time.Duration(i) * 20 * time.Minute).Format("2006-01-02 15:04:05")
		fmt.Fprintf(&b, "%s,600.0,1,600.0,11cb48\n", at)
	}
	b.WriteString("2024-05-01 00:05:00,600.0,0,0.0,11cb48\n") // no GPU: skipped
	path := filepath.Join(t.TempDir(), "philly.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	args := []string{"run", "--trace", path, "--nodes", "8xA100-NVSwitch:1", "--seeds", "2", "--window-jobs", "20", "--settings", "paddle"}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	for _, w := range []string{"(philly format, 40 jobs, 1 rows skipped) on 1 nodes of 8xA100-NVSwitch",
		"each window-seed draws them, 30% of jobs as parameter-server jobs",
		"Verdict: no difference shown: paddle against stock is a tie"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout does not say %q:\n%s", w, stdout.String())
		}
	}
}

func TestCell(t *testing.T) {
	for _, tc := range []struct {
		iv   replay.Interval
		want string
	}{
		{replay.Interval{Point: 0.9, Lo: 0.85, Hi: 0.95}, "0.900 [0.850, 0.950] better"},
		{replay.Interval{Point: 1, Lo: 0.98, Hi: 1.02}, "1.000 [0.980, 1.020] tie"},
		// Worse, but by less than the third decimal shows.
		{replay.Interval{Point: 1.0003, Lo: 1.0002, Hi: 1.0004}, "1.0003 [1.0002, 1.0004] worse"},
		{replay.Interval{Point: math.Inf(1), Lo: 1, Hi: math.Inf(1)}, "loss (a job never started)"},
		{replay.Interval{Point: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}, "-"},
	} {
		if got := cell(tc.iv); got != tc.want {
			t.Errorf("cell(%+v) = %q, want %q", tc.iv, got, tc.want)
		}
	}
}

// The configurations come from the files compiled in: the stock set, the
// settings asked for, the reference; a history with elastic or
// checkpointable jobs gets the set the benchmarks use for them, every
// configuration with the preempt and reclaim actions.
func TestConfigs(t *testing.T) {
	plain := writeHistory(t, every(4, time.Minute, time.Hour, 1, 1))
	flexJobs := every(4, time.Minute, time.Hour, 2, 1)
	path := filepath.Join(t.TempDir(), "flex.csv")
	var b bytes.Buffer
	w := jobhistory.NewWriter(&b)
	for _, j := range flexJobs {
		if err := w.Write(jobhistory.Record{SubmitTime: t0.Add(j.at), Duration: j.run, Pods: j.pods, GPUsPerPod: j.gpus,
			MinPods: 1, MaxPods: 4, Queue: "default", Mode: jobhistory.ModeCollective}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The stock sets of the build (Volcano v1.15.1 builds add gang-aware
	// levers), as the benchmarks compare them.
	cat, err := catalogue.Load()
	if err != nil {
		t.Fatal(err)
	}
	stock := func(flex bool) []string {
		es, err := cat.Comparison(flex, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			if e.Role == catalogue.RoleStock {
				out = append(out, e.Name)
			}
		}
		return out
	}
	for _, tc := range []struct {
		trace    string
		flex     bool
		stock    []string
		settings string
	}{
		{plain, false, stock(false), "paddle,paddle-queues"},
		{path, true, stock(true), "paddle-noheadroom"},
	} {
		h, err := readHistory(tc.trace)
		if err != nil {
			t.Fatal(err)
		}
		if h.flex != tc.flex || len(h.jobs) != 4 || h.format != jobhistory.FormatHistory {
			t.Errorf("%s: flex %t, %d jobs, format %s; want flex %t, 4 jobs, history", tc.trace, h.flex, len(h.jobs), h.format, tc.flex)
		}
		p, err := parseRun([]string{"--trace", tc.trace, "--nodes", "8xA100-NVSwitch:2", "--settings", tc.settings}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		cs, err := p.configs(h.flex)
		if err != nil {
			t.Fatal(err)
		}
		roles := map[replay.Role][]string{}
		for _, c := range cs {
			roles[c.Role] = append(roles[c.Role], c.Name())
			if tc.flex && !slices.Contains(c.Sched.Actions, "preempt") {
				t.Errorf("%s: actions %v lack preempt on a history with elastic jobs", c.Name(), c.Sched.Actions)
			}
			for _, tier := range c.Sched.Tiers {
				for _, pl := range tier.Plugins {
					if tc.flex && pl.Name == "task-topology" {
						t.Errorf("%s on a history with elastic jobs: task-topology panics on them", c.Name())
					}
				}
			}
		}
		if !slices.Equal(roles[replay.RoleStock], tc.stock) {
			t.Errorf("stock configurations %v, want %v", roles[replay.RoleStock], tc.stock)
		}
		if got := strings.Join(roles[replay.RolePaddle], ","); got != tc.settings {
			t.Errorf("paddle configurations %s, want %s", got, tc.settings)
		}
		if got := roles[replay.RoleReference]; len(got) != 1 || got[0] != replay.Clairvoyant {
			t.Errorf("reference %v, want %s", got, replay.Clairvoyant)
		}
	}
}
