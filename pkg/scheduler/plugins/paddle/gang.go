package paddle

import (
	"fmt"
	"sort"
	"time"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// This file is the gang: what it still needs and whether that fits now
// (gangEstimate), whether it waits, how long it has waited, whether the
// starvation guard covers it and whether it starves (starvationPolicy).

// gangEstimate says whether the pods a gang still needs fit on the nodes'
// free resources right now, placed greedily. It looks at resources and node
// selectors only (not taints or affinities), so it is an estimate used to
// order gangs and to explain why one waits, never to reject a placement.
type gangEstimate struct {
	needed    int // pods the gang still needs to reach minAvailable
	placeable int // of those, how many fit on free resources now
	// missing are those pods, in allocation order (missingPods); gpus is
	// what they request.
	missing []*api.TaskInfo
	gpus    int
	// feasible: the gang would fit on the cluster's allocatable resources
	// if it were empty (a gang that can never fit must not hold others back).
	feasible bool
	// fitsOnRelease: the missing pods fit on free resources plus what the
	// elastic jobs the gang may shrink would give back (ShrinkElastic;
	// false when off or when the gang fits without it).
	fitsOnRelease bool
	// short describes, per task spec, what is missing.
	short []string
}

func (f *gangEstimate) fitsNow() bool { return f.placeable >= f.needed }

// estimateGang places the gang's missing pods, pservers first, on copies of
// the nodes' idle (and, for feasibility, allocatable) resources; when it
// does not fit and release is given (per node, what shrinking elastic jobs
// would give back), also on idle plus that.
func estimateGang(job *api.JobInfo, nodes []*api.NodeInfo, fallback bool, release func() map[string]*api.Resource) *gangEstimate {
	f := &gangEstimate{needed: int(job.MinAvailable - job.ReadyTaskNum())}
	if f.needed <= 0 {
		f.feasible = true
		return f
	}
	pending := missingPods(job, fallback)
	f.missing = pending
	for _, t := range pending {
		f.gpus += gpusOf(t.InitResreq)
	}
	if len(pending) < f.needed {
		f.short = append(f.short, fmt.Sprintf("%d pods of the gang are not created or not schedulable yet", f.needed-len(pending)))
	}
	f.placeable = greedyPlace(pending, nodes, func(n *api.NodeInfo) *api.Resource { return n.Idle }, &f.short)
	var ignored []string
	f.feasible = greedyPlace(pending, nodes, func(n *api.NodeInfo) *api.Resource { return n.Allocatable }, &ignored) == len(pending)
	if release != nil && !f.fitsNow() && f.feasible && len(pending) == f.needed {
		back := release()
		f.fitsOnRelease = len(back) > 0 && greedyPlace(pending, nodes, func(n *api.NodeInfo) *api.Resource {
			if r := back[n.Name]; r != nil {
				return n.Idle.Clone().Add(r)
			}
			return n.Idle
		}, &ignored) == f.needed
	}
	return f
}

// missingPods are the pending pods a gang still needs to reach
// minAvailable, in allocation order (pservers first).
func missingPods(job *api.JobInfo, fallback bool) []*api.TaskInfo {
	needed := int(job.MinAvailable - job.ReadyTaskNum())
	if needed <= 0 {
		return nil
	}
	pending := make([]*api.TaskInfo, 0, len(job.TaskStatusIndex[api.Pending]))
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if !t.SchGated && !t.InitResreq.IsEmpty() {
			pending = append(pending, t)
		}
	}
	sort.Slice(pending, func(i, j int) bool { return taskLess(pending[i], pending[j], fallback) })
	if len(pending) > needed {
		pending = pending[:needed]
	}
	return pending
}

// waiting reports whether a job is a gang still short of minAvailable.
func waiting(job *api.JobInfo) bool {
	return !job.IsReady() && len(job.TaskStatusIndex[api.Pending]) > 0
}

