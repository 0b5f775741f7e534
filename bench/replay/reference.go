package replay

import (
	"cmp"
	"strconv"
	"sync"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
)

// The clairvoyant reference: an ordering no scheduler can deploy, because
// it knows every job's duration. It shows how much room job order leaves on
// a window: a configuration close to it has little left to gain from
// ordering, whatever it learns.
const (
	// Clairvoyant is the reference configuration's name.
	Clairvoyant = "reference-shortest-remaining"
	// clairvoyantPlugin orders jobs by the remaining GPU-time the replay
	// writes on their PodGroups (remainingAnnotation), least first.
	clairvoyantPlugin = "clairvoyant"
	// remainingAnnotation carries a job's remaining GPU-seconds, written by
	// the replay before every cycle for configurations that read it.
	remainingAnnotation = "bench.volcano-paddle.io/remaining-gpu-seconds"
)

// clairvoyantConf is stock-binpack's configuration with the clairvoyant
// order first in the first tier, ahead of priority: it decides the order
// of every pair of jobs with different remaining GPU-time; gang, drf and
// the others decide ties and placement as in stock-binpack. Its actions do
// not preempt: a running job keeps its GPUs (shortest remaining GPU-time
// first among waiting jobs, without preemption).
const clairvoyantConf = "actions: \"enqueue, allocate, backfill\"\ntiers:\n- plugins:\n  - name: " + clairvoyantPlugin + "\n" +
	"  - name: priority\n  - name: gang\n    enablePreemptable: false\n  - name: conformance\n" + stockTierTwoHead + binpackTier

// registerClairvoyant adds the plugin to Volcano's registry once per
// process (framework.RegisterPluginBuilder keeps builders by name).
var registerClairvoyant sync.Once

// ReferenceConfig is the clairvoyant reference configuration.
func ReferenceConfig() (Config, error) {
	registerClairvoyant.Do(func() {
		framework.RegisterPluginBuilder(clairvoyantPlugin, func(framework.Arguments) framework.Plugin { return clairvoyant{} })
	})
	cfg, err := simsched.ParseConfig(Clairvoyant, clairvoyantConf)
	if err != nil {
		return Config{}, err
	}
	return Config{Sched: cfg, Role: RoleReference, Remaining: true,
		Note: "not deployable: knows every job's duration; shortest remaining GPU-time first, no preemption, binpack placement"}, nil
}

// clairvoyant is the reference's job order.
type clairvoyant struct{}

func (clairvoyant) Name() string { return clairvoyantPlugin }

func (clairvoyant) OnSessionOpen(ssn *framework.Session) {
	ssn.AddJobOrderFn(clairvoyantPlugin, func(l, r interface{}) int {
		return cmp.Compare(remainingOf(l.(*api.JobInfo)), remainingOf(r.(*api.JobInfo)))
	})
}

func (clairvoyant) OnSessionClose(*framework.Session) {}

// remainingOf reads a job's remaining GPU-seconds; a job without the
// annotation (none in a replay) goes last.
func remainingOf(j *api.JobInfo) float64 {
	if j.PodGroup == nil {
		return inf
	}
	v, err := strconv.ParseFloat(j.PodGroup.Annotations[remainingAnnotation], 64)
	if err != nil {
		return inf
	}
	return v
}

const inf = 1e300
