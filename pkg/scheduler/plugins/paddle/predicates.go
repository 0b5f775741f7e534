package paddle

import "volcano.sh/volcano/pkg/scheduler/api"

// This file is the plugin's predicate: a task is kept off what the
// starvation guard reserved for a starving gang (reservation.go), and a
// pod that would grow an elastic job off GPUs a gang waits for (elastic.go).
// Reasons are named constants; the fit error says which gang.

// predicateFn keeps tasks off what the starvation guard reserved and
// elastic growth off GPUs a gang waits for.
func (s *session) predicateFn(task *api.TaskInfo, node *api.NodeInfo) error {
	if err := s.reservationPredicate(task, node); err != nil {
		return err
	}
	return s.growthPredicate(task, node)
}

// ReasonReservedForStarvingGang: a node's free resources are reserved for
// a starving gang and the task would take part of them.
const ReasonReservedForStarvingGang = "PaddleReservedForStarvingGang"

// reservationPredicate keeps tasks off the part of a reserved node that a
// starving gang needs: a task may use the node only if, for every resource
// it asks for, what stays free after it still covers the reservations it
// is subject to (takesFrom). Everything else (other nodes, reserved nodes'
// spare room, resources the task does not ask for) stays usable.
func (s *session) reservationPredicate(task *api.TaskInfo, node *api.NodeInfo) error {
	rs := s.reserved.byNode[node.Name]
	if len(rs) == 0 {
		return nil
	}
	job := s.ssn.Jobs[task.Job]
	keep := api.EmptyResource()
	var holder *api.JobInfo
	// A pod that would grow an elastic job beyond its minimum takes idle
	// GPUs only: every reservation on the node binds it, whatever its
	// queue or priority.
	growth := growthTask(job, task)
	for _, r := range rs {
		if s.subjectTo(job, r) || (growth && job.UID != r.job.UID) {
			keep.Add(r.need[node.Name])
			holder = r.job
		}
	}
	if holder == nil || !takesFrom(task.InitResreq, node.Idle, keep) {
		return nil
	}
	s.held.keptOff(task.Job, gangName(holder))
	return api.NewFitError(task, node, ReasonReservedForStarvingGang+": reserved for starving gang "+gangName(holder))
}

// takesFrom: a request takes from what a node must keep, because for some
// resource it asks for, less than keep would stay idle after it. Only the
// resources it asks for count (Volcano's LessEqualWithDimension..., which
// also skips the pod count its predicates check): a pserver asking for CPU
// alone may use a node whose GPUs are still draining for the gang.
func takesFrom(req, idle, keep *api.Resource) bool {
	fits, _ := keep.Clone().Add(req).LessEqualWithDimensionAndResourcesName(idle, req)
	return !fits
}

// ReasonGrowthYields: the pod would grow an elastic job while a gang of
// its queue waits for the GPUs that shrinking elastic jobs would free.
const ReasonGrowthYields = "PaddleElasticGrowthYields"

// growthPredicate keeps a pod that would grow an elastic job off every
// node while a gang of its queue waits that fits once elastic jobs shrink
// (gangEstimate.fitsOnRelease): otherwise the allocate action, which runs
// before preempt, would hand the idle GPUs the gang needs to the job the
// gang is about to shrink.
func (s *session) growthPredicate(task *api.TaskInfo, node *api.NodeInfo) error {
	job := s.ssn.Jobs[task.Job]
	if !growthTask(job, task) {
		return nil
	}
	g := s.shrinkWaiters()[job.Queue]
	if g == nil || g.UID == job.UID {
		return nil
	}
	return api.NewFitError(task, node, ReasonGrowthYields+": gang "+gangName(g)+" waits for these GPUs; elastic jobs grow only into GPUs no gang waits for")
}

// shrinkWaiters is, per queue, its oldest waiting guarded gang that fits
// once elastic jobs shrink to their minimum; computed once per session, on
// first use.
func (s *session) shrinkWaiters() map[api.QueueID]*api.JobInfo {
	return s.growthWaiters.get(func() map[api.QueueID]*api.JobInfo {
		waiters := map[api.QueueID]*api.JobInfo{}
		if !s.args.ShrinkElastic {
			return waiters
		}
		for _, j := range s.ssn.Jobs {
			if !waiting(j) || !s.guarded(j) || !s.estimate(j).fitsOnRelease {
				continue
			}
			if w, ok := waiters[j.Queue]; !ok || olderJob(j, w) {
				waiters[j.Queue] = j
			}
		}
		return waiters
	})
}
