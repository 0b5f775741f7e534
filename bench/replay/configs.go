package replay

import (
	"fmt"

	schedulingk8s "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/framework"
	tasktopology "volcano.sh/volcano/pkg/scheduler/plugins/task-topology"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
)

// Names of the configurations the reports single out (bench/catalogue
// defines them all): Volcano's Helm default, paddle and the lower bound.
const (
	Stock      = "stock"
	Paddle     = "paddle"
	LowerBound = "lower-bound"
)

// ConfigOf is the replay's configuration of a catalogue entry built
// (catalogue.Catalogue.Build): its scheduler file, and what the replay
// does for it besides (PriorityClasses, queues, PodGroup annotations,
// HyperNodes, the clairvoyant order's remaining GPU-time).
func ConfigOf(c catalogue.Configuration) Config {
	out := Config{Sched: c.Sched, Note: c.Note, Role: Role(c.Role), Queues: c.Queues, RackHyperNodes: c.HyperNodes, Remaining: c.Remaining}
	if c.PriorityClasses {
		out.PriorityClasses = GPUPriorityClasses()
	}
	if c.Remaining {
		registerClairvoyant.Do(func() {
			framework.RegisterPluginBuilder(clairvoyantPlugin, func(framework.Arguments) framework.Plugin { return clairvoyant{} })
		})
	}
	if c.TaskTopology || c.HyperNodes || c.PriorityClasses {
		taskTopo, hyper, priority := c.TaskTopology, c.HyperNodes, c.PriorityClasses
		out.Annotate = func(j quality.Job, pg *schedulingv1.PodGroup) {
			if taskTopo {
				annotateTaskTopology(j, pg)
			}
			if hyper {
				tier := simsched.RootTier
				pg.Spec.NetworkTopology = &schedulingv1.NetworkTopologySpec{Mode: schedulingv1.HardNetworkTopologyMode, HighestTierAllowed: &tier}
			}
			if priority {
				pg.Spec.PriorityClassName = GPUPriorityClassName(j.GPUs)
			}
		}
	}
	return out
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
