package replay

import (
	"cmp"
	"strconv"
	"sync"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// The clairvoyant reference: an ordering no scheduler can deploy, because
// it knows every job's duration. It shows how much room job order leaves on
// a window: a configuration close to it has little left to gain from
// ordering, whatever it learns.
const (
	// Clairvoyant is the reference configuration's name.
	Clairvoyant = "reference-shortest-remaining"
	// clairvoyantPlugin orders jobs by the remaining GPU-time the replay
	// writes on their PodGroups (remainingAnnotation), least first; the
	// reference's file names it (bench/catalogue/conf/clairvoyant.conf).
	clairvoyantPlugin = "clairvoyant"
	// remainingAnnotation carries a job's remaining GPU-seconds, written by
	// the replay before every cycle for configurations that read it.
	remainingAnnotation = "bench.volcano-paddle.io/remaining-gpu-seconds"
)

// registerClairvoyant adds the plugin to Volcano's registry once per
// process (framework.RegisterPluginBuilder keeps builders by name), when
// a configuration first needs it (ConfigOf).
var registerClairvoyant sync.Once

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
