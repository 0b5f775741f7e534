package replay

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	schedulingk8s "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	tasktopology "volcano.sh/volcano/pkg/scheduler/plugins/task-topology"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

// Names of the configurations a replay compares.
const (
	Stock            = "stock"
	StockBinpack     = "stock-binpack"
	StockTaskTopo    = "stock-binpack-tasktopology"
	StockHyperNode   = "stock-binpack-hypernode"
	Paddle           = "paddle"
	LowerBound       = "lower-bound"
	stockTierOne     = "- plugins:\n  - name: priority\n  - name: gang\n    enablePreemptable: false\n  - name: conformance\n"
	stockTierTwoHead = "- plugins:\n  - name: overcommit\n  - name: drf\n    enablePreemptable: false\n  - name: predicates\n  - name: proportion\n"
)

// binpackTier is the best a Volcano operator can do for GPU jobs with
// stock plugins: nodeorder's spreading scores off (leastrequested and
// balancedresource, Volcano pkg/scheduler/plugins/nodeorder), binpack on
// GPUs with a high weight (pkg/scheduler/plugins/binpack), so jobs fill
// partly used nodes and leave whole nodes to multi-GPU gangs.
const binpackTier = `  - name: nodeorder
    arguments:
      leastrequested.weight: 0
      balancedresource.weight: 0
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 1
      binpack.memory: 1
      binpack.resources: nvidia.com/gpu
      binpack.resources.nvidia.com/gpu: 10
`

// taskTopologyPlugin is Volcano's task-topology plugin
// (pkg/scheduler/plugins/task-topology): with the PodGroup annotations
// Annotate sets, it orders pservers before workers and scores nodes that
// hold affine tasks of the job.
const taskTopologyPlugin = `  - name: task-topology
    arguments:
      task-topology.weight: 10
`

// hyperNodePlugin is Volcano's network-topology-aware plugin
// (pkg/scheduler/plugins/network-topology-aware) with the racks as tier-1
// HyperNodes: a job whose PodGroup asks for a network topology is placed
// in the lowest tier that holds it whole (the allocate action's HyperNode
// gradient, pkg/scheduler/actions/allocate), GPU-binpacked within it.
const hyperNodePlugin = `  - name: network-topology-aware
    arguments:
      weight: 10
      hypernode.binpack.resources: nvidia.com/gpu
      hypernode.binpack.resources.nvidia.com/gpu: 10
`

// Job-ordering levers of stock Volcano, replayed as an operator would set
// them: the sla plugin and PriorityClasses ordered by the priority plugin.
const (
	StockSLA                 = "stock-sla"
	StockPriority            = "stock-priority"
	StockTaskTopoSLA         = StockTaskTopo + "-sla"
	StockTaskTopoPriority    = StockTaskTopo + "-priority"
	StockTaskTopoSLAPriority = StockTaskTopo + "-sla-priority"
)

// DefaultSLAWait is the sla plugin's sla-waiting-time the stock-*sla*
// configurations use: the lowest mean JCT (mean of the per-window ratios
// to the sweep's best, over the Helm tiers and binpack + task-topology) of
// the sweep 30m to 8h on the tuning windows (docs/bench/sla-sweep:
// 1h 1.027x, 2h 1.027x, 30m 1.030x, 4h 1.032x, 8h 1.039x; within the runs'
// spread, so the choice matters little).
const DefaultSLAWait = time.Hour

// SLAWaits are the sla-waiting-time values the sweep replays.
var SLAWaits = []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour}

// stockVariant is one stock configuration: which tuned plugins it adds to
// Volcano's default tiers and which job-ordering levers it uses.
type stockVariant struct {
	name, note string
	binpack    bool
	taskTopo   bool
	hyper      bool
	// slaWait > 0 adds the sla plugin with this sla-waiting-time.
	slaWait time.Duration
	// priority gives every job the PriorityClass of its GPU count
	// (GPUPriorityClasses).
	priority bool
	// queues: one queue per virtual cluster, weighted by its share of the
	// trace before the window (Workload.Queues), and reclaim after
	// allocate.
	queues bool
	// gangAware: Volcano v1.15's gang-aware actions instead: gangpreempt
	// (with priority) and gangreclaim (with queues).
	gangAware bool
}

