package paddle

import (
	"sort"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
)

// This file is the starvation guard's reservations: which nodes each
// queue's oldest starving gang reserves this session (reserve, planned
// when the session opens on the plan the gang booked in the store), and
// which jobs must leave them alone (subjectTo); the predicate that keeps
// them off is in predicates.go, the planning in plan.go.

// reserve computes, when the session opens, the nodes each queue's blocker
// (its oldest starving guarded gang that does not fit now) reserves: those
// of its booked plan while they can still take its missing pods and no
// other admissible plan is expected to drain sooner (see planCost), else
// the best admissible new plan. Older gangs plan first; a younger one
// plans on what they left. It also forgets the bookings of gangs that no
// longer starve (or of a guard switched off).
func (s *session) reserve() *sessionReservations {
	rs := &sessionReservations{byNode: map[string][]*reservation{}}
	// One gang per queue reserves: the oldest starving one that does not
	// fit now (blocker). Younger starving gangs are ordered after it and
	// take what it leaves, as in EASY backfilling; were every starving gang
	// to reserve, a saturated queue (where every job waits past the
	// threshold) would turn most free GPUs into reservations for gangs that
	// could not use them yet.
	book := &s.store.book
	book.mu.Lock()
	defer book.mu.Unlock()
	var gangs []*api.JobInfo
	blocking := map[api.JobID]bool{}
	for _, b := range s.queueBlockers() {
		gangs = append(gangs, b)
		blocking[b.UID] = true
	}
	// A gang keeps its reservation while it starves, also in a session
	// where it is not its queue's blocker because it fits on free resources
	// by the estimate yet was not placed (its queue over its share, say):
	// dropping it would give its freed GPUs away and restart its bound.
	for id := range book.plans {
		if j, ok := s.ssn.Jobs[id]; ok && !blocking[id] && s.starving(j) && s.estimate(j).feasible && !s.estimate(j).fitsOnRelease {
			gangs = append(gangs, j)
		}
	}
	sort.Slice(gangs, func(a, b int) bool { return olderJob(gangs[a], gangs[b]) })
	keep := make(map[api.JobID]bool, len(gangs))
	for _, j := range gangs {
		keep[j.UID] = true
	}
	for id := range book.plans {
		if !keep[id] {
			delete(book.plans, id)
		}
	}
	pl := &planner{book: book.plans, nodes: s.ssn.Nodes, nodeList: s.ssn.NodeList, places: s.places, now: s.now(), waitingSince: s.waitingSince, taken: map[string]*api.Resource{}, drains: map[string]*nodeDrain{}}
	for _, j := range gangs {
		// queueBlockers computed the gang's fit, its missing pods included.
		pods := s.estimate(j).missing
		if len(pods) == 0 {
			continue
		}
		need, ok := pl.replan(j, pods)
		if !ok {
			klog.V(3).InfoS("Starving Paddle gang cannot be planned even on allocatable resources; no reservation", "job", klog.KRef(j.Namespace, j.Name))
			delete(book.plans, j.UID)
			continue
		}
		r := &reservation{job: j, need: need}
		rs.list = append(rs.list, r)
		for n, res := range need {
			rs.byNode[n] = append(rs.byNode[n], r)
			if pl.taken[n] == nil {
				pl.taken[n] = api.EmptyResource()
			}
			pl.taken[n].Add(res)
		}
	}
	return rs
}

// subjectTo: job must leave r's share alone. Jobs of r's queue with no
// higher priority are, except r's own gang and starving gangs older than
// it (they planned first and are not inside its share).
func (s *session) subjectTo(job *api.JobInfo, r *reservation) bool {
	if job == nil || job.UID == r.job.UID || job.Queue != r.job.Queue || job.Priority > r.job.Priority || !s.guarded(job) {
		return false
	}
	return !(s.starving(job) && olderJob(job, r.job))
}

// queueBlockers is every queue's blocker: its oldest starving gang that
// does not fit yet and could fit on an empty cluster, the gang the guard
// works for. It reserves nodes (reserve) so that freed resources go to it.
func (s *session) queueBlockers() map[api.QueueID]*api.JobInfo {
	blockers := map[api.QueueID]*api.JobInfo{}
	for _, j := range s.ssn.Jobs {
		if !s.starving(j) || !s.guarded(j) {
			continue
		}
		f := s.estimate(j)
		if f.fitsNow() {
			continue
		}
		if !f.feasible {
			klog.V(3).InfoS("Starving Paddle gang cannot fit even on an empty cluster; not holding others back", "job", klog.KRef(j.Namespace, j.Name))
			continue
		}
		// Elastic jobs' pods above their minimum are releasable: the
		// preempt action takes them back for this gang (preemption.go),
		// so holding idle GPUs for it would only leave them idle.
		if f.fitsOnRelease {
			klog.V(4).InfoS("Starving Paddle gang fits once elastic jobs shrink to their minimum; no reservation", "job", klog.KRef(j.Namespace, j.Name))
			continue
		}
		if b, ok := blockers[j.Queue]; !ok || s.waitingSince(j).Before(s.waitingSince(b)) {
			blockers[j.Queue] = j
		}
	}
	return blockers
}
