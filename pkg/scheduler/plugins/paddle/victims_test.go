package paddle

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"volcano.sh/volcano/pkg/scheduler/api"

	tb "github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// victimJob is a job of running pods on one node for victim tests.
type victimJob struct {
	name     string
	min      int32
	priority int32
	queue    string
	// kind: "elastic", "checkpointable", "both" or "" (opted in to
	// neither; its pods carry no volcano.sh/preemptable, which Volcano
	// takes as preemptable).
	kind string
	gpus []int         // GPUs of each pod, index order
	ran  time.Duration // how long its pods have run
	// age: how long ago its PodGroup was created (zero: not set); a job
	// restarted from a checkpoint keeps its PodGroup, its pods are new.
	age time.Duration
}

func (v victimJob) build(at time.Time) *api.JobInfo {
	var tasks []*api.TaskInfo
	for i, g := range v.gpus {
		p := tb.MakePod().Namespace("ns").Name(fmt.Sprintf("%s-trainer-%d", v.name, i)).PodGroup(v.name).
			Task("trainer", i).Paddle(paddleapi.RoleTrainer, i, paddleapi.ModeCollective).
			CPU("1").GPUs(g).Node("n0").Started(at.Add(-v.ran))
		switch v.kind {
		case "elastic":
			p.Elastic()
		case "checkpointable":
			p.Checkpointable()
		case "both":
			p.Elastic().Checkpointable()
		}
		tasks = append(tasks, api.NewTaskInfo(p.Obj()))
	}
	j := api.NewJobInfo(api.JobID("ns/"+v.name), tasks...)
	j.Name, j.Namespace, j.MinAvailable, j.Priority = v.name, "ns", v.min, v.priority
	j.Queue = api.QueueID("default")
	if v.age > 0 {
		j.CreationTimestamp.Time = at.Add(-v.age)
	}
	if v.queue != "" {
		j.Queue = api.QueueID(v.queue)
	}
	return j
}