// StockConfigs are Volcano's Helm default tiers and the tuned variants a
// careful operator can configure without our plugin, with the sla plugin
// at slaWait and PriorityClasses per GPU count. task-topology and hard
// network topology together are left out: in Volcano v1.14.1 the allocate
// action's HyperNode path replays a sub-job's statement
// (Statement.RecoverOperations) and task-topology's AllocateFunc then
// subtracts a bucket's request twice and panics
// (task-topology Bucket.CalcResReq: "resource is not sufficient").
func StockConfigs(stockConfPath string, slaWait time.Duration) ([]Config, error) {
	sla := fmt.Sprintf("sla plugin, sla-waiting-time %s (a job waiting longer is ordered and pipelined first)", DurationArg(slaWait))
	prio := "a PriorityClass per GPU count, fewer GPUs higher (priority plugin)"
	return stockVariants(stockConfPath, append([]stockVariant{
		{name: Stock, note: "Volcano's Helm chart default tiers"},
		{name: StockBinpack, note: "nodeorder spreading off, binpack on GPUs (weight 10)", binpack: true},
		{name: StockTaskTopo, note: "binpack + task-topology (ps,worker and trainer affinity, ps first)", binpack: true, taskTopo: true},
		{name: StockHyperNode, note: "binpack + network-topology-aware, racks as HyperNodes, every job hard-limited to tier 2 (tries one rack first)", binpack: true, hyper: true},
		{name: StockSLA, note: "Helm default tiers + " + sla, slaWait: slaWait},
		{name: StockPriority, note: "Helm default tiers + " + prio, priority: true},
		{name: StockTaskTopoSLA, note: "binpack + task-topology + " + sla, binpack: true, taskTopo: true, slaWait: slaWait},
		{name: StockTaskTopoPriority, note: "binpack + task-topology + " + prio, binpack: true, taskTopo: true, priority: true},
		{name: StockTaskTopoSLAPriority, note: "binpack + task-topology + " + sla + " + " + prio, binpack: true, taskTopo: true, slaWait: slaWait, priority: true},
		{name: StockQueues, note: "Helm default tiers + " + queueNote, queues: true},
		{name: StockBinpackQueues, note: "binpack + " + queueNote, binpack: true, queues: true},
	}, gangAwareVariants()...))
}

// gangAwareVariants are the stock levers with Volcano v1.15's gang-aware
// actions (actions/gangpreempt, actions/gangreclaim: whole gangs as
// victims, never at equal priority, reclaim only across queues), where the
// build has them: none in a v1.14.1 build.
func gangAwareVariants() []stockVariant {
	if _, ok := framework.GetAction(gangPreemptAction); !ok {
		return nil
	}
	return []stockVariant{
		{name: StockPriority + "-gangpreempt", note: "Helm default tiers + a PriorityClass per GPU count + the gangpreempt action", priority: true, gangAware: true},
		{name: StockQueues + "-gangreclaim", note: "Helm default tiers + " + queueNote + " (gangreclaim instead of reclaim)", queues: true, gangAware: true},
	}
}

// Volcano v1.15's gang-aware eviction actions.
const (
	gangPreemptAction = "gangpreempt"
	gangReclaimAction = "gangreclaim"
)

// WithGangAware is a configuration with Volcano v1.15's gang-aware actions
// in place of preempt and reclaim, under another name (paddle answers
// them through its UnifiedEvictableFn); false where the build lacks them.
func WithGangAware(c Config, name string) (Config, bool) {
	if _, ok := framework.GetAction(gangPreemptAction); !ok {
		return c, false
	}
	sc := *c.Sched
	sc.Name, sc.Actions = name, nil
	for _, a := range c.Sched.Actions {
		switch a {
		case "preempt":
			a = gangPreemptAction
		case "reclaim":
			a = gangReclaimAction
		}
		sc.Actions = append(sc.Actions, a)
	}
	c.Sched = &sc
	c.Note += "; gangpreempt and gangreclaim in place of preempt and reclaim"
	return c, true
}

