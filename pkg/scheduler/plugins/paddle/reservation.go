package paddle

import (
	"sort"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
)

// ReasonReservedForStarvingGang: a node's free resources are reserved for
// a starving gang and the task would take part of them.
const ReasonReservedForStarvingGang = "PaddleReservedForStarvingGang"

// book keeps each starving gang's reservation from one session to the
// next (a plugin value lives for one session, Volcano's
// framework.OpenSession builds it anew).
var book = &reservationBook{plans: map[api.JobID]*booked{}}

type reservationBook struct {
	mu    sync.Mutex
	plans map[api.JobID]*booked
}

// booked is a gang's reservation across sessions: its nodes, and how long
// the gang had waited when it first reserved. The gang then waits at most
// until the pods running at that moment have ended: every plan it holds,
// now and later, must have room for it once those pods are gone (see
// admissible). The moment is kept as a wait, not a clock reading, so it
// follows the moment the gang began to wait (waitingSince; the trace
// replay re-bases both).
type booked struct {
	nodes  []string
	waited time.Duration
}

// since is the moment the gang first reserved, given when it began to
// wait.
func (b *booked) since(waitStart time.Time) time.Time {
	return waitStart.Add(b.waited)
}

// reservation is a starving gang's claim for one session: per reserved
// node, what its missing pods planned there need.
type reservation struct {
	job  *api.JobInfo
	need map[string]*api.Resource
}

// sessionReservations are the session's reservations, oldest gang first.
type sessionReservations struct {
	list   []*reservation
	byNode map[string][]*reservation
}

// reservations computes, once per session, the nodes each queue's blocker
// (its oldest starving guarded gang that does not fit now) reserves: those
// of its booked plan while they can still take its missing pods and no
// other admissible plan is expected to drain sooner (see planCost), else
// the best admissible new plan. Older gangs plan first; a younger one
// plans on what they left.
func (p *paddlePlugin) reservations() *sessionReservations {
	p.reserveOnce.Do(func() {
		rs := &sessionReservations{byNode: map[string][]*reservation{}}
		p.reserved = rs
		// One gang per queue reserves: the oldest starving one that does
		// not fit now (blocker). Younger starving gangs are ordered after it
		// and take what it leaves, as in EASY backfilling; were every
		// starving gang to reserve, a saturated queue (where every job waits
		// past the threshold) would turn most free GPUs into reservations
		// for gangs that could not use them yet.
		book.mu.Lock()
		defer book.mu.Unlock()
		var gangs []*api.JobInfo
		blocking := map[api.JobID]bool{}
		for _, b := range p.queueBlockers() {
			gangs = append(gangs, b)
			blocking[b.UID] = true
		}
		// A gang keeps its reservation while it starves, also in a
		// session where it is not its queue's blocker because it fits
		// on free resources by the estimate yet was not placed (its
		// queue over its share, say): dropping it would give its freed
		// GPUs away and restart its bound.
		for id := range book.plans {
			if j, ok := p.ssn.Jobs[id]; ok && !blocking[id] && p.starving(j) && p.estimate(j).feasible && !p.estimate(j).fitsOnRelease {
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
		pl := &planner{book: book.plans, nodes: p.ssn.Nodes, nodeList: p.ssn.NodeList, places: p.state.places, now: now(), waitingSince: p.state.waitingSince, taken: map[string]*api.Resource{}, drains: map[string]*nodeDrain{}}
		for _, j := range gangs {
			// blocker computed the gang's fit, its missing pods included.
			pods := p.estimate(j).missing
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
	})
	return p.reserved
}

func olderJob(a, b *api.JobInfo) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.UID < b.UID
}

// subjectTo: job must leave r's share alone. Jobs of r's queue with no
// higher priority are, except r's own gang and starving gangs older than
// it (they planned first and are not inside its share).
func (p *paddlePlugin) subjectTo(job *api.JobInfo, r *reservation) bool {
	if job == nil || job.UID == r.job.UID || job.Queue != r.job.Queue || job.Priority > r.job.Priority || !p.guarded(job) {
		return false
	}
	return !(p.starving(job) && olderJob(job, r.job))
}

// reservationPredicate keeps tasks off the part of a reserved node that a
// starving gang needs: a task may use the node only if, for every resource
// it asks for, what stays free after it still covers the reservations it
// is subject to (takesFrom). Everything else (other nodes, reserved nodes'
// spare room, resources the task does not ask for) stays usable.
func (p *paddlePlugin) reservationPredicate(task *api.TaskInfo, node *api.NodeInfo) error {
	// Computed for every task: it also forgets the reservations of gangs
	// that are no longer starving (or of a guard switched off).
	rs := p.reservations().byNode[node.Name]
	if len(rs) == 0 {
		return nil
	}
	job := p.ssn.Jobs[task.Job]
	keep := api.EmptyResource()
	var holder *api.JobInfo
	// A pod that would grow an elastic job beyond its minimum takes idle
	// GPUs only: every reservation on the node binds it, whatever its
	// queue or priority.
	growth := growthTask(job, task)
	for _, r := range rs {
		if p.subjectTo(job, r) || (growth && job.UID != r.job.UID) {
			keep.Add(r.need[node.Name])
			holder = r.job
		}
	}
	if holder == nil || !takesFrom(task.InitResreq, node.Idle, keep) {
		return nil
	}
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
