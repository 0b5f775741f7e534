package paddle

import (
	"fmt"
	"math"
	"sync"
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
// queue. Spreading's hold-back is an accident of placement, unbounded (a
// 16-GPU gang waited 38.7 h on average in one window); the headroom makes
// it a rule with a bound: the starvation threshold ends it for each gang.
// It needs no run times, only that small jobs keep arriving.

// Reasons this plugin gives when the headroom holds a gang.
const ReasonHeldForHeadroom = "PaddleHeldForSmallJobHeadroom"

// maxHeadroom bounds paddle.smallJobHeadroom: keeping more than half the
// cluster from whole-node gangs would make them wait for their threshold
// nearly always.
const maxHeadroom = 0.5

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
	// smallWaiting counts the waiting jobs that still need some GPUs but
	// fewer than wholeNode, the jobs the headroom is for; counted only
	// for HeadroomWhileSmallJobsWait.
	smallWaiting int
	// smallQueued counts the smaller jobs that queued (see
	// HeadroomWhileSmallJobsQueued); counted only for that mode.
	smallQueued int
	// smallHeld are the GPUs that jobs of fewer GPUs than wholeNode hold;
	// counted only for HeadroomCountsSmallJobs.
	smallHeld int
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
	share       float64 // SmallJobHeadroom; 0 turns it off
	after       time.Duration
	when        string        // SmallJobHeadroomWhen
	queuedAfter time.Duration // SmallJobHeadroomQueuedAfter
	patience    time.Duration // SmallJobHeadroomPatience; 0 off
	counts      string        // SmallJobHeadroomCounts
}

func newHeadroomPolicy(a Args) headroomPolicy {
	return headroomPolicy{share: a.SmallJobHeadroom, after: a.StarvationAfter, when: a.SmallJobHeadroomWhen,
		queuedAfter: a.SmallJobHeadroomQueuedAfter, patience: a.SmallJobHeadroomPatience, counts: a.SmallJobHeadroomCounts}
}

// roomBook keeps, across sessions (a plugin value lives for one), how long
// each gang had waited when it last began to have room without a break,
// for SmallJobHeadroomPatience. It is kept as a wait, not a clock reading,
// as booked.waited is, so that it follows waitingSince (the trace replay
// re-bases both).
type roomBook struct {
	mu    sync.Mutex
	since map[api.JobID]time.Duration
}

var room = &roomBook{since: map[api.JobID]time.Duration{}}

// hadRoomFor records whether the gang, having waited waited, has room in
// this session, and returns for how long it has had room without a break.
// Asked again in the same session it answers the same.
func (b *roomBook) hadRoomFor(id api.JobID, fits bool, waited time.Duration) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !fits {
		delete(b.since, id)
		return 0
	}
	since, ok := b.since[id]
	if !ok || since > waited { // new, or the gang began to wait again
		since = waited
		b.since[id] = since
	}
	return waited - since
}

// forgetAllBut drops the gangs that no longer wait; the plugin calls it as
// each session closes.
func (b *roomBook) forgetAllBut(waiting func(api.JobID) bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range b.since {
		if !waiting(id) {
			delete(b.since, id)
		}
	}
}

// noSmallJobNeedsRoom: the mode holds gangs only while smaller jobs wait
// (HeadroomWhileSmallJobsWait) or queue (HeadroomWhileSmallJobsQueued),
// and none does. Volcano's allocate action asks JobValidFn of every job
// before it places any, so a small job that arrived since the last session
// counts here even when it fits; the gang is then held for that session
// only.
func (h headroomPolicy) noSmallJobNeedsRoom(c clusterGPUs) bool {
	switch h.when {
	case HeadroomWhileSmallJobsWait:
		return c.smallWaiting == 0
	case HeadroomWhileSmallJobsQueued:
		return c.smallQueued == 0
	}
	return false
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
	if h.noSmallJobNeedsRoom(c) {
		return false
	}
	return c.free+c.elastic-gpus < h.keepFree(c)
}

// keep is how many GPUs the headroom keeps for smaller jobs, rounded up.
func (h headroomPolicy) keep(c clusterGPUs) int {
	return int(math.Ceil(h.share * float64(c.total)))
}

// keepFree is how many of those must stay free: all of them, or with
// HeadroomCountsSmallJobs those that smaller jobs do not hold already.
func (h headroomPolicy) keepFree(c clusterGPUs) int {
	if h.counts == HeadroomCountsSmallJobs {
		return max(0, h.keep(c)-c.smallHeld)
	}
	return h.keep(c)
}

func (h headroomPolicy) message(job *api.JobInfo, c clusterGPUs, gpus int, waited, hadRoom time.Duration) string {
	var elastic, small, patience, kept string
	if h.counts == HeadroomCountsSmallJobs {
		kept = fmt.Sprintf(": %d, less the %d that smaller jobs hold (%s %s)", h.keep(c), c.smallHeld, ArgSmallJobHeadroomCounts, h.counts)
	}
	if h.patience > 0 {
		patience = fmt.Sprintf(", once it has had room for %s without a break (%s; %s so far)", h.patience, ArgSmallJobHeadroomPatience, hadRoom.Round(time.Second))
	}
	if c.elastic > 0 {
		elastic = fmt.Sprintf(" (counting the %d that elastic jobs hold above their minimum)", c.elastic)
	}
	switch h.when {
	case HeadroomWhileSmallJobsWait:
		small = fmt.Sprintf(", while %d of them wait (%s %s)", c.smallWaiting, ArgSmallJobHeadroomWhen, h.when)
	case HeadroomWhileSmallJobsQueued:
		small = fmt.Sprintf(", while they queue (%d waited longer than %s within the last %s; %s %s)", c.smallQueued, h.queuedAfter, h.after, ArgSmallJobHeadroomWhen, h.when)
	}
	return fmt.Sprintf("paddle: gang %s needs %d GPUs; starting it now would leave %d of the cluster's %d GPUs free%s, fewer than the %d (%s %g%s) kept for smaller jobs%s; it starts when more are free%s or once it has waited %s (waited %s)",
		gangName(job), gpus, max(0, c.free+c.elastic-gpus), c.total, elastic, h.keepFree(c), ArgSmallJobHeadroom, h.share, kept, small, patience, h.after, waited.Round(time.Second))
}

