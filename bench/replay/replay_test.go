package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/catalogue/catalogtest"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

const dataDir = "../quality/testdata/pollux"

func TestBuildWindowAndLoad(t *testing.T) {
	// Submitted out of order; the window is taken in submission order.
	trace := []quality.TraceJob{
		{GPUs: 1, Duration: 50, Submitted: 1000},
		{GPUs: 8, Duration: 7200, Submitted: 0},
		{GPUs: 4, Duration: 100, Submitted: 3600},
		{GPUs: 1024, Duration: 10, Submitted: 1800},
	}
	w, err := Build(trace, []string{"imagenet"}, Options{Preset: quality.A100SXM, NodesPerRack: 2, Start: 0, Jobs: 4, Load: 0.5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Offered during the 3600 s span: 8 GPUs x 3600 s (the rest of the 8-GPU
	// job's 7200 s is after the span) + 1 x 50 + 4 x 0 + 1024 x 10.
	offered := 8*3600.0 + 50 + 1024*10
	wantNodes := int(math.Ceil(offered / (0.5 * 3600 * 8)))
	wantRacks := (wantNodes + 1) / 2
	if w.Cluster.Racks != wantRacks {
		t.Errorf("racks %d, want %d (%d nodes)", w.Cluster.Racks, wantRacks, wantNodes)
	}
	if w.Skipped != 1 || len(w.Jobs) != 3 {
		t.Fatalf("skipped %d, jobs %d; want the 1024-GPU job left out", w.Skipped, len(w.Jobs))
	}
	for i, want := range []float64{0, 1000, 3600} {
		if w.Jobs[i].Arrival != want {
			t.Errorf("job %d arrives at %g, want %g", i, w.Jobs[i].Arrival, want)
		}
	}
	if math.Abs(w.OfferedLoad-offered/(3600*float64(w.GPUs()))) > 1e-9 {
		t.Errorf("offered load %g", w.OfferedLoad)
	}
}

func TestRankCrossings(t *testing.T) {
	pod := func(node, rack string) quality.Pod { return quality.Pod{Node: node, Rack: rack, GPUs: 1} }
	cases := []struct {
		name                       string
		pods                       []quality.Pod
		nodes, racks, nodeX, rackX int
	}{
		{"one node", []quality.Pod{pod("a", "r"), pod("a", "r")}, 1, 1, 0, 0},
		{"consecutive", []quality.Pod{pod("a", "r"), pod("a", "r"), pod("b", "r"), pod("b", "r")}, 2, 1, 1, 0},
		{"interleaved", []quality.Pod{pod("a", "r"), pod("b", "r"), pod("a", "r"), pod("b", "r")}, 2, 1, 3, 0},
		{"two racks", []quality.Pod{pod("a", "r1"), pod("b", "r2"), pod("a", "r1")}, 2, 2, 2, 2},
	}
	for _, c := range cases {
		n, r, nx, rx := rankCrossings(c.pods)
		if n != c.nodes || r != c.racks || nx != c.nodeX || rx != c.rackX {
			t.Errorf("%s: got %d nodes %d racks %d/%d crossings, want %d %d %d/%d", c.name, n, r, nx, rx, c.nodes, c.racks, c.nodeX, c.rackX)
		}
	}
}

// A gang that needs the whole cluster runs first; a job arriving behind it
// waits until it ends, under every configuration, and the metrics follow.
func TestSimulateQueueing(t *testing.T) {
	models := testModels(t)
	w := testWorkload(2,
		imagenetJob("big", 2, 8, 100, 0),
		imagenetJob("late", 1, 8, 50, 10),
	)
	best := BestSteps(w, models)
	for _, cfg := range []Config{stockConfigs(t, 0)[0], paddleConfig(t)} {
		r, err := Simulate(context.Background(), w, models, best, cfg)
		if err != nil {
			t.Fatal(err)
		}
		big, late := r.Jobs[0], r.Jobs[1]
		if big.Start != 0 || math.Abs(big.End-100) > 1e-6 || big.Nodes != 2 || big.NodeCrossings != 1 {
			t.Errorf("%s: big %+v, want 0..100 on 2 nodes, 1 crossing", cfg.Name(), big)
		}
		if late.Start != 100 || math.Abs(late.End-150) > 1e-6 {
			t.Errorf("%s: late %+v, want 100..150", cfg.Name(), late)
		}
		m := Measure(r, w, 150)
		if m.Started != 2 || math.Abs(m.MeanJCT-(100+140)/2.0) > 1e-6 || m.LongestWait != 90 || math.Abs(m.Makespan-150) > 1e-6 {
			t.Errorf("%s: %+v", cfg.Name(), m)
		}
		// Both are jobs of 8 GPUs or more: their waits, in arrival order.
		if !reflect.DeepEqual(m.LargeWaits, []float64{0, 90}) {
			t.Errorf("%s: large jobs' waits %v, want [0 90]", cfg.Name(), m.LargeWaits)
		}
		// 16 GPUs busy 0..150, except 8 idle 100..150 with nothing waiting.
		if want := (16*100.0 + 8*50) / (16 * 150); math.Abs(m.Utilisation-want) > 1e-9 || m.IdleGPUHours != 0 {
			t.Errorf("%s: utilisation %g (want %g), idle %g GPU-h (want 0)", cfg.Name(), m.Utilisation, want, m.IdleGPUHours)
		}
	}
}

// Free GPUs that no waiting job fits are not idle but are free while jobs
// wait: a 4-GPU job holds one node from 0 to 100 s, a gang of two 8-GPU
// pods waits from 10 s until it ends, beside 12 free GPUs.
func TestFreeWhileWaiting(t *testing.T) {
	models := testModels(t)
	w := testWorkload(2,
		imagenetJob("small", 1, 4, 100, 0),
		imagenetJob("gang", 2, 8, 50, 10),
	)
	r, err := Simulate(context.Background(), w, models, BestSteps(w, models), paddleConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if gang := r.Jobs[1]; gang.Start != 100 {
		t.Fatalf("gang %+v, want a start at 100", gang)
	}
	m := Measure(r, w, 150)
	if want := 12 * 90.0 / 3600; math.Abs(m.FreeGPUHoursWaiting-want) > 1e-9 || m.IdleGPUHours != 0 {
		t.Errorf("free while waiting %g GPU-h (want %g), idle %g (want 0)", m.FreeGPUHoursWaiting, want, m.IdleGPUHours)
	}
}

func TestBinUtilisation(t *testing.T) {
	// 4 GPUs: 2 used over [0, 1.5), 4 over [1.5, 3); bins of 1 s.
	got := binUtilisation([]Sample{{T: 0, Used: 2}, {T: 1.5, Used: 4}, {T: 3, Used: 0}}, 4, 1)
	for i, want := range []float64{0.5, 0.75, 1} {
		if math.Abs(got[i]-want) > 1e-9 {
			t.Errorf("bin %d: %g, want %g", i, got[i], want)
		}
	}
}

// Idle GPUs count only where a waiting job's pods fit them node by node,
// and never more than are free.
func TestUsableIdle(t *testing.T) {
	job := func(gpus, podGPUs, pods int) Job {
		return Job{Job: quality.Job{GPUs: gpus, PodGPUs: podGPUs, Pods: pods}}
	}
	w := &Workload{Cluster: quality.Cluster{Preset: quality.A100SXM, Racks: 1, NodesPerRack: 2},
		Jobs: []Job{job(8, 8, 1), job(8, 4, 2), job(1, 1, 1), job(0, 0, 1)}}
	cases := []struct {
		name    string
		free    map[string]int
		pending []int
		want    int
	}{
		{"8 free over two nodes, one 8-GPU pod waits: fragmentation", map[string]int{"a": 4, "b": 4}, []int{0}, 0},
		{"two 4-GPU pods fit the two halves", map[string]int{"a": 4, "b": 4}, []int{0, 1}, 8},
		{"a 1-GPU job uses one of 8", map[string]int{"a": 4, "b": 4}, []int{0, 2}, 1},
		{"capped at the free GPUs", map[string]int{"a": 4, "b": 4}, []int{1, 2}, 8},
		{"a whole free node fits the 8-GPU pod", map[string]int{"a": 8, "b": 0}, []int{0}, 8},
		{"nothing free", map[string]int{"a": 0, "b": 0}, []int{0, 1, 2}, 0},
		{"a CPU-only job uses no GPU", map[string]int{"a": 4, "b": 4}, []int{3}, 0},
	}
	for _, c := range cases {
		used := 16
		for _, f := range c.free {
			used -= f
		}
		s := &sim{w: w, free: c.free, used: used, pending: c.pending}
		if got := s.usableIdle(); got != c.want {
			t.Errorf("%s: %d usable idle GPUs, want %d", c.name, got, c.want)
		}
	}
}

// The scheduler sees simulated waits and run times against its own clock.
func TestAt(t *testing.T) {
	wall := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	if got, want := at(wall, 7200, 1800).Time, wall.Add(-90*time.Minute); !got.Equal(want) {
		t.Errorf("at(wall, 2h, 30m) = %s, want %s", got, want)
	}
}

// Repeated runs average field by field; a configuration counts the fewest
// jobs it started in any run.
func TestAverageMetrics(t *testing.T) {
	a := Metrics{Config: "c", Jobs: 4, Started: 4, MeanJCT: 10, LongestWait: 2, IdleGPUHours: 1, Cycles: 10,
		JCTQuantiles: []float64{1, 3}, UtilisationOverTime: []float64{0.5}}
	b := Metrics{Config: "c", Jobs: 4, Started: 3, MeanJCT: 20, LongestWait: 6, IdleGPUHours: 5, Cycles: 13,
		JCTQuantiles: []float64{3, 5}, UtilisationOverTime: []float64{0.7, 0.9}}
	a.LargeWaits, b.LargeWaits = []float64{1}, []float64{2}
	got := averageMetrics([]Metrics{a, b})
	if got.LargeWaits != nil {
		t.Errorf("the averaged figures keep waits %v; they are kept per seed", got.LargeWaits)
	}
	if got.Config != "c" || got.MeanJCT != 15 || got.LongestWait != 4 || got.IdleGPUHours != 3 || got.Started != 3 || got.Cycles != 12 {
		t.Errorf("average %+v", got)
	}
	if !reflect.DeepEqual(got.JCTQuantiles, []float64{2, 4}) || len(got.UtilisationOverTime) != 1 || math.Abs(got.UtilisationOverTime[0]-0.6) > 1e-9 {
		t.Errorf("series %v %v", got.JCTQuantiles, got.UtilisationOverTime)
	}
	var r Range
	for i, v := range []float64{5, 2, 9} {
		r.add(v, i == 0)
	}
	if r != (Range{Min: 2, Max: 9}) {
		t.Errorf("range %+v", r)
	}
}

// With a PriorityClass per GPU count, the priority plugin starts a 1-GPU
// job that arrived after an 8-GPU one first; stock's first come, first
// served starts the 8-GPU job first. The sla configurations carry the
// plugin after gang with their waiting time.
func TestStockPriorityAndSLA(t *testing.T) {
	models := testModels(t)
	w := testWorkload(1,
		imagenetJob("first", 1, 8, 100, 0),
		imagenetJob("large", 1, 8, 100, 10),
		imagenetJob("small", 1, 1, 50, 20),
	)
	cs := stockConfigs(t, 90*time.Minute)
	byName := map[string]Config{}
	for _, c := range cs {
		byName[c.Name()] = c
	}
	best := BestSteps(w, models)
	cases := []struct {
		config           string
		largeAt, smallAt float64
	}{
		{Stock, 100, 200},
		{"stock-sla", 100, 200},
		{"stock-priority", 150, 100},
		{"stock-binpack-tasktopology-priority", 150, 100},
		{"stock-binpack-tasktopology-sla-priority", 150, 100},
	}
	for _, c := range cases {
		cfg, ok := byName[c.config]
		if !ok {
			t.Fatalf("no configuration %s", c.config)
		}
		r, err := Simulate(context.Background(), w, models, best, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Jobs[1].Start; got != c.largeAt {
			t.Errorf("%s: 8-GPU job starts at %g, want %g", c.config, got, c.largeAt)
		}
		if got := r.Jobs[2].Start; got != c.smallAt {
			t.Errorf("%s: 1-GPU job starts at %g, want %g", c.config, got, c.smallAt)
		}
	}
	for _, name := range []string{"stock-sla", "stock-binpack-tasktopology-sla", "stock-binpack-tasktopology-sla-priority"} {
		tier := byName[name].Sched.Tiers[0].Plugins
		if len(tier) < 3 || tier[2].Name != "sla" || tier[2].Arguments["sla-waiting-time"] != "1h30m" {
			t.Errorf("%s: first tier %v, want sla third with sla-waiting-time 1h30m", name, pluginNames(tier))
		}
	}
	for gpus, want := range map[int]string{1: "gpus-le-1", 2: "gpus-le-2", 3: "gpus-le-4", 8: "gpus-le-8", 9: "gpus-le-16", 5000: "gpus-le-1024"} {
		if got := GPUPriorityClassName(gpus); got != want {
			t.Errorf("GPUPriorityClassName(%d) = %s, want %s", gpus, got, want)
		}
	}
}

func pluginNames(ps []conf.PluginOption) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s%v", p.Name, p.Arguments))
	}
	return out
}

// The per-job CSV has one row per job, configuration and run, with the
// columns of its header.
func TestWriteJobsCSV(t *testing.T) {
	rep := &Report{Options: Options{Preset: quality.A100SXM, Start: 100, Jobs: 2}, Jobs: []RunJobs{
		{Config: Paddle, Run: 2, Seed: 3, Jobs: []JobResult{
			{Name: "job-00000", GPUs: 16, Arrival: 0, Start: 5, End: 105.25, Slowdown: 1.05, Nodes: 2, Racks: 1, NodeCrossings: 1, Restarts: 1, Resizes: 3},
			{Name: "job-00001", GPUs: 1, PS: true, Arrival: 7, Start: -1, End: -1},
		}}}}
	var b strings.Builder
	if err := rep.WriteJobsCSV(&b); err != nil {
		t.Fatal(err)
	}
	want := "8xA100-NVSwitch,100,2,paddle,2,3,job-00000,16,collective,0.0,5.0,105.2,1.0500,2,1,1,0,1,3\n" +
		"8xA100-NVSwitch,100,2,paddle,2,3,job-00001,1,ps,7.0,-1.0,-1.0,0.0000,0,0,0,0,0,0\n"
	if b.String() != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", b.String(), want)
	}
	if n := strings.Count(JobsCSVLine(), ","); n != strings.Count(want[:strings.Index(want, "\n")], ",") {
		t.Errorf("header has %d commas, rows %d", n, strings.Count(want[:strings.Index(want, "\n")], ","))
	}
}

// On the Flex workload an elastic job takes every free GPU up to its
// maximum and runs faster for it (the Pollux speed-up); with the preempt
// action and a PriorityClass per GPU count, a 1-GPU job arriving later
// takes a trainer above the elastic job's minimum at once and the job
// shrinks, then grows back; with equal priorities stock preempts nothing
// and the 1-GPU job waits for the end.
func TestFlexElasticGrowShrink(t *testing.T) {
	models := testModels(t)
	grows, oneGPU := imagenetJob("elastic", 4, 1, 1000, 0), imagenetJob("small", 1, 1, 50, 100)
	grows.MinPods, grows.MaxPods = 2, 8
	oneGPU.MinPods, oneGPU.MaxPods = 1, 1
	w := testWorkload(1, grows, oneGPU)
	w.Options.Flex = Flex{ElasticShare: 1}
	if err := w.LoadSpeedups(dataDir, models); err != nil {
		t.Fatal(err)
	}
	ratio := w.SpeedRatio(w.Jobs[0], 8)
	if ratio <= 1 || ratio > 2 {
		t.Fatalf("speed-up of 8 trainers over 4: %g, want in (1, 2]", ratio)
	}
	byName := map[string]Config{}
	for _, name := range []string{Stock, "stock-priority"} {
		byName[name] = built(t, entry(t, name), true)
	}
	best := BestSteps(w, models)

	r, err := Simulate(context.Background(), w, models, best, byName[Stock])
	if err != nil {
		t.Fatal(err)
	}
	e, small := r.Jobs[0], r.Jobs[1]
	// Alone on 8 GPUs of one node: 8 trainers, slowdown 1, 1000 s / ratio.
	if e.Start != 0 || math.Abs(e.End-1000/ratio) > 1e-6 || e.Resizes != 0 {
		t.Errorf("stock: elastic %+v, want 0..%g with no resize", e, 1000/ratio)
	}
	if small.Start != e.End {
		t.Errorf("stock: 1-GPU job starts at %g, want at the elastic job's end %g (no preemption at equal priority)", small.Start, e.End)
	}

	r, err = Simulate(context.Background(), w, models, best, byName["stock-priority"])
	if err != nil {
		t.Fatal(err)
	}
	e, small = r.Jobs[0], r.Jobs[1]
	if small.Start != 100 {
		t.Errorf("stock-priority: 1-GPU job starts at %g, want 100 (a trainer above the minimum preempted)", small.Start)
	}
	if e.Resizes < 2 || e.Restarts != 0 || e.End <= 1000/ratio {
		t.Errorf("stock-priority: elastic %+v, want shrunk and grown back (2+ resizes), no restart, later than %g", e, 1000/ratio)
	}
	// Paddle's levers (deploy/paddle's preempt and reclaim; between jobs
	// of equal priority paddle chooses the victims) shrink the elastic job
	// for the waiting gang too.
	r, err = Simulate(context.Background(), w, models, best, paddleFlexConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	e, small = r.Jobs[0], r.Jobs[1]
	if small.Start != 100 || e.Resizes < 2 || e.Restarts != 0 {
		t.Errorf("paddle: 1-GPU job starts at %g, elastic %+v; want 100, shrunk and grown back, no restart", small.Start, e)
	}
	if lb := LowerBoundMetrics(w, models, best); math.Abs(lb.JCTQuantiles[0]-50) > 1e-9 || math.Abs(lb.Makespan-1000/ratio) > 1e-6 {
		t.Errorf("lower bound %+v: want the elastic job at 8 trainers", lb)
	}
}

// A window without 8-GPU jobs (or without 1-GPU jobs) has metrics JSON can
// hold: the bench saves them (json rejects NaN).
func TestMeasureWithoutLargeJobsIsJSON(t *testing.T) {
	w := &Workload{Cluster: quality.Cluster{Preset: quality.A100SXM, Racks: 1, NodesPerRack: 1},
		Jobs: []Job{{Job: quality.Job{Name: "a", GPUs: 2, PodGPUs: 2, Pods: 1, Duration: 4}}}}
	r := &Run{Config: Stock, Jobs: []JobResult{{Name: "a", GPUs: 2, Arrival: 0, Start: 1, End: 5}},
		Samples: []Sample{{T: 0, Used: 0}, {T: 1, Used: 2}, {T: 5, Used: 0}}}
	m := Measure(r, w, 5)
	if _, err := json.Marshal(m); err != nil {
		t.Fatalf("metrics of a window without 1-GPU or 8-GPU jobs: %v", err)
	}
	if m.MeanWaitLarge != 0 || m.MeanWaitSingleGPU != 0 {
		t.Errorf("mean waits %g / %g, want 0 for no such job", m.MeanWaitSingleGPU, m.MeanWaitLarge)
	}
}

// An interrupted Repeat returns the runs it finished with ctx's error, and
// nothing when it finished none.
func TestRepeatInterrupted(t *testing.T) {
	cs := stockConfigs(t, 0)
	o := Options{Preset: quality.A100SXM, NodesPerRack: 4, Start: 0, Jobs: 10, Load: 0.9, PSShare: 0.3, Seed: 1}
	ctx, cancel := context.WithCancel(context.Background())
	// The one configuration's log line ends the first run: cancel there.
	rep, err := Repeat(ctx, o, dataDir, cs[:1], 3, func(string, ...interface{}) { cancel() })
	if !errors.Is(err, context.Canceled) || rep == nil || rep.Runs != 1 || len(rep.Metrics) != 2 {
		t.Fatalf("Repeat cancelled after its first run: %v, report %+v; want the first run and context.Canceled", err, rep)
	}
	if rep, err := Repeat(ctx, o, dataDir, cs[:1], 3, nil); !errors.Is(err, context.Canceled) || rep != nil {
		t.Errorf("Repeat on a cancelled context: %v, %+v; want no report and context.Canceled", err, rep)
	}
}

// A checkpointable job stopped for a starving gang gets new pods under its
// old PodGroup and waits afresh from then: it does not starve at once and
// stop the gang that took its GPUs in turn. Two 8-GPU jobs on one 8-GPU
// node under paddle's levers take turns once per starvation threshold
// instead of restarting each other every cycle.
func TestRestartedJobWaitsAfresh(t *testing.T) {
	models := testModels(t)
	// Without the enqueue action: with it, overcommit never admits the
	// second gang while the first runs (TestEnqueueKeepsAGangThatDoesNotFitPending).
	cfg := withoutEnqueue(paddleFlexConfig(t))
	after := starvationAfter(cfg.Sched).Seconds()
	// Each job runs longer than two thresholds, so they must take turns.
	hours := 2.5 * after
	w := twoCheckpointableGangs(hours)
	r, err := Simulate(context.Background(), w, models, BestSteps(w, models), cfg)
	if err != nil {
		t.Fatal(err)
	}
	first, second := r.Jobs[0], r.Jobs[1]
	if r.Evictions == 0 || Measure(r, w, 0).Evictions != float64(r.Evictions) {
		t.Errorf("evictions %d: the first job's pods were evicted", r.Evictions)
	}
	if second.Start != 60+after {
		t.Errorf("second job starts at %g, want %g (the first stopped once the second starved)", second.Start, 60+after)
	}
	// Each turn lasts a threshold: no more restarts than turns until the
	// last job ends.
	turns := int(max(first.End, second.End)/after) + 1
	if n := first.Restarts + second.Restarts; n == 0 || n > turns {
		t.Errorf("restarts: %d and %d, want 1 to %d in all (one per starvation threshold); %d cycles", first.Restarts, second.Restarts, turns, r.Cycles)
	}
}

// paddle's stop guards in the replay: on one 8-GPU node a 10-hour
// checkpointable job is stopped by short gangs once they starve (30m here),
// at most paddle.checkpointable.maxPreemptions (2) times; the third short
// gang waits for it.
func TestStopsBoundedPerJob(t *testing.T) {
	models := testModels(t)
	const hour = 3600.0
	w := testWorkload(1, imagenetJob("long", 1, 8, 10*hour, 0),
		imagenetJob("b", 1, 8, hour/2, 1*hour), imagenetJob("c", 1, 8, hour/2, 3*hour), imagenetJob("d", 1, 8, hour/2, 5*hour))
	w.Jobs[0].Checkpointable = true
	w.Options.Flex = Flex{CheckpointShare: 1, RestartCost: 300}
	cfg := WithPaddleArgs(withoutEnqueue(paddleFlexConfig(t)), "paddle-30m", "", map[string]interface{}{paddle.ArgStarvationAfter: "30m", paddle.ArgSmallJobHeadroom: 0})
	r, err := Simulate(context.Background(), w, models, BestSteps(w, models), cfg)
	if err != nil {
		t.Fatal(err)
	}
	long, b, c, d := r.Jobs[0], r.Jobs[1], r.Jobs[2], r.Jobs[3]
	if long.Restarts != 2 {
		t.Errorf("long job restarted %d times, want 2 (the bound)", long.Restarts)
	}
	if b.Start != 1.5*hour || c.Start != 3.5*hour {
		t.Errorf("short gangs started at %g and %g, want %g and %g (once they starved)", b.Start, c.Start, 1.5*hour, 3.5*hour)
	}
	if d.Start < long.End {
		t.Errorf("third short gang started at %g, before the long job, stopped twice already, ended at %g", d.Start, long.End)
	}
}

// testWorkload is nodes 8xA100-NVSwitch nodes in one rack, nothing else
// running, and the jobs.
func testWorkload(nodes int, jobs ...Job) *Workload {
	return &Workload{Cluster: quality.Cluster{Preset: quality.A100SXM, Racks: 1, NodesPerRack: nodes, Background: map[string][]int{}}, Jobs: jobs}
}

// imagenetJob is a job of pods pods of podGPUs GPUs training imagenet for
// duration seconds (at its best placement), arriving at arrival.
func imagenetJob(name string, pods, podGPUs int, duration, arrival float64) Job {
	return Job{Job: quality.Job{Name: name, GPUs: pods * podGPUs, PodGPUs: podGPUs, Pods: pods, Model: "imagenet", Duration: duration}, Arrival: arrival}
}

// testModels are the step-time models of ../shared/data/pollux.
func testModels(t *testing.T) map[string]quality.Model {
	t.Helper()
	models, err := quality.Models(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	return models
}

// No configuration beats the lower bound, job by job: PS jobs larger than
// a node (where the best placement the slowdowns are measured against can
// be beaten), collective jobs across islands and nodes, on the preset
// with slow links between NVLink pairs, under every stock configuration
// and paddle.
func TestNoConfigurationBeatsTheBound(t *testing.T) {
	models := testModels(t)
	ps := func(name string, trainers, servers int, arrival float64) Job {
		j := imagenetJob(name, trainers, 1, 3000, arrival)
		j.PS, j.PServers = true, servers
		return j
	}
	w := &Workload{Cluster: quality.Cluster{Preset: quality.PCIeNVLinkPairs, Racks: 2, NodesPerRack: 2, Background: map[string][]int{}},
		Jobs: []Job{ps("ps12", 12, 3, 0), imagenetJob("c4x2", 4, 2, 2000, 10), imagenetJob("c2x8", 2, 8, 2500, 20),
			ps("ps20", 20, 5, 30), imagenetJob("c8x1", 8, 1, 1000, 40), imagenetJob("one", 1, 1, 500, 50)}}
	best := BestSteps(w, models)
	bound := LowerBoundMetrics(w, models, best)
	if bound.Role != RoleBound || bound.Started != len(w.Jobs) {
		t.Fatalf("bound %+v", bound)
	}
	for _, c := range append(stockConfigs(t, 0), paddleConfig(t), referenceConfig(t)) {
		r, err := Simulate(context.Background(), w, models, best, c)
		if err != nil {
			t.Fatal(err)
		}
		for k, j := range r.Jobs {
			if !j.Started() {
				t.Errorf("%s: %s never started", c.Name(), j.Name)
				continue
			}
			lb, _ := boundRun(w, models[w.Jobs[k].Model], best[j.Name], w.Jobs[k])
			if jct := j.End - j.Arrival; jct < lb*(1-1e-9) {
				t.Errorf("%s: %s completes in %.1f s, under its bound %.1f s (slowdown %.3f)", c.Name(), j.Name, jct, lb, j.Slowdown)
			}
		}
	}
}

// The clairvoyant reference starts the waiting job with the least
// remaining GPU-time first, where stock starts them in arrival order, and
// never preempts the job that runs.
func TestClairvoyantReference(t *testing.T) {
	models := testModels(t)
	w := testWorkload(1, imagenetJob("running", 1, 8, 1000, 0), imagenetJob("long", 1, 8, 5000, 10), imagenetJob("short", 2, 4, 100, 20))
	ref := referenceConfig(t)
	if ref.Role != RoleReference {
		t.Errorf("role %q", ref.Role)
	}
	best := BestSteps(w, models)
	starts := func(c Config) []float64 {
		r, err := Simulate(context.Background(), w, models, best, c)
		if err != nil {
			t.Fatal(err)
		}
		var out []float64
		for _, j := range r.Jobs {
			out = append(out, j.Start)
		}
		return out
	}
	if got, want := starts(stockConfigs(t, 0)[0]), []float64{0, 1000, 6000}; !reflect.DeepEqual(got, want) {
		t.Errorf("stock starts %v, want %v (arrival order)", got, want)
	}
	if got, want := starts(ref), []float64{0, 1100, 1000}; !reflect.DeepEqual(got, want) {
		t.Errorf("reference starts %v, want %v (shortest remaining first, the running job kept)", got, want)
	}
}

// withoutEnqueue is the configuration with its PodGroups created Inqueue
// and no enqueue action.
func withoutEnqueue(c Config) Config {
	sc := *c.Sched
	sc.Actions = slices.DeleteFunc(slices.Clone(sc.Actions), func(a string) bool { return a == "enqueue" })
	c.Sched = &sc
	return c
}

// With the enqueue action its file runs, deploy/paddle keeps a gang that
// does not fit Pending while the cluster is full: Volcano's overcommit
// plugin admits a PodGroup only while the cluster's GPUs x 1.2 less those
// in use cover its minResources (plugins/overcommit: JobEnqueueableFn),
// proportion only while its queue has room or elastic pods to take back
// (plugins/proportion: JobEnqueueableFn), and the preempt action passes
// over Pending jobs (actions/preempt: Execute), so paddle's levers never
// stop the checkpointable job for it.
// Without enqueue the same gang takes the node once it starves.
func TestEnqueueKeepsAGangThatDoesNotFitPending(t *testing.T) {
	models := testModels(t)
	cfg := paddleFlexConfig(t)
	if !slices.Contains(cfg.Sched.Actions, "enqueue") {
		t.Fatalf("deploy/paddle's actions %v: no enqueue", cfg.Sched.Actions)
	}
	after := starvationAfter(cfg.Sched).Seconds()
	hours := 2.5 * after
	w := twoCheckpointableGangs(hours)
	for _, c := range []struct {
		cfg      Config
		start    float64
		admitted float64
	}{
		{cfg, hours, hours}, // admitted when the first ends, starts then
		{withoutEnqueue(cfg), 60 + after, 60},
	} {
		r, err := Simulate(context.Background(), w, models, BestSteps(w, models), c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		second := r.Jobs[1]
		if second.Start != c.start || second.Admitted != c.admitted {
			t.Errorf("actions %v: second job admitted at %g, started at %g; want %g, %g", c.cfg.Sched.Actions, second.Admitted, second.Start, c.admitted, c.start)
		}
	}
}

// Queues are weighted by their share of the GPU-time submitted in the
// month before the window, never by the window's own jobs; a queue the
// history never saw gets the least weight.
func TestQueueWeightsFromHistory(t *testing.T) {
	day := 24 * 3600.0
	t0 := 100 * day
	before := []quality.TraceJob{
		{GPUs: 1, Duration: 3000, Submitted: t0 - day, Queue: "a"},
		{GPUs: 4, Duration: 250, Submitted: t0 - 2*day, Queue: "B"},
		{GPUs: 8, Duration: 1e6, Submitted: t0 - 40*day, Queue: "a"}, // older than the lookback
	}
	jobs := []Job{{Queue: queueName("a")}, {Queue: queueName("B")}, {Queue: queueName("new")}, {}}
	got := queueWeights(before, t0, jobs)
	want := map[string]int32{"vc-a": 750, "vc-b": 250, "vc-new": 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("weights %v, want %v", got, want)
	}
	// The window's own jobs change nothing.
	jobs[0].Duration, jobs[1].GPUs = 1e9, 64
	if again := queueWeights(before, t0, jobs); !reflect.DeepEqual(again, want) {
		t.Errorf("weights %v after changing the window's jobs, want %v", again, want)
	}
	w := &Workload{Queues: got}
	qs := w.QueueObjects()
	if len(qs) != 3 || qs[0].Name != "vc-a" || qs[0].Spec.Weight != 750 || qs[0].Status.State != "Open" {
		t.Errorf("queues %+v", qs)
	}
}

// A configuration with queues sends each job to its trace queue and
// namespace; one without keeps the default queue. Every configuration runs
// its own file's actions.
func TestJobsCarryTheirQueue(t *testing.T) {
	models := testModels(t)
	a, b := imagenetJob("a", 1, 8, 100, 0), imagenetJob("b", 1, 8, 100, 10)
	a.Queue, a.Namespace, b.Queue, b.Namespace = "vc-x", "vc-x", "vc-y", "vc-y"
	w := testWorkload(1, a, b)
	w.Queues = map[string]int32{"vc-x": 3, "vc-y": 1}
	stock := stockConfigs(t, 0)[0]
	if want := []string{"enqueue", "allocate", "backfill"}; !reflect.DeepEqual(stock.Sched.Actions, want) {
		t.Errorf("stock actions %v, want its file's %v", stock.Sched.Actions, want)
	}
	for _, c := range []struct {
		queues bool
		want   []string
	}{{false, []string{"default", "default"}}, {true, []string{"vc-x", "vc-y"}}} {
		worst := c.want[1]
		cfg := stock
		cfg.Queues = c.queues
		s := &sim{w: w, cfg: cfg, ns: "replay", enqueues: true, on: make([][]bool, 2), pods: make([][]*v1.Pod, 2), res: make([]JobResult, 2),
			groups: make([]*schedulingv1.PodGroup, 2), created: make([][]float64, 2), started: make([][]float64, 2)}
		w.normalizeFlex()
		for i := range w.Jobs {
			s.arrive(i)
			pg := s.groups[i]
			if pg.Spec.Queue != c.want[i] || pg.Namespace != w.Jobs[i].Namespace || pg.Status.Phase != schedulingv1.PodGroupPending {
				t.Errorf("queues %v: job %d PodGroup %s/%s queue %s phase %s, want queue %s, Pending", c.queues, i, pg.Namespace, pg.Name, pg.Spec.Queue, pg.Status.Phase, c.want[i])
			}
			if gpus := (*pg.Spec.MinResources)["nvidia.com/gpu"]; gpus.Value() != 8 {
				t.Errorf("job %d minResources %v, want 8 GPUs", i, pg.Spec.MinResources)
			}
		}
		r, err := Simulate(context.Background(), w, models, BestSteps(w, models), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Jobs[0].Start != 0 || r.Jobs[1].Start != r.Jobs[0].End || r.Jobs[1].Queue != worst {
			t.Errorf("queues %v: %+v", c.queues, r.Jobs)
		}
		// The worst queue is the one whose job waited; admission came at
		// arrival for the first, at the first's end for the second
		// (overcommit: 8 of 8 GPUs in use).
		m := Measure(r, w, 0)
		worstWait := r.Jobs[0].End - 10 // vc-y's one job
		if !c.queues {
			worstWait /= 2 // both jobs in default
		}
		if m.WorstQueue != worst || m.WorstQueueWait != worstWait || m.MeanAdmissionWait != (r.Jobs[0].End-10)/2 {
			t.Errorf("queues %v: worst queue %s %g, admission wait %g", c.queues, m.WorstQueue, m.WorstQueueWait, m.MeanAdmissionWait)
		}
	}
}

// The timers a replay runs cycles at: every compared configuration's
// (paddle's starvation threshold, the sla plugin's waiting time) and its
// own.
func TestDeclaredTimers(t *testing.T) {
	var sla Config
	for _, c := range stockConfigs(t, 2*time.Hour) {
		if c.Name() == "stock-sla" {
			sla = c
		}
	}
	p := paddleConfig(t)
	after := starvationAfter(p.Sched)
	if after <= 0 {
		t.Fatalf("paddle declares no starvation threshold")
	}
	if got, want := DeclaredTimers([]Config{sla, p, stockConfigs(t, time.Hour)[0]}), []time.Duration{2 * time.Hour, after}; !reflect.DeepEqual(got, want) {
		t.Errorf("timers %v, want %v", got, want)
	}
	w := &Workload{Timers: []time.Duration{2 * time.Hour}}
	if got, want := timersOf(w, p), []float64{7200, after.Seconds()}; !reflect.DeepEqual(got, want) {
		t.Errorf("paddle's replay timers %v, want %v", got, want)
	}
}

// The queue levers send jobs to their queues and reclaim; paddle with
// queues keeps its file's actions.
func TestQueueConfigs(t *testing.T) {
	found := 0
	for _, c := range stockConfigs(t, 0) {
		if c.Name() != "stock-queues" && c.Name() != "stock-binpack-queues" {
			if c.Queues != (c.Name() == "stock-queues-gangreclaim") {
				t.Errorf("%s: queues %v", c.Name(), c.Queues)
			}
			continue
		}
		found++
		if want := []string{"enqueue", "allocate", "reclaim", "backfill"}; !c.Queues || !reflect.DeepEqual(c.Sched.Actions, want) || c.Role != RoleStock {
			t.Errorf("%s: queues %v, actions %v, role %s; want queues, %v, stock", c.Name(), c.Queues, c.Sched.Actions, c.Role, want)
		}
	}
	if found != 2 {
		t.Errorf("%d queue configurations, want 2", found)
	}
	p := paddleConfig(t)
	q := built(t, entry(t, "paddle-queues"), false)
	if !q.Queues || q.Name() != "paddle-queues" || p.Queues || p.Name() != Paddle || !reflect.DeepEqual(q.Sched.Actions, p.Sched.Actions) {
		t.Errorf("WithQueues: %s %v %v from %s %v", q.Name(), q.Queues, q.Sched.Actions, p.Name(), p.Queues)
	}
}

// A sensitivity pass changes the cost model's yardstick, not the window or
// the cluster the scheduler sees.
func TestSensitivityBuild(t *testing.T) {
	trace := []quality.TraceJob{{GPUs: 8, Duration: 7200, Submitted: 0}, {GPUs: 4, Duration: 100, Submitted: 3600}}
	o := Options{Preset: quality.PCIeNVLinkPairs, NodesPerRack: 2, Start: 0, Jobs: 2, Load: 0.5, Seed: 1}
	plain, err := Build(trace, []string{"imagenet"}, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Sensitivity = Sensitivity{LinkScale: 2, FirstFreeGPUs: true}
	w, err := Build(trace, []string{"imagenet"}, o)
	if err != nil {
		t.Fatal(err)
	}
	if w.Cluster.Preset.IslandGBps != 2*plain.Cluster.Preset.IslandGBps || !w.Cluster.FirstFreeGPUs || w.Cluster.Racks != plain.Cluster.Racks ||
		!reflect.DeepEqual(w.Jobs, plain.Jobs) || !strings.Contains(w.Describe(), "interconnect bandwidths x2, GPUs assigned first-free") {
		t.Errorf("sensitivity workload %+v (%s) against %+v", w.Cluster, w.Describe(), plain.Cluster)
	}
}

// A cluster's history keeps its recorded shapes, queues and elastic range
// (the seed draws only the model), on a cluster of the nodes given.
func TestBuildFromHistory(t *testing.T) {
	trace := []quality.TraceJob{
		{GPUs: 8, Duration: 600, Submitted: 0, Pods: 2, PodGPUs: 4, Mode: "collective", MinPods: 1, MaxPods: 4, Queue: "team-a", Namespace: "ml"},
		{GPUs: 4, Duration: 100, Submitted: 60, Pods: 4, PodGPUs: 1, Mode: "ps", PServers: 2, MinPods: 4, MaxPods: 4, Checkpointable: true, Queue: "team-b", Namespace: "ml"},
		{GPUs: 2, Duration: 50, Submitted: 90}, // a Philly row: shape drawn
	}
	o := Options{Preset: quality.A100SXM, NodesPerRack: 4, Start: 0, Jobs: 3, Nodes: 6, PSShare: 0.3, Seed: 7,
		Flex: Flex{ElasticShare: 1, CheckpointShare: 0}}
	w, err := Build(trace, []string{"imagenet", "bert"}, o)
	if err != nil {
		t.Fatal(err)
	}
	if w.Cluster.Racks != 2 {
		t.Errorf("racks %d, want 2 (6 nodes, 4 a rack)", w.Cluster.Racks)
	}
	a, b := w.Jobs[0], w.Jobs[1]
	if a.Pods != 2 || a.PodGPUs != 4 || a.PS || a.MinPods != 1 || a.MaxPods != 4 || a.Checkpointable || a.Queue != "vc-team-a" || a.Namespace != "vc-ml" {
		t.Errorf("collective job %+v", a)
	}
	if b.Pods != 4 || b.PodGPUs != 1 || !b.PS || b.PServers != 2 || b.Elastic() || !b.Checkpointable {
		t.Errorf("ps job %+v: want its recorded shape, not elastic whatever Flex draws, checkpointable", b)
	}
	if c := w.Jobs[2]; c.GPUs != 2 || c.Pods*c.PodGPUs != 2 {
		t.Errorf("philly row %+v", c)
	}
}

// On a build with Volcano v1.15's gang-aware actions the stock levers come
// with them too, and paddle can run them; a v1.14.1 build has none.
func TestGangAwareConfigs(t *testing.T) {
	_, v115 := framework.GetAction("gangpreempt")
	var got []string
	for _, c := range stockConfigs(t, 0) {
		if slices.Contains(c.Sched.Actions, "gangpreempt") || slices.Contains(c.Sched.Actions, "gangreclaim") {
			got = append(got, c.Name()+": "+strings.Join(c.Sched.Actions, ","))
		}
	}
	want := []string(nil)
	if v115 {
		want = []string{"stock-priority-gangpreempt: enqueue,allocate,gangpreempt,backfill", "stock-queues-gangreclaim: enqueue,allocate,gangreclaim,backfill"}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gang-aware stock configurations %q, want %q", got, want)
	}
	cat := catalogtest.Load(t)
	compared, err := cat.Comparison(false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ok := slices.ContainsFunc(compared, func(e catalogue.Entry) bool { return e.Name == "paddle-gang" })
	if ok != v115 {
		t.Fatalf("paddle-gang compared %v on a build with the actions %v", ok, v115)
	}
	if !ok {
		return
	}
	p := built(t, entry(t, "paddle-gang"), false)
	if !reflect.DeepEqual(p.Sched.Actions, []string{"enqueue", "allocate", "gangpreempt", "gangreclaim", "backfill"}) {
		t.Errorf("paddle-gang actions %v", p.Sched.Actions)
	}
	// gangpreempt evicts pods of a lower-priority elastic job grown to the
	// whole node for a 1-GPU job of higher priority (a PriorityClass per
	// GPU count), which starts on arrival. (Its PodGroup is admitted
	// because proportion counts the pods above the elastic job's minimum
	// as room, plugins/proportion: JobEnqueueableFn; a checkpointable gang
	// of fixed size leaves none, and the 1-GPU job would stay Pending, out
	// of every preempt action's reach.)
	models := testModels(t)
	big, small := imagenetJob("big", 4, 1, 1000, 0), imagenetJob("small", 1, 1, 100, 50)
	big.MinPods, big.MaxPods = 4, 8
	w := testWorkload(1, big, small)
	w.Options.Flex = Flex{ElasticShare: 1}
	if err := w.LoadSpeedups(dataDir, models); err != nil {
		t.Fatal(err)
	}
	var gp Config
	for _, c := range stockConfigs(t, 0) {
		if c.Name() == "stock-priority-gangpreempt" {
			gp = c
		}
	}
	r, err := Simulate(context.Background(), w, models, BestSteps(w, models), gp)
	if err != nil {
		t.Fatal(err)
	}
	if r.Jobs[1].Start != 50 || r.Evictions < 1 {
		t.Errorf("gangpreempt: small starts at %g, %d pods evicted (big: %+v); want 50, some", r.Jobs[1].Start, r.Evictions, r.Jobs[0])
	}
}

// A history whose jobs all came in the same second replays on a cluster of
// given nodes (no load to size it for); sized for a load, it needs a span.
func TestHistoryWithoutSpan(t *testing.T) {
	trace := []quality.TraceJob{{GPUs: 1, Duration: 3, Submitted: 10}, {GPUs: 2, Duration: 6, Submitted: 10}}
	o := Options{Preset: quality.A100SXM, NodesPerRack: 1, Start: 0, Jobs: 2, Nodes: 1, Seed: 1}
	w, err := Build(trace, []string{"imagenet"}, o)
	if err != nil || w.Nodes() != 1 || w.OfferedLoad != 0 {
		t.Fatalf("given nodes: %v, %+v", err, w)
	}
	o.Nodes, o.Load = 0, 0.9
	if _, err := Build(trace, []string{"imagenet"}, o); err == nil || !strings.Contains(err.Error(), "no arrival span") {
		t.Errorf("sized for a load: %v, want no arrival span", err)
	}
}

// Paddle with stock-priority's classes: each PodGroup names its GPU
// count's class and the cluster defines them; paddle itself is unchanged.
func TestWithPriorityClasses(t *testing.T) {
	p := paddleConfig(t)
	q := built(t, entry(t, "paddle-priority"), false)
	if q.Name() != "paddle-priority" || p.Name() != Paddle || len(q.PriorityClasses) == 0 || p.PriorityClasses != nil || q.Role != RolePaddle {
		t.Fatalf("paddle-priority: %s %d classes, role %s; from %s", q.Name(), len(q.PriorityClasses), q.Role, p.Name())
	}
	pg := &schedulingv1.PodGroup{}
	q.Annotate(quality.Job{GPUs: 3}, pg)
	if pg.Spec.PriorityClassName != "gpus-le-4" {
		t.Errorf("a 3-GPU job's class %q, want gpus-le-4", pg.Spec.PriorityClassName)
	}
}

// twoCheckpointableGangs is one 8-GPU node and two checkpointable 8-GPU
// jobs of the given run time, the second arriving a minute after the
// first, restarts costing 5 minutes.
func twoCheckpointableGangs(duration float64) *Workload {
	w := testWorkload(1, imagenetJob("first", 1, 8, duration, 0), imagenetJob("second", 1, 8, duration, 60))
	for i := range w.Jobs {
		w.Jobs[i].Checkpointable = true
	}
	w.Options.Flex = Flex{CheckpointShare: 1, RestartCost: 300}
	return w
}
