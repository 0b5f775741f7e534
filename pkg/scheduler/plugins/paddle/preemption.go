package paddle

import (
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/plugins/util"
)

// This file is who may preempt and what it may take: the hooks paddle
// registers for Volcano's preempt and reclaim actions (JobStarvingFn,
// PreemptableFn, ReclaimableFn). Paddle speaks only where it has an
// opinion and abstains everywhere else, so that Volcano's own plugins
// (priority, gang, conformance, drf, proportion, capacity) decide for
// every other job exactly as they would without paddle:
//
//   - JobStarving: Volcano asks the JobStarvingFns of the first tier that
//     has any and needs every one of them to agree (framework/
//     session_plugins.go: JobStarving), so paddle answers true, the
//     neutral answer, for every job but an elastic job that would only
//     grow above its minimum: growth takes idle GPUs, never a victim.
//   - Preemptable, Reclaimable: Volcano intersects the victims of the
//     plugins of one tier that do not abstain and, when a tier offers
//     none, asks the next tier (framework/session_plugins.go:
//     Preemptable, Reclaimable). Paddle abstains unless one of its levers
//     serves the preemptor (a waiting Paddle gang that elastic jobs above
//     their minimum or checkpointable jobs can make room for) and it
//     chooses victims on the node; then it offers those, which narrows
//     the choice of the plugins beside it.
//
// deploy/paddle puts paddle in the second tier, so that the first tier
// (priority, gang, conformance) decides first, as in stock Volcano, and
// paddle's levers act where that tier finds no victim: between jobs of
// equal priority. The pods of Paddle jobs that opted in to nothing carry
// volcano.sh/preemptable: "false" (the job plugin), which every action
// honours before any plugin is asked (TaskInfo.Preemptable).
// docs/scheduler-plugin.md, "Preemption and reclaim beside Volcano's
// plugins", shows the configuration.

// levers are what a job may take from others this session; zero for a
// job that may take nothing.
func (s *session) levers(gang *api.JobInfo) victimPolicy {
	vp := victimPolicy{jobs: s.ssn.Jobs, attained: s.attained}
	if gang == nil || !waiting(gang) || !s.guarded(gang) || !s.estimate(gang).feasible {
		return vp
	}
	// A gang that fits on free resources is placed by the allocate action;
	// taking pods for it would only waste their work.
	if s.estimate(gang).fitsNow() {
		return vp
	}
	vj := s.victimJobs()
	// Within the gang's queue (the preempt action), shrinking only for a
	// gang that then fits: one that would not fit even with every elastic
	// pod of its queue above minimum gone (a starving whole-node gang
	// beside 1-GPU elastic jobs) made the preempt action evict such pods
	// session after session without starting, and the jobs grew back into
	// the GPUs each time. Checkpointable jobs may still be stopped. The
	// estimate counts what the gang's queue would give back (shrinkable:
	// fitsOnRelease implies such a job gives way); elastic jobs of other
	// queues are the reclaim action's, which takes from queues over their
	// share only (reclaimableFn), as before.
	vp.shrink = s.args.ShrinkElastic && (s.estimate(gang).fitsOnRelease || otherQueueGivesWay(vj.elastic, gang))
	if vp.shrink {
		vp.restartable = s.restartable(gang)
	}
	// Checkpointable jobs are stopped whole, for a starving gang, within
	// the guards of stopping.go.
	if vp.stoppable = s.stoppable(gang); vp.stoppable != nil {
		vp.checkpoint = anyStoppable(vj.checkpointable, gang, vp.stoppable)
	}
	return vp
}

// anyStoppable: some job of jobs gives way to gang (givesWay) and may be
// stopped for it.
func anyStoppable(jobs map[api.JobID]*api.JobInfo, gang *api.JobInfo, stoppable func(*api.JobInfo) bool) bool {
	for _, j := range jobs {
		if givesWay(gang, j) && stoppable(j) {
			return true
		}
	}
	return false
}

// otherQueueGivesWay: some job of jobs, of a queue other than gang's,
// gives way to gang.
func otherQueueGivesWay(jobs map[api.JobID]*api.JobInfo, gang *api.JobInfo) bool {
	for _, j := range jobs {
		if j.Queue != gang.Queue && givesWay(gang, j) {
			return true
		}
	}
	return false
}

// jobStarvingFn leaves every job to the other JobStarvingFns of its tier
// (true is neutral where Volcano needs all to agree) but one: a running
// elastic job that would grow beyond its minimum never preempts; it takes
// idle GPUs only.
func (s *session) jobStarvingFn(obj interface{}) bool {
	job, ok := obj.(*api.JobInfo)
	return !ok || !growing(job)
}

// preemptableFn offers victims in the preemptor's queue (the preempt
// action offers no others).
func (s *session) preemptableFn(preemptor *api.TaskInfo, preemptees []*api.TaskInfo) ([]*api.TaskInfo, int) {
	return s.victims(preemptor, preemptees, nil)
}

// reclaimableFn offers victims of other queues, only from a queue at or
// over its deserved share (ssn.Overused, proportion's), as Volcano's
// proportion plugin would: the reclaim action itself checks only the
// reclaiming queue (actions/reclaim: Execute).
func (s *session) reclaimableFn(reclaimer *api.TaskInfo, reclaimees []*api.TaskInfo) ([]*api.TaskInfo, int) {
	return s.victims(reclaimer, reclaimees, s.overused)
}

// overused: the queue is at or over its deserved share (ssn.Overused).
func (s *session) overused(q api.QueueID) bool {
	qi, ok := s.ssn.Queues[q]
	return ok && s.ssn.Overused(qi)
}

// victims groups the offered pods by node (the actions offer one node's
// pods at a time) and chooses on each.
func (s *session) victims(preemptor *api.TaskInfo, preemptees []*api.TaskInfo, otherQueue func(api.QueueID) bool) ([]*api.TaskInfo, int) {
	gang := s.ssn.Jobs[preemptor.Job]
	vp := s.levers(gang)
	if !vp.shrink && !vp.checkpoint {
		return nil, util.Abstain
	}
	vp.victimQueue = otherQueue
	byNode := map[string][]*api.TaskInfo{}
	var nodes []string
	for _, t := range preemptees {
		if _, ok := byNode[t.NodeName]; !ok {
			nodes = append(nodes, t.NodeName)
		}
		byNode[t.NodeName] = append(byNode[t.NodeName], t)
	}
	var out []*api.TaskInfo
	for _, name := range nodes {
		n, ok := s.ssn.Nodes[name]
		if !ok {
			continue
		}
		out = append(out, vp.choose(preemptor, gang, n.FutureIdle(), byNode[name])...)
	}
	// Nothing of paddle's here: an empty answer would veto the victims the
	// plugins beside paddle offer.
	if len(out) == 0 {
		return nil, util.Abstain
	}
	return out, util.Permit
}
