package paddle

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

func TestParseArgsDefaults(t *testing.T) {
	a, problems := ParseArgs(nil)
	if len(problems) != 0 || a != DefaultArgs() {
		t.Errorf("defaults: %+v, problems %v", a, problems)
	}
}

func TestParseArgsValues(t *testing.T) {
	a, problems := ParseArgs(framework.Arguments{
		ArgAffinityWeight: 5, ArgPackingWeight: 2.5, ArgGPUTopoWeight: "7",
		ArgGPUTopoAllJobs: "false", ArgRackLabel: "example.com/rack", ArgSpineLabel: "",
		ArgGangFitOrder: false, ArgStarvationAfter: "1h", ArgTaskNameFallback: false, ArgGPUAssignMaxAge: "5m",
		ArgStarvationTaskNameJobs: true, ArgSmallGangsFirst: "false", ArgShortestPredictedFirst: "false",
		ArgShrinkElastic: true, ArgPreemptCheckpointable: "true", ArgSmallJobHeadroom: "0.2",
		ArgCheckpointMaxPreemptions: "4", ArgHeadroomPredictedAbove: "3h",
	})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	want := Args{AffinityWeight: 5, PackingWeight: 2.5, GPUTopologyWeight: 7, GPUTopologyAllJobs: false, GPUAssignmentsMaxAge: 5 * time.Minute,
		RackLabel: "example.com/rack", SpineLabel: "", GangFitOrder: false, StarvationAfter: time.Hour, TaskNameFallback: false,
		StarvationTaskNameJobs: true, ShrinkElastic: true, PreemptCheckpointable: true,
		CheckpointMaxPreemptions: 4,
		SmallJobHeadroom:         0.2, HeadroomPredictedAbove: 3 * time.Hour}
	if a != want {
		t.Errorf("got %+v\nwant %+v", a, want)
	}
	if a, _ := ParseArgs(framework.Arguments{ArgStarvationAfter: 90}); a.StarvationAfter != 90*time.Second {
		t.Errorf("numeric starvationAfter = %s, want 90s", a.StarvationAfter)
	}
}

// A bad value is reported and replaced by its default; nothing panics.
func TestParseArgsBadValues(t *testing.T) {
	cases := []struct {
		key  string
		val  interface{}
		want string
	}{
		{ArgAffinityWeight, "heavy", "not a number"},
		{ArgAffinityWeight, -1, "between 0 and 1000"},
		{ArgPackingWeight, 1e9, "between 0 and 1000"},
		{ArgGPUTopoWeight, []interface{}{1}, "not a number"},
		{ArgGPUTopoAllJobs, "maybe", "not true or false"},
		{ArgRackLabel, "not a label!", "not a valid label key"},
		{ArgRackLabel, 7, "label key string"},
		{ArgGangFitOrder, 1, "not true or false"},
		{ArgSmallGangsFirst, "yes please", "not true or false"},
		{ArgStarvationAfter, "soon", "not a duration"},
		{ArgStarvationAfter, "-5m", "must not be negative"},
		{ArgGPUAssignMaxAge, "-1m", "must not be negative"},
		{ArgGPUAssignMaxAge, "stale", "not a duration"},
		{ArgSmallJobHeadroom, 0.6, "from 0 (off) to 0.5"},
		{ArgSmallJobHeadroom, "-0.1", "from 0 (off) to 0.5"},
		{ArgSmallJobHeadroom, "most", "not a number"},
		{ArgHeadroomPredictedAbove, "-1h", "must not be negative"},
		{ArgHeadroomPredictedAbove, "long", "not a duration"},
		{ArgCheckpointMaxPreemptions, 0, "must be at least 1"},
		{ArgCheckpointMaxPreemptions, 1.5, "not a whole number"},
		{ArgCheckpointMaxPreemptions, "often", "not a number"},
		{"paddle.afinity.weight", 3, "unknown argument"},
		// The key without its prefix is not ignored silently.
		{"affinity.weight", 3, `the key is "paddle.affinity.weight"`},
		{"weight", 3, "unknown argument"},
		// Seconds past what a time.Duration holds overflowed to a negative
		// duration and were refused as negative.
		{ArgStarvationAfter, 1e300, "too large"},
		{ArgGPUAssignMaxAge, -1e300, "too large"},
	}
	for _, tc := range cases {
		a, problems := ParseArgs(framework.Arguments{tc.key: tc.val})
		if len(problems) != 1 || !strings.Contains(problems[0], tc.want) || !strings.Contains(problems[0], tc.key) {
			t.Errorf("%s=%v: problems %v, want one mentioning %q", tc.key, tc.val, problems, tc.want)
		}
		if a != DefaultArgs() {
			t.Errorf("%s=%v: args %+v, want the defaults", tc.key, tc.val, a)
		}
	}
	// The builder never fails: the scheduler builds the plugin from any ConfigMap.
	if p := Builder(NewStore(time.Now))(framework.Arguments{ArgAffinityWeight: map[string]int{"x": 1}, ArgStarvationAfter: nil}); p.Name() != PluginName {
		t.Error("New with garbage arguments")
	}
}

