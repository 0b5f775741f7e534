package paddle

import (
	"sort"
	"time"

	"volcano.sh/volcano/pkg/scheduler/api"
)

// This file is which running pods paddle offers a waiting gang on one
// node (victimPolicy.choose): first the pods of elastic jobs above their
// minimum, then whole jobs that opted in as checkpointable, the one with
// the most attained GPU time first; never a pod of a job that opted in to
// neither. Volcano's preempt and reclaim actions ask every plugin of a
// tier for victims among a node's pods and take the intersection
// (framework/session_plugins.go: Preemptable, Reclaimable); they then
// evict from it until the preemptor fits (actions/preempt: normalPreempt,
// actions/reclaim: reclaimForTask). Offering only as much as the
// preemptor needs, in this order, is what makes the order hold.

// victimPolicy is what a gang may take: the levers that apply to it and
// the session's jobs, as values (it never holds the plugin).
type victimPolicy struct {
	// shrink: pods of elastic jobs above their minimum (ShrinkElastic),
	// of the jobs restartable allows (stopping.go: a checkpointable one
	// restarts when it shrinks).
	shrink      bool
	restartable func(*api.JobInfo) bool
	// checkpoint: jobs that opted in as checkpointable, those stoppable
	// says may be stopped for the gang (stopping.go).
	checkpoint bool
	stoppable  func(*api.JobInfo) bool
	jobs       map[api.JobID]*api.JobInfo
	// attained is a job's attained GPU time (attainedGPUTime).
	attained func(*api.JobInfo) time.Duration
	// victimQueue says whether pods of a queue other than the gang's may
	// be taken (reclaim: only from queues at or over their deserved
	// share); nil for preempt, which never looks at other queues.
	victimQueue func(api.QueueID) bool
}

// attainedGPUTime is the GPU time a job's running pods have had: per pod
// its GPUs times how long it has run (Tiresias' attained service, NSDI'19).
func attainedGPUTime(job *api.JobInfo, at time.Time) time.Duration {
	var sum time.Duration
	for _, t := range job.Tasks {
		if !api.PreemptableStatus(t.Status) {
			continue
		}
		if g := gpusOf(t.Resreq); g > 0 {
			sum += time.Duration(g) * at.Sub(taskStart(t, at))
		}
	}
	return sum
}

// candidate: t may be offered at all. Volcano's own filters come first
// (the pod is marked preemptable and running: api.PreemptableStatus);
// never a pod of a job that does not give way to the gang (givesWay).
func (vp victimPolicy) candidate(gang *api.JobInfo, t *api.TaskInfo) (*api.JobInfo, bool) {
	job := vp.jobs[t.Job]
	if job == nil || !givesWay(gang, job) || !t.Preemptable || !api.PreemptableStatus(t.Status) {
		return nil, false
	}
	if job.Queue != gang.Queue && (vp.victimQueue == nil || !vp.victimQueue(job.Queue)) {
		return nil, false
	}
	return job, true
}

// choose returns the victims on one node for the preemptor, a pod of
// gang, given what the node has free once its leaving pods are gone and
// before the pods placed this session arrive (NodeInfo.FutureIdle, what
// the actions compare with). It offers nothing when even every offered
// pod would not make room.
func (vp victimPolicy) choose(preemptor *api.TaskInfo, gang *api.JobInfo, free *api.Resource, preemptees []*api.TaskInfo) []*api.TaskInfo {
	if !vp.shrink && !vp.checkpoint {
		return nil
	}
	c := vp.classify(gang, preemptees)
	elastic, whole, elasticJobs, wholeJobs := c.elastic, c.whole, c.elasticJobs, c.wholeJobs
	vp.byAttained(elasticJobs)
	vp.byAttained(wholeJobs)

	room := free.Clone()
	fits := func() bool { return preemptor.InitResreq.LessEqual(room, api.Zero) }
	var out []*api.TaskInfo
	// Elastic pods one at a time: a job shrinks only as far as needed.
	for _, j := range elasticJobs {
		for _, t := range elastic[j.UID] {
			if fits() {
				return out
			}
			out = append(out, t)
			room.Add(t.Resreq)
		}
	}
	// Checkpointable jobs whole: once one of its pods goes the job
	// restarts from its checkpoint anyway (PodEvicted -> RestartJob). An
	// elastic job that is checkpointable too comes here with all its pods
	// on the node, those above minimum already taken.
	taken := map[api.TaskID]bool{}
	for _, t := range out {
		taken[t.UID] = true
	}
	for _, j := range wholeJobs {
		if fits() {
			return out
		}
		for _, t := range whole[j.UID] {
			if !taken[t.UID] {
				out = append(out, t)
				room.Add(t.Resreq)
			}
		}
	}
	if !fits() {
		return nil
	}
	return out
}

