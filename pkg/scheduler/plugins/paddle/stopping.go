package paddle

import (
	"time"

	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// This file is when a waiting gang may stop a job that opted in as
// checkpointable (the checkpoint lever of victims.go), with guards against
// thrashing:
//
//   - Who may stop: a starving gang (paddle.starvationAfter). Stopping by
//     attained service for gangs that have not starved yet
//     (paddle.checkpointable.attainedAbove, Tiresias' two LAS queues) was
//     tried and removed: its rule on the trace replay's tuning windows was
//     not met (docs/benchmarks.md, docs/bench/las-sweep).
//   - What it costs: the job's restart cost (its --restart-cost,
//     paddleapi.RestartCostAnnotation, or paddleapi.DefaultRestartCost),
//     the run time one stop throws away. A job that has run less than that
//     since it started is not stopped (it would lose all it did), and a
//     gang that has waited less than that stops nobody (its wait would
//     cost less than the stop).
//   - How often: a job is stopped only while Volcano's retry count is
//     below paddle.checkpointable.maxPreemptions and its next restart
//     stays below its spec.maxRetry (paddleapi.RestartsLeft), at which
//     Volcano fails a restarting job (controllers/job/state/restarting.go:
//     restartingUpdateStatus). Failures count too: the count is Volcano's.
//
// The job's own guards (how often, and not before it ran its restart
// cost) hold for every action and plugin, not only paddle's levers: at
// session open keepStopGuards reads every checkpointable job's stop cost,
// once for the session, and marks the pods of a job they protect not
// preemptable,
// which Volcano's preempt, reclaim, gangPreempt and gangReclaim actions
// check before they ask any plugin, as keepElasticMinimum does for an
// elastic job's minimum. Any eviction of a checkpointable job's pod
// restarts it whole (the job plugin's PodEvicted -> RestartJob), so a
// higher-priority job's preemption would otherwise fail a job out of
// restarts.

// stopCost is what stopping a job costs it, and how often it still may
// be stopped, read from its pods.
type stopCost struct {
	// restartCost is the run time a stop throws away.
	restartCost time.Duration
	// restartsLeft: how many more stops the job may take.
	restartsLeft int
	// ranFor is how long the job has run since it last (re)started: since
	// its last running pod started, when its world formed.
	ranFor time.Duration
}

// stopCostOf reads a job's stop cost at now from the pods of its newest
// incarnation (the highest retry count: pods of an older one may still be
// terminating).
func stopCostOf(job *api.JobInfo, maxPreemptions int, now time.Time) stopCost {
	var newest map[string]string
	retries := -1
	var lastStart time.Time
	for _, t := range job.Tasks {
		if t.Pod == nil {
			continue
		}
		if n := paddleapi.RetryCountOf(t.Pod.Annotations); n > retries {
			newest, retries = t.Pod.Annotations, n
		}
		if api.PreemptableStatus(t.Status) {
			if st := taskStart(t, now); st.After(lastStart) {
				lastStart = st
			}
		}
	}
	c := stopCost{restartCost: paddleapi.RestartCostOf(newest), restartsLeft: max(0, maxPreemptions-max(retries, 0))}
	if left, ok := paddleapi.RestartsLeft(newest); ok {
		c.restartsLeft = min(c.restartsLeft, left)
	}
	if !lastStart.IsZero() {
		c.ranFor = now.Sub(lastStart)
	}
	return c
}

// keepStopGuards reads each checkpointable job's stop cost for the
// session (stopCosts) and marks every running pod of a job its guards
// protect (stopCost.protected) as not preemptable, so that no action or
// plugin stops it.
func (s *session) keepStopGuards() {
	now := s.now()
	for id, job := range s.ssn.Jobs {
		if !checkpointable(job) {
			continue
		}
		c := stopCostOf(job, s.args.CheckpointMaxPreemptions, now)
		s.stopCosts[id] = c
		if !c.protected() {
			continue
		}
		for _, t := range job.Tasks {
			if t.Preemptable && api.PreemptableStatus(t.Status) {
				keepTask(s.ssn, t)
			}
		}
	}
}

// protected: the job's own guards forbid stopping it now, whoever asks.
func (c stopCost) protected() bool {
	return c.restartsLeft <= 0 || c.ranFor < c.restartCost
}

// mayStop: a starving gang that has waited waited may stop a job that
// costs c.
func mayStop(waited time.Duration, c stopCost) bool {
	return !c.protected() && waited >= c.restartCost
}

// restartable is which jobs gang may take pods from when that restarts
// them: an eviction restarts a checkpointable job whole (PodEvicted ->
// RestartJob), so shrinking an elastic job that is also checkpointable is
// a stop and takes the stop's guards, starving or not: a gang that has
// waited less than the job's restart cost takes nothing from it. Jobs
// that are not checkpointable shrink without restarting.
func (s *session) restartable(gang *api.JobInfo) func(*api.JobInfo) bool {
	waited := s.now().Sub(s.waitingSince(gang))
	return func(job *api.JobInfo) bool {
		c, ok := s.stopCosts[job.UID]
		return !ok || mayStop(waited, c)
	}
}

// stoppable is which checkpointable jobs gang may stop this session (nil:
// none): a starving gang, within the guards restartable checks.
func (s *session) stoppable(gang *api.JobInfo) func(*api.JobInfo) bool {
	if !s.args.PreemptCheckpointable || !s.starving(gang) {
		return nil
	}
	restartable := s.restartable(gang)
	return func(job *api.JobInfo) bool {
		_, checkpointable := s.stopCosts[job.UID]
		return checkpointable && restartable(job)
	}
}
