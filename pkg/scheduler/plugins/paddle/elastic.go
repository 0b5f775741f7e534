package paddle

import (
	"sort"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// This file is elastic collective jobs as the scheduler sees them. An
// elastic job's minimum (MIN of Paddle's PADDLE_NNODES=MIN:MAX) is its
// trainer task's minAvailable, which is its PodGroup's minMember
// (JobInfo.MinAvailable); its pods above that minimum are pending until
// GPUs are free, and once running they are what a waiting gang may take
// back (ShrinkElastic): Paddle's elastic launcher re-forms the world
// without them (launch/controllers/collective.py:
// CollectiveElasticController), the job plugin re-creates them and they
// wait again.

// elasticJob: the job's trainers carry the elastic label the job plugin
// sets (paddleapi.ElasticLabel "true"; the job's etcd pod has another
// value and is never counted).
func elasticJob(job *api.JobInfo) bool { return anyOptedIn(job, paddleapi.ElasticLabel) }

func elasticTrainer(t *api.TaskInfo) bool { return optedIn(t, paddleapi.ElasticLabel) }

// surplus is how many of an elastic job's pods run above its minimum.
// Only pods that hold their node count (bound or running, the statuses
// Volcano's actions may evict: api.PreemptableStatus), not pods placed in
// this session: taking a running pod back because one just placed would
// replace it could leave the job below its minimum until that one starts.
// An eviction in this session (Releasing) lowers it at once.
func surplus(job *api.JobInfo) int {
	return max(0, held(job)-int(job.MinAvailable))
}

// growthTask: placing the pending task grows an elastic job that already
// has its minimum. Such a pod is opportunistic: it takes idle GPUs, never
// GPUs the starvation guard keeps for a gang (reservationPredicate), and
// a waiting gang goes before it (jobOrderFn).
func growthTask(job *api.JobInfo, t *api.TaskInfo) bool {
	return job != nil && elasticTrainer(t) && job.ReadyTaskNum() >= job.MinAvailable
}

// growing: the job is an elastic job at or above its minimum with pods
// still pending (it would grow).
func growing(job *api.JobInfo) bool {
	return job.IsReady() && len(job.TaskStatusIndex[api.Pending]) > 0 && elasticJob(job)
}

// releasable are, per elastic job, the running pods above its minimum that
// a waiting gang could take back: marked preemptable for Volcano
// (TaskInfo.Preemptable, from the volcano.sh/preemptable annotation), in
// the order they go (highest index first), at most surplus of them.
func releasable(job *api.JobInfo) []*api.TaskInfo {
	n := surplus(job)
	if n == 0 {
		return nil
	}
	var out []*api.TaskInfo
	for _, t := range job.Tasks {
		if elasticTrainer(t) && t.Preemptable && api.PreemptableStatus(t.Status) && t.NodeName != "" {
			out = append(out, t)
		}
	}
	leavingFirst(out)
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// keepElasticMinimum marks, for this session, the pods of each elastic
// job that would leave it below its minimum as not preemptable
// (TaskInfo.Preemptable, on the job's task and on its node's copy, which
// the preempt and reclaim actions read before they ask any plugin:
// actions/preempt, actions/reclaim). The job plugin marks every trainer
// of an elastic job preemptable, and a higher-priority job's victims come
// from priority's PreemptableFn alone while gang's is off, as Volcano
// ships it; this keeps every action and plugin at the job's minimum, not
// only paddle's levers. The pods above it (releasable: highest index
// first) stay preemptable. A checkpointable elastic job is left as it is:
// it may be stopped whole, and restarts from its checkpoint.
func keepElasticMinimum(ssn *framework.Session) {
	for _, job := range ssn.Jobs {
		if !elasticJob(job) || checkpointable(job) {
			continue
		}
		goes := map[api.TaskID]bool{}
		for _, t := range releasable(job) {
			goes[t.UID] = true
		}
		for _, t := range job.Tasks {
			if !elasticTrainer(t) || !t.Preemptable || !api.PreemptableStatus(t.Status) || goes[t.UID] {
				continue
			}
			keepTask(ssn, t)
		}
	}
}

// keepTask marks a task not preemptable for this session, on the job's
// task and on its node's copy (the actions read either).
func keepTask(ssn *framework.Session, t *api.TaskInfo) {
	t.Preemptable = false
	if n := ssn.Nodes[t.NodeName]; n != nil {
		if nt := n.Tasks[api.PodKey(t.Pod)]; nt != nil {
			nt.Preemptable = false
		}
	}
}

// leavingFirst orders an elastic job's pods above its minimum the way they
// go: highest index first (the last trainers the job plugin added).
func leavingFirst(ts []*api.TaskInfo) {
	sort.Slice(ts, func(a, b int) bool {
		ia, ib := volcanoIndex(ts[a]), volcanoIndex(ts[b])
		if ia != ib {
			return ia > ib
		}
		return ts[a].Name > ts[b].Name
	})
}

// releasableFor is what each node would have free for gang if the
// elastic jobs it may shrink (shrinkable, among donors) gave back their
// pods above minimum: the resources of those pods, per node.
func releasableFor(gang *api.JobInfo, donors map[api.JobID]*api.JobInfo) map[string]*api.Resource {
	out := map[string]*api.Resource{}
	for _, j := range donors {
		if !shrinkable(gang, j) {
			continue
		}
		for _, t := range releasable(j) {
			if out[t.NodeName] == nil {
				out[t.NodeName] = api.EmptyResource()
			}
			out[t.NodeName].Add(t.Resreq)
		}
	}
	return out
}

// shrinkable: gang may take back job's pods above minimum through
// Volcano's preempt action, which takes victims of the preemptor's own
// queue only (actions/preempt: Execute's filter). Never a job of higher
// priority, never the gang itself (givesWay).
func shrinkable(gang, job *api.JobInfo) bool {
	return job.Queue == gang.Queue && givesWay(gang, job) && elasticJob(job)
}
