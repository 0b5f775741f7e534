package paddle

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// PluginName is the name in the scheduler ConfigMap.
const PluginName = paddleapi.PluginName

// Argument keys in the scheduler ConfigMap:
//
//	tiers:
//	- plugins:
//	  - name: paddle
//	    arguments:
//	      paddle.affinity.weight: 10
//	      paddle.rackLabel: topology.example.com/rack
const (
	ArgAffinityWeight  = "paddle.affinity.weight"
	ArgPackingWeight   = "paddle.packing.weight"
	ArgGPUTopoWeight   = "paddle.gpuTopology.weight"
	ArgGPUTopoAllJobs  = "paddle.gpuTopology.allJobs"
	ArgGPUAssignMaxAge = "paddle.gpuTopology.assignmentsMaxAge"
	ArgRackLabel       = "paddle.rackLabel"
	ArgSpineLabel      = "paddle.spineLabel"
	ArgGangFitOrder    = "paddle.gangFitOrder"
	// ArgSmallGangsFirst orders waiting guarded gangs by the GPUs they
	// still need, fewest first; see Args.SmallGangsFirst.
	ArgSmallGangsFirst = "paddle.smallGangsFirst"
	// ArgShortestPredictedFirst orders them by predicted GPU-time instead;
	// see Args.ShortestPredictedFirst.
	ArgShortestPredictedFirst = "paddle.shortestPredictedFirst"
	ArgStarvationAfter        = "paddle.starvationAfter"
	ArgTaskNameFallback       = "paddle.taskNameFallback"
	// ArgStarvationTaskNameJobs lets jobs recognised only by task names
	// (no job plugin labels) trigger and be subject to the guard.
	ArgStarvationTaskNameJobs = "paddle.starvationGuard.taskNameJobs"
	// ArgShrinkElastic lets a waiting gang take back elastic jobs' pods
	// above their minimum; see Args.ShrinkElastic.
	ArgShrinkElastic = "paddle.elastic.shrink"
	// ArgPreemptCheckpointable lets a starving gang stop jobs that opted
	// in as checkpointable; see Args.PreemptCheckpointable.
	ArgPreemptCheckpointable = "paddle.checkpointable.preempt"
	// ArgCheckpointMaxPreemptions bounds how often a job is stopped; see
	// Args.CheckpointMaxPreemptions.
	ArgCheckpointMaxPreemptions = "paddle.checkpointable.maxPreemptions"
	// ArgSmallJobHeadroom: the share of the cluster's GPUs whole-node
	// gangs leave free for smaller jobs until they starve; see
	// Args.SmallJobHeadroom.
	ArgSmallJobHeadroom = "paddle.smallJobHeadroom"
	// ArgHeadroomPredictedAbove: the headroom holds only gangs predicted
	// to run at least this long; see Args.HeadroomPredictedAbove.
	ArgHeadroomPredictedAbove = "paddle.smallJobHeadroom.predictedAbove"
)

