package paddle

import (
	"fmt"
	"math"
	"time"

	"volcano.sh/volcano/pkg/scheduler/api"
)

// This file is the headroom (Args.SmallJobHeadroom): whole-node gangs leave
// a share of the cluster's GPUs free for smaller jobs until they starve.
//
// Why: on the trace replay's saturated windows, Volcano's default
// spreading (nodeorder's least-requested) rarely leaves a node with all its
// GPUs free, so whole-node gangs wait while the many small jobs behind them
// start; packing (paddle, binpack) starts such a gang as soon as it fits,
// and it then holds its GPUs for hours while small jobs that arrive later
// queue. Spreading's hold-back is an accident of placement, and unbounded;
// the headroom makes it a rule with a bound: the starvation threshold ends
// it for each gang.
// It needs no run times, only that small jobs keep arriving. The job gate
// asks it for each waiting gang (ordering.go: headroomHolds).

// Reasons this plugin gives when the headroom holds a gang.
const ReasonHeldForHeadroom = "PaddleHeldForSmallJobHeadroom"

// clusterGPUs is the session's GPU count, computed once, on the first
// question (Volcano's allocate action asks every job's JobValidFn before
// it places any pod, so all gangs of one session are judged against the
// same free count; the next session sees what they took).
type clusterGPUs struct {
	total, free int
	// elastic are the GPUs elastic jobs hold above their minimum that a
	// waiting gang may take back (ShrinkElastic): growth puts idle GPUs
	// there, so for the headroom they are free. Counted otherwise, a held
	// gang would stop fitting once an elastic job grew into the headroom,
	// shrink it, fit again and be held again, every session.
	elastic int
	// wholeNode is the most GPUs any node has: a gang needing at least
	// that many can only start where a whole node is free.
	wholeNode int
}

func countGPUs(nodes []*api.NodeInfo) clusterGPUs {
	var c clusterGPUs
	for _, n := range nodes {
		a := gpusOf(n.Allocatable)
		c.total += a
		c.free += gpusOf(n.Idle)
		c.wholeNode = max(c.wholeNode, a)
	}
	return c
}

// headroomPolicy is what the arguments say about the headroom.
type headroomPolicy struct {
	share float64 // SmallJobHeadroom; 0 turns it off
	// after is the starvation threshold (starvationPolicy.after), which
	// ends every hold.
	after time.Duration
	// predictedAbove (HeadroomPredictedAbove): only gangs predicted to
	// run at least this long are held; 0 holds every one.
	predictedAbove time.Duration
}

// on: a share is set and the starvation threshold, which bounds the wait,
// is too (without it the headroom would hold a gang for as long as small
// jobs keep coming).
func (h headroomPolicy) on() bool { return h.share > 0 && h.after > 0 }

// holds: a gang that still needs gpus GPUs (at least a whole node's) would
// leave fewer free than the headroom keeps, and would not on an idle
// cluster. The caller has already checked
// that the gang waits, is guarded and does not starve.
func (h headroomPolicy) holds(c clusterGPUs, gpus int) bool {
	if !h.on() || c.wholeNode == 0 || gpus < c.wholeNode {
		return false
	}
	// A gang that would break the headroom even on an idle cluster (one
	// 8-GPU node, an 8-GPU job) could only wait out its threshold: the
	// headroom is for gangs that can start beside small jobs.
	if c.total-gpus < h.keep(c) {
		return false
	}
	return c.free+c.elastic-gpus < h.keep(c)
}

// shortEnoughToGo: the history predicts the gang's median run time below
// predictedAbove. Such a gang gives its GPUs back soon, so the small jobs
// that arrive while it runs wait little; held, it would wait up to the
// starvation threshold itself. Without a prediction it is held as before.
func (h headroomPolicy) shortEnoughToGo(median time.Duration, predicted bool) bool {
	return h.predictedAbove > 0 && predicted && median < h.predictedAbove
}

// keep is how many GPUs the headroom keeps free for smaller jobs, rounded
// up.
func (h headroomPolicy) keep(c clusterGPUs) int {
	return int(math.Ceil(h.share * float64(c.total)))
}

// message says why the gang waits and until when. It names the time the
// bound ends the hold, not how long the gang has waited, so that it stays
// the same from one session to the next and the PodGroup's condition is
// written only when the counts change (holds.go).
func (h headroomPolicy) message(job *api.JobInfo, c clusterGPUs, gpus int, since time.Time, median time.Duration, predicted bool) string {
	var elastic, long string
	if c.elastic > 0 {
		elastic = fmt.Sprintf(" (counting the %d that elastic jobs hold above their minimum)", c.elastic)
	}
	switch {
	case h.predictedAbove > 0 && predicted:
		long = fmt.Sprintf(", and its queue's history predicts it runs %s (median), at least %s (%s)", median.Round(time.Minute), h.predictedAbove, ArgHeadroomPredictedAbove)
	case h.predictedAbove > 0:
		long = fmt.Sprintf(" (its queue's history has no run time to predict it from, so %s does not let it go)", ArgHeadroomPredictedAbove)
	}
	return fmt.Sprintf("paddle: gang %s needs %d GPUs; starting it now would leave %d of the cluster's %d GPUs free%s, fewer than the %d (%s %g) kept for smaller jobs%s; it starts when more are free, or at %s once it has waited %s (%s)",
		gangName(job), gpus, max(0, c.free+c.elastic-gpus), c.total, elastic, h.keep(c), ArgSmallJobHeadroom, h.share, long, since.Add(h.after).UTC().Format(time.RFC3339), h.after, ArgStarvationAfter)
}
