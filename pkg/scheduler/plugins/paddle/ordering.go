package paddle

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// now is replaced in tests.
var now = time.Now

// taskLess is the role-aware order within one job: parameter servers, then
// heter trainers, then trainers; trainer 0 (it hosts Paddle's TCP store and
// is the collective master) before the others; then by index.
func taskLess(l, r *api.TaskInfo, fallback bool) bool {
	lr, li, lok := roleOf(l, fallback)
	rr, ri, rok := roleOf(r, fallback)
	if !lok || !rok {
		return l.Name < r.Name
	}
	if a, b := roleRank(lr), roleRank(rr); a != b {
		return a < b
	}
	if li != ri {
		return li < ri
	}
	return l.Name < r.Name
}

func (p *paddlePlugin) taskOrderFn(l, r interface{}) int {
	lt, rt := l.(*api.TaskInfo), r.(*api.TaskInfo)
	if lt.Job != rt.Job {
		return 0
	}
	lr, li, lok := roleOf(lt, p.args.TaskNameFallback)
	rr, ri, rok := roleOf(rt, p.args.TaskNameFallback)
	if !lok || !rok {
		return 0
	}
	if a, b := roleRank(lr), roleRank(rr); a != b {
		return compareInts(a, b)
	}
	return compareInts(li, ri)
}

func compareInts(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// estimate returns the session's estimate for a job, computing it once.
func (p *paddlePlugin) estimate(job *api.JobInfo) *gangEstimate {
	p.state.mu.Lock()
	f, ok := p.state.estimates[job.UID]
	p.state.mu.Unlock()
	if ok {
		return f
	}
	var release func() map[string]*api.Resource
	if p.args.ShrinkElastic {
		release = func() map[string]*api.Resource { return releasableFor(job, p.victimJobs().elastic) }
	}
	f = estimateGang(job, p.ssn.NodeList, p.args.TaskNameFallback, release)
	p.state.mu.Lock()
	p.state.estimates[job.UID] = f
	p.state.mu.Unlock()
	return f
}

// starving: see starvationPolicy.starving.
func (p *paddlePlugin) starving(job *api.JobInfo) bool {
	return p.starvation().starving(job, now())
}

// guarded: see starvationPolicy.guarded.
func (p *paddlePlugin) guarded(job *api.JobInfo) bool {
	return p.starvation().guarded(job)
}

func (p *paddlePlugin) starvation() starvationPolicy {
	return starvationPolicy{after: p.args.StarvationAfter, taskNameJobs: p.args.StarvationTaskNameJobs, isPaddle: p.isPaddle, since: p.state.waitingSince}
}

// jobOrderFn runs after Volcano's priority and gang plugins have ordered by
// priority and readiness. Among the rest:
//  1. starving gangs first, longest waiting first (aging);
//  2. a gang still waiting before an elastic job that would grow beyond
//     its minimum (Volcano's gang plugin already orders jobs that are not
//     ready first; this holds in tiers without it too);
//  3. then gangs whose missing pods fit on free resources now, so the
//     allocate action does not spend the session on partial placements of
//     gangs that are then rolled back;
//  4. then, between two gangs the starvation guard covers, the one that
//     still needs fewer GPUs (SmallGangsFirst);
//  5. otherwise no opinion (Volcano falls back to creation time).
func (p *paddlePlugin) jobOrderFn(l, r interface{}) int {
	lj, rj := l.(*api.JobInfo), r.(*api.JobInfo)
	ls, rs := p.starving(lj), p.starving(rj)
	switch {
	case ls && !rs:
		return -1
	case rs && !ls:
		return 1
	case ls && rs:
		if !lj.CreationTimestamp.Equal(&rj.CreationTimestamp) {
			if lj.CreationTimestamp.Before(&rj.CreationTimestamp) {
				return -1
			}
			return 1
		}
		return 0
	}
	// Gangs that have not started go before elastic jobs that would grow
	// (pods above their minimum take idle GPUs only).
	lw, rw := waiting(lj), waiting(rj)
	switch {
	case lw && !rw && growing(rj):
		return -1
	case rw && !lw && growing(lj):
		return 1
	case !lw || !rw:
		return 0
	}
	if p.args.GangFitOrder {
		lf, rf := p.estimate(lj).fitsNow(), p.estimate(rj).fitsNow()
		switch {
		case lf && !rf:
			return -1
		case rf && !lf:
			return 1
		}
	}
	// Only between guarded gangs: the guard is what bounds the wait of the
	// larger one (it starves after StarvationAfter and goes first).
	if p.args.SmallGangsFirst && p.args.StarvationAfter > 0 && p.guarded(lj) && p.guarded(rj) {
		return compareInts(p.estimate(lj).gpus, p.estimate(rj).gpus)
	}
	return 0
}

// queueBlockers is every queue's blocker, computed once per session: its
// oldest starving gang that does not fit yet and could fit on an empty
// cluster, the gang the guard works for. It reserves nodes (reservation.go)
// so that freed resources go to it.
func (p *paddlePlugin) queueBlockers() map[api.QueueID]*api.JobInfo {
	p.blockersOnce.Do(func() {
		p.blockers = map[api.QueueID]*api.JobInfo{}
		for _, j := range p.ssn.Jobs {
			if !p.starving(j) || !p.guarded(j) {
				continue
			}
			f := p.estimate(j)
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
			if b, ok := p.blockers[j.Queue]; !ok || p.state.waitingSince(j).Before(p.state.waitingSince(b)) {
				p.blockers[j.Queue] = j
			}
		}
	})
	return p.blockers
}

// gangName is namespace/name of the Volcano Job a gang belongs to, as users
// know it (the job controller names the PodGroup after the job and its
// UID), else of its PodGroup.
func gangName(job *api.JobInfo) string {
	for _, t := range job.Tasks {
		if t.Pod != nil {
			if name := t.Pod.Labels[batch.JobNameKey]; name != "" {
				return job.Namespace + "/" + name
			}
		}
	}
	return job.Namespace + "/" + job.Name
}

func (p *paddlePlugin) isPaddle(job *api.JobInfo) bool {
	p.state.mu.Lock()
	defer p.state.mu.Unlock()
	_, ok := p.state.jobs[job.UID]
	return ok
}

// jobValidFn holds whole-node gangs back for the small-job headroom
// (headroom.go), and records why a Paddle gang cannot be placed in the
// job's fit errors, which Volcano's gang plugin writes into the PodGroup's
// Unschedulable condition.
func (p *paddlePlugin) jobValidFn(obj interface{}) *api.ValidateResult {
	job, ok := obj.(*api.JobInfo)
	if !ok || !waiting(job) {
		return nil
	}
	if msg, held := p.headroomHolds(job); held {
		job.JobFitErrors = msg
		return &api.ValidateResult{Pass: false, Reason: ReasonHeldForHeadroom, Message: msg}
	}
	p.explainFit(job)
	return nil
}

// explainFit records why a Paddle gang cannot be placed in the job's fit
// errors, which Volcano's gang plugin writes into the PodGroup's
// Unschedulable condition.
func (p *paddlePlugin) explainFit(job *api.JobInfo) {
	if !p.isPaddle(job) {
		return
	}
	if f := p.estimate(job); !f.fitsNow() {
		job.JobFitErrors = fmt.Sprintf("paddle: %d of the %d pods the gang still needs fit on free resources now (before taints and affinity): %s",
			f.placeable, f.needed, strings.Join(f.short, "; "))
	}
}

var _ framework.Plugin = &paddlePlugin{}