// Args are the plugin's arguments after defaulting and validation.
type Args struct {
	// AffinityWeight scales the pserver/trainer locality score (0..100).
	AffinityWeight float64
	// PackingWeight scales the collective packing score (0..100).
	PackingWeight float64
	// GPUTopologyWeight scales the NVLink-island fit score (0..100).
	GPUTopologyWeight float64
	// GPUTopologyAllJobs scores island fit for every GPU pod, not only Paddle
	// pods: keeping islands whole helps every multi-GPU job.
	GPUTopologyAllJobs bool
	// GPUAssignmentsMaxAge is how old the GPU agent's report of which GPUs
	// pods hold may be; older (the agent stopped) and the GPUs are
	// predicted instead. The agent refreshes it every few minutes.
	GPUAssignmentsMaxAge time.Duration
	// RackLabel and SpineLabel are node label keys for the two network tiers
	// above a node, used when the cluster has no Volcano HyperNodes.
	RackLabel  string
	SpineLabel string
	// GangFitOrder puts gangs that fit now before gangs that do not.
	GangFitOrder bool
	// SmallGangsFirst: among waiting gangs the starvation guard covers
	// (both guarded, neither starving), the one that still needs fewer GPUs
	// goes first. Fewer GPUs are freed sooner and, in the Philly trace,
	// small jobs are also the short ones, so mean completion time drops;
	// the guard bounds how long a large gang can be passed over. Jobs the
	// guard does not cover keep Volcano's order, so they cannot starve.
	SmallGangsFirst bool
	// ShortestPredictedFirst: where SmallGangsFirst orders two gangs, the
	// one with the least predicted GPU-time (its GPUs x the run time its
	// queue's history predicts for jobs like it, history.go) goes first;
	// by GPUs when the history cannot predict both. Two Paddle gangs the
	// enqueue action has not admitted go in the same order
	// (admissionOrder). Helios' QSSF orders by the same prediction
	// (design.md section 6). On by default: the trace replay's tuning
	// windows chose it over fewest-GPUs-first by a rule written before
	// the sweep (docs/benchmarks.md).
	ShortestPredictedFirst bool
	// StarvationAfter is how long a gang may wait before it goes first and
	// reserves the nodes it will start on (reservation.go); 0 disables.
	StarvationAfter time.Duration
	// TaskNameFallback recognises Paddle roles from Volcano task names (ps,
	// pserver, worker, trainer, heter) when pods lack the job plugin's labels.
	TaskNameFallback bool
	// StarvationTaskNameJobs: jobs recognised only by task names take part
	// in the starvation guard (off: only jobs the job plugin labelled).
	StarvationTaskNameJobs bool
	// ShrinkElastic: a waiting guarded gang that does not fit on free
	// resources may take back the running pods of elastic jobs above their
	// minimum (the trainer task's minAvailable) through Volcano's preempt
	// (same queue) and reclaim (other queues) actions, and the starvation
	// guard counts those pods as releasable before it reserves. Needs the
	// preempt action in the scheduler configuration (reclaim for other
	// queues): without it nothing takes them back, so it is off by default.
	ShrinkElastic bool
	// PreemptCheckpointable: a starving guarded gang may stop, whole, the
	// jobs that opted in as checkpointable (the job plugin's
	// --checkpointable), the one with the most attained GPU time first,
	// within the guards of stopping.go (the job's restart cost and
	// restarts left, CheckpointMaxPreemptions). Needs the preempt (or
	// reclaim) action too; off by default.
	PreemptCheckpointable bool
	// CheckpointMaxPreemptions: a job is stopped only while it has
	// restarted fewer times than this (Volcano's retry count, failures
	// included), and never when its next restart would reach its
	// spec.maxRetry.
	CheckpointMaxPreemptions int
	// SmallJobHeadroom (0 to 0.5): a guarded gang that needs at least a
	// whole node's GPUs, has not yet waited StarvationAfter and is not
	// predicted to finish soon (HeadroomPredictedAbove) does not start
	// while starting it would leave less than this share of the cluster's
	// GPUs free (headroom.go). 0 turns it off; it needs
	// StarvationAfter, which bounds the wait.
	SmallJobHeadroom float64
	// HeadroomPredictedAbove: the headroom holds a gang only if the
	// queues' history predicts its median run time at least this long (a
	// gang the history says nothing of is held as before). A short gang
	// gives its GPUs back soon, so holding it costs it more than it saves
	// the smaller jobs behind it. 0 holds every whole-node gang.
	HeadroomPredictedAbove time.Duration
}

// DefaultStarvationAfter and DefaultSmallJobHeadroom were chosen together
// on the trace replay's tuning windows; docs/scheduler-plugin.md ("Choosing
// the threshold", "The small-job headroom") has the figures. The threshold
// must lie above the wait a queue's jobs usually see when nothing is wrong,
// or nearly every waiting job counts as starving and the order becomes
// first come, first served; it is also how long the headroom may hold a
// gang, so the two are chosen as a pair.
const (
	DefaultStarvationAfter  = 16 * time.Hour
	DefaultSmallJobHeadroom = 0.2
)

// DefaultHeadroomPredictedAbove was chosen on the trace replay's tuning
// windows by a rule written before its sweep (docs/benchmarks.md, "Rules
// written before their sweeps"): a gang predicted to finish within it
// gives its GPUs back before the small jobs it would delay wait long.
const DefaultHeadroomPredictedAbove = 4 * time.Hour