// The arguments of the removed variants get the unknown-key problem, which
// says they were removed and what to use, whatever value they carry; the
// plugin runs with the defaults, as it did with the variants off.
func TestParseArgsRemovedKeys(t *testing.T) {
	cases := []struct {
		key  string
		val  interface{}
		want string // besides "unknown argument, ignored: removed with the variant it set"
	}{
		{"paddle.smallJobHeadroom.when", "smallJobsWait", "whenever starting one would leave less than paddle.smallJobHeadroom"},
		{"paddle.smallJobHeadroom.when", "always", "delete the key"},
		{"paddle.smallJobHeadroom.queuedAfter", "30m", "paddle.smallJobHeadroom.when: smallJobsQueued alone"},
		{"paddle.smallJobHeadroom.patience", "2h", "once it has waited paddle.starvationAfter"},
		{"paddle.smallJobHeadroom.patience", 0, "delete the key"},
		{"paddle.smallJobHeadroom.counts", "smallJobGPUs", "the headroom counts free GPUs"},
		{"paddle.smallJobHeadroom.predicted", true, "keeps paddle.smallJobHeadroom of the GPUs free"},
		{"paddle.checkpointable.attainedAbove", "16h", "stopped for starving gangs only"},
		{"paddle.starvationGuard", "holdBack", "reserves the nodes it will start on"},
		{"paddle.starvationGuard", "reserve", "paddle.starvationAfter: 0 turns the guard off"},
	}
	for _, tc := range cases {
		a, problems := ParseArgs(framework.Arguments{tc.key: tc.val})
		if len(problems) != 1 || !strings.HasPrefix(problems[0], tc.key+": unknown argument, ignored: removed with the variant it set") || !strings.Contains(problems[0], tc.want) {
			t.Errorf("%s=%v: problems %v, want one saying it was removed and %q", tc.key, tc.val, problems, tc.want)
		}
		if a != DefaultArgs() {
			t.Errorf("%s=%v: args %+v, want the defaults", tc.key, tc.val, a)
		}
	}
	// The keys of the variants that remain are not reported as removed.
	for _, k := range knownKeys() {
		if _, ok := removedArgs[k]; ok {
			t.Errorf("%s is both an argument and removed", k)
		}
	}
}

// Volcano builds the plugin every session: one bad configuration is logged
// once per store (a scheduler process has one), not once a session; a
// different one is logged again.
func TestBadArgumentsLoggedOncePerConfiguration(t *testing.T) {
	var buf bytes.Buffer
	klog.LogToStderr(false)
	klog.SetOutput(&buf)
	t.Cleanup(func() { klog.SetOutput(os.Stderr); klog.LogToStderr(true) })
	build := Builder(NewStore(time.Now))
	typo := framework.Arguments{"paddle.afinity.weight": 3, ArgPackingWeight: "lots"}
	for i := 0; i < 5; i++ {
		build(typo)
	}
	other := framework.Arguments{ArgPackingWeight: "plenty"}
	build(other)
	build(other)
	klog.Flush()
	// klog writes an error to the writer of each severity up to ERROR:
	// count distinct lines.
	lines := map[string]bool{}
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "Bad paddle scheduler plugin argument") {
			lines[l] = true
		}
	}
	if got := len(lines); got != 3 {
		t.Errorf("logged %d lines for 2 bad configurations of 2 and 1 problems built 7 times, want 3:\n%s", got, buf.String())
	}
}

// deploy/paddle's configuration writes out the defaults, so the page users
// copy and the code agree (the threshold was once 30m in both). The levers
// are the exception: they are on there because that configuration runs
// the preempt and reclaim actions they need, and off by default because a
// configuration without them would count pods as releasable that nothing
// takes back.
func TestDeployConfMatchesDefaults(t *testing.T) {
	tiers, _ := paddleTiers(t)
	a, problems, ok := ArgsIn(tiers)
	if !ok {
		t.Fatal("deploy/paddle/volcano-scheduler.conf has no paddle plugin")
	}
	if len(problems) > 0 {
		t.Errorf("deploy/paddle: %v", problems)
	}
	d := DefaultArgs()
	d.ShrinkElastic, d.PreemptCheckpointable = true, true
	if a != d {
		t.Errorf("deploy/paddle arguments parse to %s, defaults are %s", a, d)
	}
}