// headroomHolds: the headroom holds this waiting gang back now.
func (p *paddlePlugin) headroomHolds(job *api.JobInfo) (string, bool) {
	h := newHeadroomPolicy(p.args)
	if !h.on() || !p.guarded(job) || p.starving(job) {
		return "", false
	}
	// A gang that does not fit now, nor once elastic jobs shrink, waits
	// anyway; its fit errors say why.
	f := p.estimate(job)
	fits := f.fitsNow() || f.fitsOnRelease
	waited := now().Sub(p.state.waitingSince(job))
	var hadRoom time.Duration
	if h.patience > 0 {
		hadRoom = room.hadRoomFor(job.UID, fits, waited)
	}
	if !fits {
		return "", false
	}
	c := p.headroomGPUs(h)
	if !h.holds(c, f.gpus) || h.patience > 0 && hadRoom >= h.patience {
		return "", false
	}
	return h.message(job, c, f.gpus, waited, hadRoom), true
}

// headroomGPUs is the session's GPU count with the GPUs elastic jobs hold
// above their minimum and, where h asks, the smaller jobs that wait,
// computed once per session and only when the headroom has a gang to
// judge.
func (p *paddlePlugin) headroomGPUs(h headroomPolicy) clusterGPUs {
	p.headroomOnce.Do(func() {
		c := countGPUs(p.ssn.NodeList)
		if p.args.ShrinkElastic {
			for _, j := range p.victimJobs().elastic {
				for _, t := range releasable(j) {
					c.elastic += gpusOf(t.Resreq)
				}
			}
		}
		switch h.when {
		case HeadroomWhileSmallJobsWait:
			c.smallWaiting = smallJobsWaiting(p.ssn.Jobs, c.wholeNode, p.args.TaskNameFallback)
		case HeadroomWhileSmallJobsQueued:
			c.smallQueued = h.smallJobsQueued(p.ssn.Jobs, c.wholeNode, now(), p.state.waitingSince)
		}
		if h.counts == HeadroomCountsSmallJobs {
			c.smallHeld = smallJobsHold(p.ssn.Jobs, c.wholeNode)
		}
		p.headroom = c
	})
	return p.headroom
}

// smallJobsHold counts the GPUs that jobs requesting some GPUs but fewer
// than wholeNode, all their pods together, hold now.
func smallJobsHold(jobs map[api.JobID]*api.JobInfo, wholeNode int) int {
	held := 0
	for _, j := range jobs {
		if !smallerJob(j, wholeNode) {
			continue
		}
		for _, t := range j.Tasks {
			if api.AllocatedStatus(t.Status) {
				held += gpusOf(t.Resreq)
			}
		}
	}
	return held
}

// smallerJob: the job's pods, all together, request some GPUs but fewer
// than wholeNode.
func smallerJob(j *api.JobInfo, wholeNode int) bool {
	gpus := 0
	for _, t := range j.Tasks {
		gpus += gpusOf(t.InitResreq)
	}
	return gpus > 0 && gpus < wholeNode
}

// smallJobsWaiting counts the waiting jobs, of any kind, whose missing pods
// request some GPUs but fewer than wholeNode.
func smallJobsWaiting(jobs map[api.JobID]*api.JobInfo, wholeNode int, fallback bool) int {
	n := 0
	for _, j := range jobs {
		if !waiting(j) {
			continue
		}
		gpus := 0
		for _, t := range missingPods(j, fallback) {
			gpus += gpusOf(t.InitResreq)
		}
		if gpus > 0 && gpus < wholeNode {
			n++
		}
	}
	return n
}

// smallJobsQueued counts the jobs of fewer GPUs than wholeNode that queued
// (HeadroomWhileSmallJobsQueued): waiting now for longer than queuedAfter,
// or running with a pod that started more than queuedAfter after it began
// to wait (waitStart) and within the last h.after. Pods report
// their start in status.startTime (set by the kubelet).
func (h headroomPolicy) smallJobsQueued(jobs map[api.JobID]*api.JobInfo, wholeNode int, at time.Time, since func(*api.JobInfo) time.Time) int {
	n := 0
	for _, j := range jobs {
		if !smallerJob(j, wholeNode) {
			continue
		}
		if waiting(j) {
			if at.Sub(since(j)) > h.queuedAfter {
				n++
			}
			continue
		}
		for _, t := range j.Tasks {
			if t.Pod == nil || t.Pod.Status.StartTime == nil {
				continue
			}
			started := t.Pod.Status.StartTime.Time
			if started.Sub(waitStart(j, t.Pod.CreationTimestamp.Time)) > h.queuedAfter && at.Sub(started) < h.after {
				n++
				break
			}
		}
	}
	return n
}
