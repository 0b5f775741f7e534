package paddle

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"volcano.sh/volcano/pkg/scheduler/api"
)

// This file is the plugin's order of tasks within a job and of jobs, and
// the job gate (jobValidFn) that holds gangs for the headroom and says why
// a gang waits.

// taskOrderFn is taskLess as Volcano's comparator: no opinion between tasks
// of different jobs or tasks without a Paddle role.
func (s *session) taskOrderFn(l, r interface{}) int {
	lt, rt := l.(*api.TaskInfo), r.(*api.TaskInfo)
	if lt.Job != rt.Job {
		return 0
	}
	lr, li, lok := roleOf(lt, s.args.TaskNameFallback)
	rr, ri, rok := roleOf(rt, s.args.TaskNameFallback)
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

// jobOrderFn runs after Volcano's priority and gang plugins have ordered by
// priority and readiness. Among the rest:
//  1. starving gangs first, longest waiting first (aging);
//  2. a gang still waiting before an elastic job that would grow beyond
//     its minimum (Volcano's gang plugin already orders jobs that are not
//     ready first; this holds in tiers without it too);
//  3. then gangs whose missing pods fit on free resources now, so the
//     allocate action does not spend the session on partial placements of
//     gangs that are then rolled back;
//  4. then, between two gangs the starvation guard covers, the one with
//     less predicted GPU-time (ShortestPredictedFirst) or that still needs
//     fewer GPUs (SmallGangsFirst);
//  5. otherwise no opinion (Volcano falls back to creation time).
func (s *session) jobOrderFn(l, r interface{}) int {
	lj, rj := l.(*api.JobInfo), r.(*api.JobInfo)
	if s.args.ShortestPredictedFirst && s.starvation.on() {
		if c, ok := s.admissionOrder(lj, rj); ok {
			return c
		}
	}
	ls, rs := s.starving(lj), s.starving(rj)
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
	if s.args.GangFitOrder {
		lf, rf := s.estimate(lj).fitsNow(), s.estimate(rj).fitsNow()
		switch {
		case lf && !rf:
			return -1
		case rf && !lf:
			return 1
		}
	}
	// Only between guarded gangs: the guard is what bounds the wait of the
	// larger one (it starves after StarvationAfter and goes first).
	if s.args.SmallGangsFirst && s.starvation.on() && s.guarded(lj) && s.guarded(rj) {
		if s.args.ShortestPredictedFirst {
			lw, lok := s.predictedWork(lj)
			rw, rok := s.predictedWork(rj)
			if lok && rok && lw != rw {
				return cmp.Compare(lw, rw)
			}
		}
		return compareInts(s.estimate(lj).gpus, s.estimate(rj).gpus)
	}
	return 0
}

// jobValidFn holds whole-node gangs back for the small-job headroom
// (headroom.go; holds.go explains the hold on the PodGroup), and records
// why a Paddle gang cannot be placed in the job's fit errors, which
// Volcano's gang plugin writes into the PodGroup's Unschedulable
// condition.
func (s *session) jobValidFn(obj interface{}) *api.ValidateResult {
	job, ok := obj.(*api.JobInfo)
	if !ok || !waiting(job) {
		return nil
	}
	if msg, held := s.headroomHolds(job); held {
		job.JobFitErrors = msg
		s.held.note(job.UID, ReasonHeldForHeadroom, msg)
		return &api.ValidateResult{Pass: false, Reason: ReasonHeldForHeadroom, Message: msg}
	}
	s.explainFit(job)
	return nil
}

// explainFit records why a Paddle gang cannot be placed in the job's fit
// errors, which Volcano's gang plugin writes into the PodGroup's
// Unschedulable condition.
func (s *session) explainFit(job *api.JobInfo) {
	if !s.isPaddle(job) {
		return
	}
	if f := s.estimate(job); !f.fitsNow() {
		job.JobFitErrors = fmt.Sprintf("paddle: %d of the %d pods the gang still needs fit on free resources now (before taints and affinity): %s",
			f.placeable, f.needed, strings.Join(f.short, "; "))
	}
}

// headroomHolds: the headroom holds this waiting gang back now.
func (s *session) headroomHolds(job *api.JobInfo) (string, bool) {
	h := s.headroom
	if !h.on() || !s.guarded(job) || s.starving(job) {
		return "", false
	}
	// A gang that does not fit now, nor once elastic jobs shrink, waits
	// anyway; its fit errors say why.
	f := s.estimate(job)
	fits := f.fitsNow() || f.fitsOnRelease
	if !fits {
		return "", false
	}
	c := s.headroomGPUs()
	if !h.holds(c, f.gpus) {
		return "", false
	}
	var median time.Duration
	var predicted bool
	if h.predictedAbove > 0 {
		median, predicted = s.predictedMedian(job)
		if h.shortEnoughToGo(median, predicted) {
			klog.V(4).InfoS("Headroom lets a short gang go", "job", job.UID, "predictedMedian", median.Round(time.Second), "predictedAbove", h.predictedAbove)
			return "", false
		}
	}
	return h.message(job, c, f.gpus, s.waitingSince(job), median, predicted), true
}

// headroomGPUs is the session's GPU count with the GPUs elastic jobs hold
// above their minimum, computed once per session and only when the
// headroom has a gang to judge.
func (s *session) headroomGPUs() clusterGPUs {
	return s.gpuCount.get(func() clusterGPUs {
		c := countGPUs(s.ssn.NodeList)
		if s.args.ShrinkElastic {
			for _, j := range s.victimJobs().elastic {
				for _, t := range releasable(j) {
					c.elastic += gpusOf(t.Resreq)
				}
			}
		}
		return c
	})
}
