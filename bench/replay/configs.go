package replay

import (
	"os"

	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	tasktopology "volcano.sh/volcano/pkg/scheduler/plugins/task-topology"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
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

// StockConfigs are Volcano's Helm default tiers and the tuned variants a
// careful operator can configure without our plugin. task-topology and
// hard network topology together are left out: in Volcano v1.14.1 the
// allocate action's HyperNode path replays a sub-job's statement
// (Statement.RecoverOperations) and task-topology's AllocateFunc then
// subtracts a bucket's request twice and panics
// (task-topology Bucket.CalcResReq: "resource is not sufficient").
func StockConfigs(stockConfPath string) ([]Config, error) {
	raw, err := os.ReadFile(stockConfPath)
	if err != nil {
		return nil, err
	}
	stock, err := simsched.ParseConfig(Stock, string(raw))
	if err != nil {
		return nil, err
	}
	out := []Config{{Sched: stock, Note: "Volcano's Helm chart default tiers"}}
	variants := []struct {
		name, plugins, note string
		taskTopo, hyper     bool
	}{
		{StockBinpack, binpackTier, "nodeorder spreading off, binpack on GPUs (weight 10)", false, false},
		{StockTaskTopo, binpackTier + taskTopologyPlugin, "binpack + task-topology (ps,worker and trainer affinity, ps first)", true, false},
		{StockHyperNode, binpackTier + hyperNodePlugin, "binpack + network-topology-aware, racks as HyperNodes, every job hard-limited to tier 2 (tries one rack first)", false, true},
	}
	for _, v := range variants {
		text := "actions: \"enqueue, allocate, backfill\"\ntiers:\n" + stockTierOne + stockTierTwoHead + v.plugins
		cfg, err := simsched.ParseConfig(v.name, text)
		if err != nil {
			return nil, err
		}
		c := Config{Sched: cfg, Note: v.note, RackHyperNodes: v.hyper}
		taskTopo, hyper := v.taskTopo, v.hyper
		c.Annotate = func(j quality.Job, pg *schedulingv1.PodGroup) {
			if taskTopo {
				annotateTaskTopology(j, pg)
			}
			if hyper {
				tier := simsched.RootTier
				pg.Spec.NetworkTopology = &schedulingv1.NetworkTopologySpec{Mode: schedulingv1.HardNetworkTopologyMode, HighestTierAllowed: &tier}
			}
		}
		if !taskTopo && !hyper {
			c.Annotate = nil
		}
		out = append(out, c)
	}
	return out, nil
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
	return Config{Sched: cfg, Note: "deploy/paddle/volcano-scheduler.conf: stock tiers + paddle"}, nil
}

// WithPaddleArgs is a paddle configuration with some plugin arguments
// changed (e.g. the starvation guard's mode), under another name.
func WithPaddleArgs(c Config, name, note string, args map[string]interface{}) Config {
	sc := &simsched.Config{Name: name, Confs: c.Sched.Confs, Tiers: paddle.WithArgs(c.Sched.Tiers, args)}
	return Config{Sched: sc, Note: note, Annotate: c.Annotate, RackHyperNodes: c.RackHyperNodes}
}