// Victims on one full 8-GPU node for a gang's pod: elastic jobs' pods above
// their minimum first, then whole checkpointable jobs by attained GPU time,
// only as much as the pod needs, never a pod of a job that opted in to
// neither, never below an elastic job's minimum.
func TestVictimChoice(t *testing.T) {
	at := time.Now()
	cases := []struct {
		name       string
		jobs       []victimJob
		need       int // GPUs of the gang's pod
		free       int // GPUs free on the node
		shrink     bool
		checkpoint bool
		queues     func(api.QueueID) bool // reclaim: other queues allowed
		// stoppable: which checkpointable jobs the stop guards allow
		// (stopping.go); nil: every one.
		stoppable func(*api.JobInfo) bool
		want      []string
	}{
		{name: "attained GPU time counts from the pods' start: a job restarted an hour ago gives way last", need: 4, checkpoint: true,
			jobs: []victimJob{{name: "restarted", min: 1, kind: "checkpointable", gpus: []int{4}, ran: time.Hour, age: 30 * time.Hour},
				{name: "ck", min: 1, kind: "checkpointable", gpus: []int{4}, ran: 5 * time.Hour, age: 6 * time.Hour}},
			want: []string{"ck-trainer-0"}},
		{name: "elastic above minimum before a checkpointable job", need: 2, shrink: true, checkpoint: true,
			jobs: []victimJob{{name: "el", min: 1, kind: "elastic", gpus: []int{2, 2}, ran: time.Hour},
				{name: "ck", min: 1, kind: "checkpointable", gpus: []int{4}, ran: 9 * time.Hour}},
			want: []string{"el-trainer-1"}},
		{name: "an elastic job shrinks only as far as needed, highest index first", need: 2, free: 2, shrink: true,
			jobs: []victimJob{{name: "el", min: 1, kind: "elastic", gpus: []int{2, 2, 2}, ran: time.Hour},
				{name: "other", min: 1, gpus: []int{2}}},
			want: []string{"el-trainer-2"}},
		{name: "never below the minimum: then a checkpointable job, whole", need: 4, shrink: true, checkpoint: true,
			jobs: []victimJob{{name: "el", min: 1, kind: "elastic", gpus: []int{2, 2}, ran: time.Hour},
				{name: "ck", min: 2, kind: "checkpointable", gpus: []int{2, 2}, ran: time.Hour}},
			want: []string{"ck-trainer-0", "ck-trainer-1", "el-trainer-1"}},
		{name: "the checkpointable job with the most attained GPU time goes first", need: 4, checkpoint: true,
			jobs: []victimJob{{name: "young", min: 1, kind: "checkpointable", gpus: []int{4}, ran: 2 * time.Hour}, // 8 GPU-hours
				{name: "old", min: 2, kind: "checkpointable", gpus: []int{2, 2}, ran: 3 * time.Hour}}, // 12 GPU-hours
			want: []string{"old-trainer-0", "old-trainer-1"}},
		{name: "attained GPU time counts GPUs, not only time", need: 2, checkpoint: true,
			jobs: []victimJob{{name: "long", min: 1, kind: "checkpointable", gpus: []int{1}, ran: 10 * time.Hour}, // 10
				{name: "wide", min: 1, kind: "checkpointable", gpus: []int{4}, ran: 3 * time.Hour}}, // 12
			want: []string{"wide-trainer-0"}},
		{name: "a job that opted in to nothing is never offered", need: 2, shrink: true, checkpoint: true,
			jobs: []victimJob{{name: "plain", min: 1, gpus: []int{4, 4}, ran: 20 * time.Hour}}},
		{name: "an elastic job at its minimum gives nothing", need: 2, shrink: true,
			jobs: []victimJob{{name: "el", min: 2, kind: "elastic", gpus: []int{4, 4}, ran: time.Hour}}},
		{name: "checkpointable jobs only for a starving gang", need: 2, shrink: true,
			jobs: []victimJob{{name: "ck", min: 1, kind: "checkpointable", gpus: []int{4, 4}, ran: time.Hour}}},
		{name: "nothing when even every offered pod would not make room", need: 8, shrink: true, checkpoint: true,
			jobs: []victimJob{{name: "el", min: 1, kind: "elastic", gpus: []int{2, 2}, ran: time.Hour},
				{name: "plain", min: 1, gpus: []int{4}}}},
		{name: "never a job of higher priority", need: 2, shrink: true, checkpoint: true,
			jobs: []victimJob{{name: "el", min: 1, priority: 10, kind: "elastic", gpus: []int{2, 2}, ran: time.Hour},
				{name: "ck", min: 1, priority: 10, kind: "checkpointable", gpus: []int{4}, ran: time.Hour}}},
		{name: "an elastic job that is checkpointable too: above minimum first, then whole", need: 6, shrink: true, checkpoint: true,
			jobs: []victimJob{{name: "both", min: 2, kind: "both", gpus: []int{2, 2, 2, 2}, ran: time.Hour}},
			want: []string{"both-trainer-0", "both-trainer-1", "both-trainer-2", "both-trainer-3"}},
		{name: "preempt never takes from another queue", need: 2, shrink: true, checkpoint: true,
			jobs: []victimJob{{name: "el", queue: "q2", min: 1, kind: "elastic", gpus: []int{2, 2}, ran: time.Hour}}},
		{name: "a job the stop guards protect is never offered: the next by attained GPU time goes", need: 4, checkpoint: true,
			stoppable: func(j *api.JobInfo) bool { return j.Name != "long" },
			jobs: []victimJob{{name: "long", kind: "checkpointable", gpus: []int{4}, ran: 9 * time.Hour},
				{name: "short", kind: "checkpointable", gpus: []int{4}, ran: time.Hour}},
			want: []string{"short-trainer-0"}},
		{name: "reclaim takes from another queue over its share", need: 2, shrink: true,
			queues: func(q api.QueueID) bool { return q == "q2" },
			jobs: []victimJob{{name: "el", queue: "q2", min: 1, kind: "elastic", gpus: []int{2, 2}, ran: time.Hour},
				{name: "el3", queue: "q3", min: 1, kind: "elastic", gpus: []int{2, 2}, ran: 5 * time.Hour}},
			want: []string{"el-trainer-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gang := victimJob{name: "gang", min: 1, gpus: []int{tc.need}}.build(at)
			jobs := map[api.JobID]*api.JobInfo{gang.UID: gang}
			var preemptees []*api.TaskInfo
			for _, v := range tc.jobs {
				j := v.build(at)
				jobs[j.UID] = j
				for _, t := range j.Tasks {
					preemptees = append(preemptees, t)
				}
			}
			var preemptor *api.TaskInfo
			for _, t := range gang.Tasks {
				preemptor = t
			}
			stoppable := tc.stoppable
			if stoppable == nil {
				stoppable = func(*api.JobInfo) bool { return true }
			}
			vp := victimPolicy{shrink: tc.shrink, checkpoint: tc.checkpoint, stoppable: stoppable, jobs: jobs, victimQueue: tc.queues,
				attained: func(j *api.JobInfo) time.Duration { return attainedGPUTime(j, at) }}
			free := api.EmptyResource()
			free.SetScalar(gpuResource, float64(tc.free*1000))
			var got []string
			for _, v := range vp.choose(preemptor, gang, free, preemptees) {
				got = append(got, v.Name)
			}
			sort.Strings(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("victims %v, want %v", got, tc.want)
			}
		})
	}
}