// DefaultArgs are used for every argument that is absent or invalid.
func DefaultArgs() Args {
	return Args{
		AffinityWeight:     10,
		PackingWeight:      10,
		GPUTopologyWeight:  10,
		GPUTopologyAllJobs: true,
		// Three of the agent's default heartbeats (5m).
		GPUAssignmentsMaxAge:   15 * time.Minute,
		RackLabel:              paddleapi.DefaultRackLabel,
		SpineLabel:             paddleapi.DefaultSpineLabel,
		GangFitOrder:           true,
		SmallGangsFirst:        true,
		ShortestPredictedFirst: true,
		StarvationAfter:        DefaultStarvationAfter,
		TaskNameFallback:       true,
		SmallJobHeadroom:       DefaultSmallJobHeadroom,
		HeadroomPredictedAbove: DefaultHeadroomPredictedAbove,

		CheckpointMaxPreemptions: DefaultCheckpointMaxPreemptions,
	}
}

// DefaultCheckpointMaxPreemptions is Volcano's default spec.maxRetry (3)
// less one: the most restarts a job with that default survives.
const DefaultCheckpointMaxPreemptions = 2

// maxHeadroom bounds paddle.smallJobHeadroom: keeping more than half the
// cluster from whole-node gangs would make them wait for their threshold
// nearly always.
const maxHeadroom = 0.5

// maxWeight keeps a typo (1e9) from drowning every other plugin.
const maxWeight = 1000

// ParseArgs reads the ConfigMap arguments. A bad value never stops the
// scheduler: it is reported in problems (logged by the caller) and replaced by
// its default. Unknown keys under "paddle." are reported too (likely typos).
func ParseArgs(raw framework.Arguments) (Args, []string) {
	a := DefaultArgs()
	r := &argReader{raw: raw, known: map[string]bool{}}
	for _, x := range arguments(&a) {
		x.read(r)
	}
	known, problems := r.known, r.problems
	// Volcano hands the plugin only its own arguments map, so every key in
	// it is meant for this plugin: one it does not know is a typo, most
	// often the key without its "paddle." prefix.
	unknown := make([]string, 0, len(raw))
	for k := range raw {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		if use, ok := removedArgs[k]; ok {
			problems = append(problems, fmt.Sprintf("%s: unknown argument, ignored: %s; %s", k, removedIn, use))
			continue
		}
		if known["paddle."+k] {
			problems = append(problems, fmt.Sprintf("%s: unknown argument, ignored; the key is %q (every key of this plugin starts with \"paddle.\")", k, "paddle."+k))
			continue
		}
		problems = append(problems, fmt.Sprintf("%s: unknown argument, ignored (known: %s)", k, strings.Join(knownKeys(), ", ")))
	}
	return a, problems
}

// removedIn says where the arguments of removedArgs went.
const removedIn = "removed with the variant it set, which its own benchmark sweep had rejected"

// removedArgs are the arguments of variants that were removed, each with
// what to use instead. A configuration that still names one gets the
// problem an unknown key gets, saying so: nothing it set exists any more,
// and the plugin does what the default did.
var removedArgs = map[string]string{
	"paddle.smallJobHeadroom.when": "the headroom holds whole-node gangs whenever starting one would leave less than " +
		ArgSmallJobHeadroom + " of the GPUs free (what the default, always, did); delete the key",
	"paddle.smallJobHeadroom.queuedAfter": "it served paddle.smallJobHeadroom.when: smallJobsQueued alone; delete the key",
	"paddle.smallJobHeadroom.patience": "a held gang starts when enough GPUs are free or once it has waited " +
		ArgStarvationAfter + " (what the default, 0, did); set " + ArgSmallJobHeadroom + " or " + ArgStarvationAfter + " lower to hold less; delete the key",
	"paddle.smallJobHeadroom.counts":      "the headroom counts free GPUs (what the default, freeGPUs, did); delete the key",
	"paddle.smallJobHeadroom.predicted":   "the headroom keeps " + ArgSmallJobHeadroom + " of the GPUs free (what the default, false, did); delete the key",
	"paddle.checkpointable.attainedAbove": "checkpointable jobs are stopped for starving gangs only (what the default, 0, did); delete the key",
	"paddle.starvationGuard": "a starving gang reserves the nodes it will start on, the default (reserve), and holdBack is gone; " +
		ArgStarvationAfter + ": 0 turns the guard off; delete the key",
}

// argReader remembers which keys ParseArgs knows and what it found wrong.
type argReader struct {
	raw      framework.Arguments
	known    map[string]bool
	problems []string
}