// Queue-share levers: each virtual cluster of the trace is a queue whose
// weight is its share of the GPU-time submitted in the 30 days before the
// window; the proportion plugin (in every stock tier set) gives a queue
// its weight's share of the cluster (deserved) while others demand it,
// and the reclaim action takes back from a queue above it.
const (
	StockQueues        = "stock-queues"
	StockBinpackQueues = "stock-binpack-queues"
	queueNote          = "a queue per virtual cluster, weight = its share of the trace's 30 days before the window (proportion's deserved), reclaim action"
)

// FlexStockConfigs are the stock configurations for the Flex workload:
// StockConfigs without task-topology, which panics once a job runs with
// some of its pods, and with the ordering levers on binpack alone instead
// (stock-binpack-sla, -priority, -sla-priority). In Volcano v1.14.1 its
// node order panicked (task-topology calcBucketScore: Resource.Sub
// "resource is not sufficient"); in v1.15.1 the preempt action's
// Statement.Pipeline still panics in its AllocateFunc (JobManager.TaskBound,
// Bucket.CalcResReq: Resource.Sub "resource is not sufficient"), checked
// with the elastic and checkpoint workload on the tuning windows.
func FlexStockConfigs(stockConfPath string, slaWait time.Duration) ([]Config, error) {
	all, err := StockConfigs(stockConfPath, slaWait)
	if err != nil {
		return nil, err
	}
	var out []Config
	for _, c := range all {
		if !strings.HasPrefix(c.Name(), StockTaskTopo) {
			out = append(out, c)
		}
	}
	sla := fmt.Sprintf("sla plugin, sla-waiting-time %s", DurationArg(slaWait))
	prio := "a PriorityClass per GPU count, fewer GPUs higher (priority plugin)"
	more, err := stockVariants(stockConfPath, []stockVariant{
		{name: StockBinpack + "-sla", note: "binpack + " + sla, binpack: true, slaWait: slaWait},
		{name: StockBinpack + "-priority", note: "binpack + " + prio, binpack: true, priority: true},
		{name: StockBinpack + "-sla-priority", note: "binpack + " + sla + " + " + prio, binpack: true, slaWait: slaWait, priority: true},
	})
	return append(out, more...), err
}

// SLASweepConfigs are stock-sla and stock-binpack-tasktopology-sla at each
// waiting time, named with it (stock-sla-2h): the sweep that chooses
// DefaultSLAWait on the tuning windows.
func SLASweepConfigs(stockConfPath string, waits []time.Duration) ([]Config, error) {
	var vs []stockVariant
	for _, w := range waits {
		note := "sla-waiting-time " + DurationArg(w)
		vs = append(vs, stockVariant{name: StockSLA + "-" + DurationArg(w), note: "Helm default tiers + " + note, slaWait: w},
			stockVariant{name: StockTaskTopoSLA + "-" + DurationArg(w), note: "binpack + task-topology + " + note, binpack: true, taskTopo: true, slaWait: w})
	}
	return stockVariants(stockConfPath, vs)
}