// classified are the offered pods a lever may take, by job: elastic
// trainers of jobs above their minimum (at most each job's pods above it,
// highest index first), and the pods of checkpointable jobs.
type classified struct {
	elastic, whole         map[api.JobID][]*api.TaskInfo
	elasticJobs, wholeJobs []*api.JobInfo
}

func (vp victimPolicy) classify(gang *api.JobInfo, preemptees []*api.TaskInfo) classified {
	c := classified{elastic: map[api.JobID][]*api.TaskInfo{}, whole: map[api.JobID][]*api.TaskInfo{}}
	for _, t := range preemptees {
		job, ok := vp.candidate(gang, t)
		if !ok {
			continue
		}
		if vp.shrink && elasticTrainer(t) && surplus(job) > 0 && (vp.restartable == nil || vp.restartable(job)) {
			if len(c.elastic[job.UID]) == 0 {
				c.elasticJobs = append(c.elasticJobs, job)
			}
			c.elastic[job.UID] = append(c.elastic[job.UID], t)
		}
		if vp.checkpoint && checkpointableTask(t) && vp.stoppable(job) {
			if len(c.whole[job.UID]) == 0 {
				c.wholeJobs = append(c.wholeJobs, job)
			}
			c.whole[job.UID] = append(c.whole[job.UID], t)
		}
	}
	// An elastic job gives at most its pods above minimum (surplus counts
	// the job's pods on every node, and goes down as the actions evict),
	// highest index first.
	for _, j := range c.elasticJobs {
		ts := c.elastic[j.UID]
		leavingFirst(ts)
		c.elastic[j.UID] = ts[:min(len(ts), surplus(j))]
	}
	return c
}

// eligible is every offered pod a lever may take for gang, across nodes,
// without choosing how many: for actions that size the eviction
// themselves (Volcano v1.15's gangPreempt and gangReclaim, which evict
// whole bundles of a job until the gang fits).
func (vp victimPolicy) eligible(gang *api.JobInfo, candidates []*api.TaskInfo) []*api.TaskInfo {
	if !vp.shrink && !vp.checkpoint {
		return nil
	}
	c := vp.classify(gang, candidates)
	in := map[api.TaskID]bool{}
	for _, ts := range c.elastic {
		for _, t := range ts {
			in[t.UID] = true
		}
	}
	for _, ts := range c.whole {
		for _, t := range ts {
			in[t.UID] = true
		}
	}
	var out []*api.TaskInfo
	for _, t := range candidates {
		if in[t.UID] {
			out = append(out, t)
		}
	}
	return out
}

// byAttained sorts jobs by attained GPU time, most first: the job that has
// had the most GPU time gives way first (ties: older UID order).
func (vp victimPolicy) byAttained(jobs []*api.JobInfo) {
	sort.SliceStable(jobs, func(a, b int) bool {
		ga, gb := vp.attained(jobs[a]), vp.attained(jobs[b])
		if ga != gb {
			return ga > gb
		}
		return jobs[a].UID < jobs[b].UID
	})
}

// victimJobs are the session's jobs a lever could take from: elastic jobs
// with pods above their minimum, checkpointable jobs with pods that hold
// their node.
type victimJobs struct {
	elastic, checkpointable map[api.JobID]*api.JobInfo
}

// findVictimJobs are the jobs a lever could take from.
func findVictimJobs(jobs map[api.JobID]*api.JobInfo) *victimJobs {
	vj := &victimJobs{elastic: map[api.JobID]*api.JobInfo{}, checkpointable: map[api.JobID]*api.JobInfo{}}
	for id, j := range jobs {
		if surplus(j) > 0 && elasticJob(j) {
			vj.elastic[id] = j
		}
		if held(j) > 0 && checkpointable(j) {
			vj.checkpointable[id] = j
		}
	}
	return vj
}