// readArg sets *dst to parse(value) when key is given. A value parse rejects
// is reported with parse's reason and *dst keeps its default.
func readArg[T any](r *argReader, key string, dst *T, parse func(v interface{}) (T, error)) {
	r.known[key] = true
	v, ok := r.raw[key]
	if !ok {
		return
	}
	x, err := parse(v)
	if err != nil {
		r.problems = append(r.problems, fmt.Sprintf("%s=%v: %s; using the default %v", key, v, err, *dst))
		return
	}
	*dst = x
}

// floatIn parses a number from lo to hi; outside says what the range is.
func floatIn(lo, hi float64, outside string) func(v interface{}) (float64, error) {
	return func(v interface{}) (float64, error) {
		f, err := toFloat(v)
		if err != nil {
			return 0, err
		}
		if f < lo || f > hi || math.IsNaN(f) {
			return 0, errors.New(outside)
		}
		return f, nil
	}
}

var (
	parseWeight   = floatIn(0, maxWeight, fmt.Sprintf("a weight must be between 0 and %d", maxWeight))
	parseHeadroom = floatIn(0, maxHeadroom, fmt.Sprintf("a share of the cluster's GPUs from 0 (off) to %g", maxHeadroom))
)

// parseLabelKey accepts a qualified label key, or "" to turn the level off.
func parseLabelKey(v interface{}) (string, error) {
	s, isString := v.(string)
	if !isString {
		return "", errors.New("must be a label key string")
	}
	if s == "" {
		return "", nil // explicitly off
	}
	if errs := validation.IsQualifiedName(s); len(errs) > 0 {
		return "", errors.New("not a valid label key: " + strings.Join(errs, "; "))
	}
	return s, nil
}

// durationAtLeast parses a duration of at least least; why says why a
// shorter one is rejected.
func durationAtLeast(least time.Duration, why string) func(v interface{}) (time.Duration, error) {
	return func(v interface{}) (time.Duration, error) {
		d, err := toDuration(v)
		if err != nil {
			return 0, err
		}
		if d < least {
			return 0, errors.New(why)
		}
		return d, nil
	}
}

// intAtLeast parses a whole number of at least least.
func intAtLeast(least int, why string) func(v interface{}) (int, error) {
	return func(v interface{}) (int, error) {
		f, err := toFloat(v)
		if err != nil {
			return 0, err
		}
		if f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
			return 0, errors.New("not a whole number")
		}
		if int(f) < least {
			return 0, errors.New(why)
		}
		return int(f), nil
	}
}

// argument is one key of the plugin's arguments and how ParseArgs reads it.
type argument struct {
	key  string
	read func(r *argReader)
}

func arg[T any](key string, dst *T, parse func(v interface{}) (T, error)) argument {
	return argument{key: key, read: func(r *argReader) { readArg(r, key, dst, parse) }}
}

// arguments lists every argument of the plugin, reading into a, in the order
// ParseArgs reads them and the unknown-key problem lists them: a new
// argument is added here alone.
func arguments(a *Args) []argument {
	return []argument{
		arg(ArgAffinityWeight, &a.AffinityWeight, parseWeight),
		arg(ArgPackingWeight, &a.PackingWeight, parseWeight),
		arg(ArgGPUTopoWeight, &a.GPUTopologyWeight, parseWeight),
		arg(ArgGPUTopoAllJobs, &a.GPUTopologyAllJobs, toBool),
		arg(ArgGPUAssignMaxAge, &a.GPUAssignmentsMaxAge, durationAtLeast(0, "must not be negative (0 always predicts)")),
		arg(ArgRackLabel, &a.RackLabel, parseLabelKey),
		arg(ArgSpineLabel, &a.SpineLabel, parseLabelKey),
		arg(ArgGangFitOrder, &a.GangFitOrder, toBool),
		arg(ArgSmallGangsFirst, &a.SmallGangsFirst, toBool),
		arg(ArgShortestPredictedFirst, &a.ShortestPredictedFirst, toBool),
		arg(ArgStarvationAfter, &a.StarvationAfter, durationAtLeast(0, "must not be negative (0 turns aging off)")),
		arg(ArgTaskNameFallback, &a.TaskNameFallback, toBool),
		arg(ArgStarvationTaskNameJobs, &a.StarvationTaskNameJobs, toBool),
		arg(ArgShrinkElastic, &a.ShrinkElastic, toBool),
		arg(ArgPreemptCheckpointable, &a.PreemptCheckpointable, toBool),
		arg(ArgCheckpointMaxPreemptions, &a.CheckpointMaxPreemptions, intAtLeast(1, "must be at least 1 (paddle.checkpointable.preempt: false stops none)")),
		arg(ArgSmallJobHeadroom, &a.SmallJobHeadroom, parseHeadroom),
		arg(ArgHeadroomPredictedAbove, &a.HeadroomPredictedAbove, durationAtLeast(0, "must not be negative (0 holds every whole-node gang)")),
	}
}