// starvationPolicy is what the scheduler arguments say about starvation:
// which gangs the guard covers and how long one may wait.
type starvationPolicy struct {
	after        time.Duration // StarvationAfter; 0 turns the guard off
	taskNameJobs bool          // StarvationTaskNameJobs
	// isPaddle: the session recognised the job as Paddle (by its mode
	// label or, with TaskNameFallback, its task names).
	isPaddle func(*api.JobInfo) bool
	// since: when the gang began to wait (waitingSince, once per session).
	since func(*api.JobInfo) time.Time
}

// guarded: the job may trigger the starvation guard and is subject to it.
// Only jobs the paddle job plugin marked (its pods carry the mode label), or,
// when the operator opts in, jobs recognised by task names alone: a plain
// job with a task named "worker" is neither held nor kept off reserved
// nodes.
func (s starvationPolicy) guarded(job *api.JobInfo) bool {
	if markedPaddle(job) {
		return true
	}
	return s.taskNameJobs && s.isPaddle(job)
}

// waitingSince is when the gang last began to wait: the later of its
// PodGroup's creation and the earliest creation among its pending pods.
// The PodGroup outlives a restart, its pods do not: when a job is stopped
// (a checkpointable job preempted, PodEvicted -> RestartJob), Volcano's job
// controller deletes its pods and creates new ones (pkg/controllers/job:
// killJob, then syncJob -> createJobPod), so a restarted gang has new
// pending pods under an old PodGroup. Measuring from the PodGroup alone
// would make it starve at once and stop another job in turn. A fresh gang
// is unchanged but for the controller's delay between creating the
// PodGroup and its pods (seconds, against a threshold of hours).
// It walks the gang's pending pods: sessionState.waitingSince keeps it
// once per session, since job ordering and every predicate call ask.
func waitingSince(job *api.JobInfo) time.Time {
	var first time.Time
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if t.Pod != nil && (first.IsZero() || t.Pod.CreationTimestamp.Time.Before(first)) {
			first = t.Pod.CreationTimestamp.Time
		}
	}
	return waitStart(job, first)
}

// waitStart is when a pod of the job created at podCreated began to wait:
// the later of that and the job's creation (see waitingSince).
func waitStart(job *api.JobInfo, podCreated time.Time) time.Time {
	if podCreated.After(job.CreationTimestamp.Time) {
		return podCreated
	}
	return job.CreationTimestamp.Time
}

// on: the threshold is set; 0 turns aging, the guard and what depends on
// them (SmallGangsFirst, the headroom) off.
func (s starvationPolicy) on() bool { return s.after > 0 }

// starving: a guarded gang (see guarded) still waiting that has waited
// StarvationAfter or longer (a cycle that runs when its threshold comes
// due sees it starve).
func (s starvationPolicy) starving(job *api.JobInfo, now time.Time) bool {
	if !s.on() || !waiting(job) || !s.guarded(job) {
		return false
	}
	return s.waitedOut(s.since(job), now)
}

// waitedOut: a wait that began at since has lasted StarvationAfter or
// longer at now; the one rule for the running gangs (starving) and the
// Pending ones the enqueue action admits (admissionOrder).
func (s starvationPolicy) waitedOut(since, now time.Time) bool {
	return now.Sub(since) >= s.after
}

// markedPaddle: a pod of the job carries the mode label the paddle job
// plugin sets on every pod it creates.
func markedPaddle(job *api.JobInfo) bool {
	for _, t := range job.Tasks {
		if t.Pod != nil {
			if _, ok := t.Pod.Labels[paddleapi.ModeLabel]; ok {
				return true
			}
		}
	}
	return false
}

// held is how many of the job's pods hold their node: bound or running,
// the statuses Volcano's actions may evict (api.PreemptableStatus).
func held(job *api.JobInfo) int {
	return len(job.TaskStatusIndex[api.Bound]) + len(job.TaskStatusIndex[api.Running])
}

// givesWay: job may lose pods to gang at all: never the gang itself, never
// a job of higher priority.
func givesWay(gang, job *api.JobInfo) bool {
	return job.UID != gang.UID && job.Priority <= gang.Priority
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

func olderJob(a, b *api.JobInfo) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.UID < b.UID
}