// DurationArg writes d as an operator would in a configuration (2h, 30m).
func DurationArg(d time.Duration) string {
	s := d.String() // 2h0m0s, 30m0s, 1h30m0s
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func stockVariants(stockConfPath string, vs []stockVariant) ([]Config, error) {
	raw, err := os.ReadFile(stockConfPath)
	if err != nil {
		return nil, err
	}
	var out []Config
	for _, v := range vs {
		text := string(raw)
		if v.binpack {
			plugins := binpackTier
			if v.taskTopo {
				plugins += taskTopologyPlugin
			}
			if v.hyper {
				plugins += hyperNodePlugin
			}
			text = "actions: \"enqueue, allocate, backfill\"\ntiers:\n" + stockTierOne + stockTierTwoHead + plugins
		}
		switch {
		case v.gangAware && v.queues:
			text, err = withAction(text, gangReclaimAction)
		case v.gangAware:
			text, err = withAction(text, gangPreemptAction)
		case v.queues:
			text, err = withAction(text, "reclaim")
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.name, err)
		}
		if v.slaWait > 0 {
			if text, err = withSLA(text, v.slaWait); err != nil {
				return nil, fmt.Errorf("%s: %w", v.name, err)
			}
		}
		cfg, err := simsched.ParseConfig(v.name, text)
		if err != nil {
			return nil, err
		}
		c := Config{Sched: cfg, Note: v.note, RackHyperNodes: v.hyper, Role: RoleStock, Queues: v.queues}
		if v.priority {
			c.PriorityClasses = GPUPriorityClasses()
		}
		if v.taskTopo || v.hyper || v.priority {
			v := v
			c.Annotate = func(j quality.Job, pg *schedulingv1.PodGroup) {
				if v.taskTopo {
					annotateTaskTopology(j, pg)
				}
				if v.hyper {
					tier := simsched.RootTier
					pg.Spec.NetworkTopology = &schedulingv1.NetworkTopologySpec{Mode: schedulingv1.HardNetworkTopologyMode, HighestTierAllowed: &tier}
				}
				if v.priority {
					pg.Spec.PriorityClassName = GPUPriorityClassName(j.GPUs)
				}
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// withAction adds an action after allocate to a configuration's actions
// (where it is absent).
func withAction(text, action string) (string, error) {
	const anchor = "allocate, "
	if strings.Contains(text, action+",") || strings.Contains(text, action+"\"") {
		return text, nil
	}
	if !strings.Contains(text, anchor) {
		return "", fmt.Errorf("no allocate action to put %s after", action)
	}
	return strings.Replace(text, anchor, anchor+action+", ", 1), nil
}

// WithQueues is a configuration that sends each job to its virtual
// cluster's queue (Workload.Queues), under another name: paddle with the
// same queues as the stock queue levers. Its file's actions are kept
// (deploy/paddle already reclaims).
func WithQueues(c Config, name string) Config {
	sc := *c.Sched
	sc.Name = name
	c.Sched, c.Queues = &sc, true
	c.Note += "; " + queueNote
	return c
}

// WithPriorityClasses is a configuration whose jobs carry the PriorityClass
// of their GPU count (GPUPriorityClasses), as the stock-priority levers'
// do, under another name: paddle with the same priorities as stock.
func WithPriorityClasses(c Config, name string) Config {
	sc := *c.Sched
	sc.Name = name
	c.Sched, c.PriorityClasses = &sc, GPUPriorityClasses()
	annotate := c.Annotate
	c.Annotate = func(j quality.Job, pg *schedulingv1.PodGroup) {
		if annotate != nil {
			annotate(j, pg)
		}
		pg.Spec.PriorityClassName = GPUPriorityClassName(j.GPUs)
	}
	c.Note += "; a PriorityClass per GPU count, fewer GPUs higher"
	return c
}

// withSLA adds Volcano's sla plugin to the first tier of a scheduler
// configuration, after priority and gang, where Volcano's sla design places
// it (docs/design/sla-plugin.md): its job order then decides among jobs of
// equal priority and gang readiness, before drf's share in tier two.
func withSLA(text string, wait time.Duration) (string, error) {
	const anchor = "  - name: conformance\n"
	if !strings.Contains(text, anchor) {
		return "", fmt.Errorf("no conformance plugin in the first tier to put sla before")
	}
	sla := "  - name: sla\n    arguments:\n      sla-waiting-time: " + DurationArg(wait) + "\n" + anchor
	return strings.Replace(text, anchor, sla, 1), nil
}

// gpuPriorityBuckets: a PriorityClass covers GPU counts up to a power of
// two (1, 2, 4, ... 1024); larger jobs share the last one.
const gpuPriorityBuckets = 11

// GPUPriorityClassName is the PriorityClass of a job of gpus GPUs: the
// smallest bucket (gpus-le-1, gpus-le-2, gpus-le-4, ...) that holds it.
func GPUPriorityClassName(gpus int) string {
	k := 0
	for k < gpuPriorityBuckets-1 && 1<<k < gpus {
		k++
	}
	return fmt.Sprintf("gpus-le-%d", 1<<k)
}

// GPUPriorityClasses are the classes an operator creates to run smaller
// gangs first with the priority plugin: higher value for fewer GPUs.
// None is the global default (jobs without a class keep priority 0).
func GPUPriorityClasses() []*schedulingk8s.PriorityClass {
	var out []*schedulingk8s.PriorityClass
	for k := 0; k < gpuPriorityBuckets; k++ {
		out = append(out, &schedulingk8s.PriorityClass{
			ObjectMeta:  metav1.ObjectMeta{Name: fmt.Sprintf("gpus-le-%d", 1<<k)},
			Value:       int32(1000 * (gpuPriorityBuckets - k)),
			Description: fmt.Sprintf("jobs of up to %d GPUs", 1<<k),
		})
	}
	return out
}

// annotateTaskTopology writes what task-topology reads from a PodGroup
// (readTopologyFromPgAnnotations): PS jobs keep workers with their
// pservers and place pservers first; collective trainers keep together.
func annotateTaskTopology(j quality.Job, pg *schedulingv1.PodGroup) {
	if pg.Annotations == nil {
		pg.Annotations = map[string]string{}
	}
	if j.PS {
		pg.Annotations[tasktopology.JobAffinityAnnotations] = "ps,worker"
		pg.Annotations[tasktopology.TaskOrderAnnotations] = "ps,worker"
		return
	}
	pg.Annotations[tasktopology.JobAffinityAnnotations] = "trainer"
}

// PaddleConfig is deploy/paddle's configuration.
func PaddleConfig(path string) (Config, error) {
	cfg, err := simsched.LoadConfig(Paddle, path)
	if err != nil {
		return Config{}, err
	}
	return Config{Sched: cfg, Note: "deploy/paddle/volcano-scheduler.conf: stock tiers + paddle", Role: RolePaddle}, nil
}

// DeployedPaddleConfig is PaddleConfig of deploy/paddle's file
// (localcluster.DeploySchedulerConf).
func DeployedPaddleConfig() (Config, error) {
	path, err := localcluster.DeploySchedulerConf()
	if err != nil {
		return Config{}, err
	}
	return PaddleConfig(path)
}

// WithPaddleArgs is a paddle configuration with some plugin arguments
// changed (e.g. the starvation guard's mode), under another name.
func WithPaddleArgs(c Config, name, note string, args map[string]interface{}) Config {
	sc := *c.Sched
	sc.Name, sc.Tiers = name, paddle.WithArgs(c.Sched.Tiers, args)
	c.Sched, c.Note = &sc, note
	return c
}

// flexActions are the actions a configuration needs on the Flex workload
// besides its file's: preempt (a waiting job of higher priority evicts
// preemptable pods of its queue) and reclaim (across queues), right after
// allocate where the file does not run them.
var flexActions = []string{"preempt", "reclaim"}

// ForFlex is a configuration as it must be to use elastic and
// checkpointable jobs: its file's actions with preempt and reclaim (after
// allocate, where absent), and gang's enablePreemptable on, so that gang
// offers pods above a job's minAvailable as victims (gang's preemptableFn
// never takes a job below it). Stock and paddle get the same actions. A
// configuration whose file already runs preempt or reclaim (deploy/paddle
// with paddle's levers) chose its victim plugins itself and keeps its
// tiers as they are.
func ForFlex(c Config) Config {
	file := c.Sched
	sc := *file
	sc.Actions, sc.Evicts = withFlexActions(file.Actions), true
	c.Sched = &sc
	if file.Evicts {
		c.Note += "; preempt and reclaim actions, victims as its configuration chooses them"
		return c
	}
	on := true
	sc.Tiers = nil
	for _, t := range file.Tiers {
		nt := conf.Tier{Plugins: append([]conf.PluginOption(nil), t.Plugins...)}
		for k := range nt.Plugins {
			if nt.Plugins[k].Name == "gang" {
				nt.Plugins[k].EnabledPreemptable = &on
			}
		}
		sc.Tiers = append(sc.Tiers, nt)
	}
	c.Note += "; preempt and reclaim actions, gang enablePreemptable"
	return c
}

// withFlexActions inserts the flex actions a file lacks after its allocate
// (at the end when it has none).
func withFlexActions(actions []string) []string {
	var missing []string
	for _, a := range flexActions {
		if !slices.Contains(actions, a) {
			missing = append(missing, a)
		}
	}
	k := slices.Index(actions, "allocate") + 1
	if k == 0 {
		k = len(actions)
	}
	return slices.Insert(slices.Clone(actions), k, missing...)
}