func knownKeys() []string {
	var keys []string
	for _, x := range arguments(&Args{}) {
		keys = append(keys, x.key)
	}
	return keys
}

// YAML gives ints, floats, bools or strings depending on how a value is
// written; accept each where it is unambiguous.
func toFloat(v interface{}) (float64, error) {
	switch x := v.(type) {
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case float64:
		return x, nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, fmt.Errorf("not a number")
		}
		return f, nil
	}
	return 0, fmt.Errorf("not a number")
}

func toBool(v interface{}) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(x))
		if err != nil {
			return false, fmt.Errorf("not true or false")
		}
		return b, nil
	}
	return false, fmt.Errorf("not true or false")
}

// toDuration accepts "30m"-style strings and plain numbers of seconds.
func toDuration(v interface{}) (time.Duration, error) {
	if s, ok := v.(string); ok {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return 0, fmt.Errorf("not a duration like 30m")
		}
		return d, nil
	}
	f, err := toFloat(v)
	if err != nil || math.IsNaN(f) {
		return 0, fmt.Errorf("not a duration like 30m")
	}
	// Past this a conversion to time.Duration overflows (a huge number
	// of seconds would come out negative).
	if math.Abs(f) > maxDurationSeconds {
		return 0, fmt.Errorf("too large: at most %s", time.Duration(math.MaxInt64).Round(time.Hour))
	}
	return time.Duration(f * float64(time.Second)), nil
}

// maxDurationSeconds is the longest time.Duration, in seconds.
const maxDurationSeconds = float64(math.MaxInt64) / float64(time.Second)

func (a Args) String() string {
	return fmt.Sprintf("affinity=%g packing=%g gpuTopology=%g (allJobs=%t, assignmentsMaxAge=%s) rackLabel=%q spineLabel=%q gangFitOrder=%t smallGangsFirst=%t shortestPredictedFirst=%t starvationAfter=%s taskNameFallback=%t starvationGuard.taskNameJobs=%t elastic.shrink=%t checkpointable.preempt=%t (maxPreemptions=%d) smallJobHeadroom=%g (predictedAbove=%s)",
		a.AffinityWeight, a.PackingWeight, a.GPUTopologyWeight, a.GPUTopologyAllJobs, a.GPUAssignmentsMaxAge, a.RackLabel, a.SpineLabel,
		a.GangFitOrder, a.SmallGangsFirst, a.ShortestPredictedFirst, a.StarvationAfter, a.TaskNameFallback, a.StarvationTaskNameJobs,
		a.ShrinkElastic, a.PreemptCheckpointable, a.CheckpointMaxPreemptions, a.SmallJobHeadroom, a.HeadroomPredictedAbove)
}

// ArgsIn parses the paddle plugin's arguments from scheduler tiers, with
// the problems ParseArgs found; ok is false when the tiers lack the plugin.
func ArgsIn(tiers []conf.Tier) (a Args, problems []string, ok bool) {
	for _, t := range tiers {
		for _, p := range t.Plugins {
			if p.Name == PluginName {
				a, problems = ParseArgs(framework.Arguments(p.Arguments))
				return a, problems, true
			}
		}
	}
	return DefaultArgs(), nil, false
}

// WithArgs returns scheduler tiers with the paddle plugin's arguments
// overridden by args (the tiers given are not changed): one configuration
// in several variants, for tests and benchmarks.
func WithArgs(tiers []conf.Tier, args map[string]interface{}) []conf.Tier {
	out := make([]conf.Tier, len(tiers))
	for i, t := range tiers {
		out[i].Plugins = append([]conf.PluginOption(nil), t.Plugins...)
		for k, p := range out[i].Plugins {
			if p.Name != PluginName {
				continue
			}
			merged := make(map[string]interface{}, len(p.Arguments)+len(args))
			for a, v := range p.Arguments {
				merged[a] = v
			}
			for a, v := range args {
				merged[a] = v
			}
			out[i].Plugins[k].Arguments = merged
		}
	}
	return out
}
