package paddle

import (
	"time"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/plugins/util"
)

// This file is who may preempt and what it may take: the hooks paddle
// registers for Volcano's preempt and reclaim actions (JobStarvingFn,
// PreemptableFn, ReclaimableFn). Both actions push a job as a preemptor
// only while every JobStarvingFn of the first tier that has one says so
// (framework/session_plugins.go: JobStarving), and commit its evictions
// only when the whole gang is then placed (actions/preempt: Execute,
// ssn.JobPipelined), so a gang never shrinks or stops a job for nothing.
//
// Paddle decides alone in its tier: Volcano intersects the victims of the
// plugins of one tier, and a plugin that offers none passes the question
// to the next tier, so the scheduler configuration must turn off the
// other plugins' preemptable and reclaimable functions (priority's and
// gang's in paddle's tier; drf's and proportion's below it), and the job
// plugin marks the pods of jobs that did not opt in with
// volcano.sh/preemptable: "false", which both actions honour before any
// plugin is asked (TaskInfo.Preemptable). docs/scheduler-plugin.md,
// "Elastic jobs and preemption", shows the configuration.

// levers are what a job may take from others this session; zero for a
// job that may take nothing.
func (p *paddlePlugin) levers(gang *api.JobInfo) victimPolicy {
	vp := victimPolicy{jobs: p.ssn.Jobs, attained: p.attained}
	if gang == nil || !waiting(gang) || !p.guarded(gang) || !p.estimate(gang).feasible {
		return vp
	}
	// A gang that fits on free resources is placed by the allocate action;
	// taking pods for it would only waste their work.
	if p.estimate(gang).fitsNow() {
		return vp
	}
	// Only where some job could give way: otherwise the actions would run
	// predicates and node scoring for every pending pod of every waiting
	// gang, every session, for nothing.
	vj := p.victimJobs()
	// Within the gang's queue (the preempt action), shrinking only for a
	// gang that then fits: one that would not fit even with every elastic
	// pod of its queue above minimum gone (a starving whole-node gang
	// beside 1-GPU elastic jobs) made the preempt action evict such pods
	// session after session without starting, and the jobs grew back into
	// the GPUs each time (the flex replay of PCIe 68100: 3,605 resizes per
	// run). A starving gang may still stop checkpointable jobs. The
	// estimate counts what the gang's queue would give back (shrinkable:
	// fitsOnRelease implies such a job gives way); elastic jobs of other
	// queues are the reclaim action's, which takes from queues over their
	// share only (reclaimableFn), as before.
	vp.shrink = p.args.ShrinkElastic && (p.estimate(gang).fitsOnRelease || otherQueueGivesWay(vj.elastic, gang))
	vp.checkpoint = p.args.PreemptCheckpointable && p.starving(gang) && anyGivesWay(vj.checkpointable, gang)
	return vp
}

// victimJobs are the session's jobs a lever could take from: elastic jobs
// with pods above their minimum, checkpointable jobs with pods that hold
// their node.
type victimJobs struct {
	elastic, checkpointable map[api.JobID]*api.JobInfo
}

// anyGivesWay: some job of jobs gives way to gang (givesWay).
func anyGivesWay(jobs map[api.JobID]*api.JobInfo, gang *api.JobInfo) bool {
	for _, j := range jobs {
		if givesWay(gang, j) {
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

// victimJobs is computed once per session.
func (p *paddlePlugin) victimJobs() *victimJobs {
	p.victimsOnce.Do(func() {
		vj := &victimJobs{elastic: map[api.JobID]*api.JobInfo{}, checkpointable: map[api.JobID]*api.JobInfo{}}
		for id, j := range p.ssn.Jobs {
			if surplus(j) > 0 && elasticJob(j) {
				vj.elastic[id] = j
			}
			if held(j) > 0 && checkpointable(j) {
				vj.checkpointable[id] = j
			}
		}
		p.victimJobsOf = vj
	})
	return p.victimJobsOf
}

// jobStarvingFn: only a gang some lever applies to may preempt or reclaim.
// A running elastic job that would grow never does (it takes idle GPUs
// only), and neither does a job paddle does not guard.
func (p *paddlePlugin) jobStarvingFn(obj interface{}) bool {
	job, ok := obj.(*api.JobInfo)
	if !ok {
		return false
	}
	vp := p.levers(job)
	return vp.shrink || vp.checkpoint
}

// preemptableFn offers victims in the preemptor's queue (the preempt
// action offers no others).
func (p *paddlePlugin) preemptableFn(preemptor *api.TaskInfo, preemptees []*api.TaskInfo) ([]*api.TaskInfo, int) {
	return p.victims(preemptor, preemptees, nil), util.Permit
}

// reclaimableFn offers victims of other queues, only from a queue at or
// over its deserved share (ssn.Overused, proportion's), as Volcano's
// proportion plugin would: the reclaim action itself checks only the
// reclaiming queue (actions/reclaim: Execute).
func (p *paddlePlugin) reclaimableFn(reclaimer *api.TaskInfo, reclaimees []*api.TaskInfo) ([]*api.TaskInfo, int) {
	overused := func(q api.QueueID) bool {
		qi, ok := p.ssn.Queues[q]
		return ok && p.ssn.Overused(qi)
	}
	return p.victims(reclaimer, reclaimees, overused), util.Permit
}

// victims groups the offered pods by node (the actions offer one node's
// pods at a time) and chooses on each.
func (p *paddlePlugin) victims(preemptor *api.TaskInfo, preemptees []*api.TaskInfo, otherQueue func(api.QueueID) bool) []*api.TaskInfo {
	gang := p.ssn.Jobs[preemptor.Job]
	vp := p.levers(gang)
	if !vp.shrink && !vp.checkpoint {
		return nil
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
		n, ok := p.ssn.Nodes[name]
		if !ok {
			continue
		}
		out = append(out, vp.choose(preemptor, gang, n.FutureIdle(), byNode[name])...)
	}
	return out
}

// attained is a job's attained GPU time at the session's clock, computed
// once per session.
func (p *paddlePlugin) attained(job *api.JobInfo) time.Duration {
	p.state.mu.Lock()
	defer p.state.mu.Unlock()
	if d, ok := p.state.attained[job.UID]; ok {
		return d
	}
	d := attainedGPUTime(job, now())
	p.state.attained[job.UID] = d
	return d
}
