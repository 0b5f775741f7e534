package paddle

import (
	"strconv"

	"volcano.sh/volcano/pkg/scheduler/api"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// roleOf returns a task's Paddle role and index: from the labels the job
// plugin sets, else (with fallback) from Volcano's task-spec name and index,
// the names paddle-operator and Volcano's CTR example use.
func roleOf(task *api.TaskInfo, fallback bool) (paddleapi.Role, int, bool) {
	if task.Pod != nil {
		if r, ok := task.Pod.Labels[paddleapi.RoleLabel]; ok {
			idx, err := strconv.Atoi(task.Pod.Labels[paddleapi.IndexLabel])
			if err != nil {
				idx = volcanoIndex(task)
			}
			switch paddleapi.Role(r) {
			case paddleapi.RolePServer, paddleapi.RoleTrainer, paddleapi.RoleHeter:
				return paddleapi.Role(r), idx, true
			}
			return "", 0, false
		}
	}
	if !fallback {
		return "", 0, false
	}
	if r, ok := paddleapi.RoleFromTaskName(task.TaskRole); ok {
		return r, volcanoIndex(task), true
	}
	return "", 0, false
}

// volcanoIndex is the replica index Volcano's job controller records on
// the pod; -1 when unknown.
func volcanoIndex(task *api.TaskInfo) int {
	if task.Pod == nil {
		return -1
	}
	s, ok := task.Pod.Labels[batch.TaskIndex]
	if !ok {
		s = task.Pod.Annotations[batch.TaskIndex]
	}
	i, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return i
}

// jobMode classifies a job: the mode label of its pods, else the roles of
// its tasks. ok is false for jobs that are not Paddle jobs.
func jobMode(job *api.JobInfo, fallback bool) (paddleapi.Mode, bool) {
	var hasPS, hasHeter, hasTrainer bool
	for _, t := range job.Tasks {
		if t.Pod != nil {
			if m, ok := t.Pod.Labels[paddleapi.ModeLabel]; ok {
				switch paddleapi.Mode(m) {
				case paddleapi.ModePS, paddleapi.ModeHeterPS, paddleapi.ModeCollective:
					return paddleapi.Mode(m), true
				}
			}
		}
		r, _, ok := roleOf(t, fallback)
		if !ok {
			continue
		}
		switch r {
		case paddleapi.RolePServer:
			hasPS = true
		case paddleapi.RoleHeter:
			hasHeter = true
		case paddleapi.RoleTrainer:
			hasTrainer = true
		}
	}
	switch {
	case hasPS && hasHeter:
		return paddleapi.ModeHeterPS, true
	case hasPS:
		return paddleapi.ModePS, true
	case hasTrainer:
		return paddleapi.ModeCollective, true
	}
	return "", false
}

// roleRank orders roles for allocation: servers first (trainers connect to
// them and are placed next to them), heter trainers next, trainers last.
func roleRank(r paddleapi.Role) int {
	switch r {
	case paddleapi.RolePServer:
		return 0
	case paddleapi.RoleHeter:
		return 1
	default:
		return 2
	}
}

// optedIn: the pod carries an opt-in label the job plugin sets to "true"
// (paddleapi.ElasticLabel on elastic trainers, paddleapi.CheckpointableLabel
// on every pod of a --checkpointable job). What the scheduler may do to a
// job beyond gang placement (grow, shrink, preempt) needs that opt-in.
func optedIn(t *api.TaskInfo, label string) bool {
	return t.Pod != nil && t.Pod.Labels[label] == "true"
}

// anyOptedIn: one of the job's pods carries the opt-in label.
func anyOptedIn(job *api.JobInfo, label string) bool {
	for _, t := range job.Tasks {
		if optedIn(t, label) {
			return true
		}
	}
	return false
}

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

// checkpointable: the job's pods carry the opt-in the job plugin sets for
// --checkpointable.
func checkpointable(job *api.JobInfo) bool {
	return anyOptedIn(job, paddleapi.CheckpointableLabel)
}

// checkpointableTask: the pod carries that opt-in; the job plugin sets it
// on every pod of the job, so one pod tells for its job.
func checkpointableTask(t *api.TaskInfo) bool { return optedIn(t, paddleapi.CheckpointableLabel) }
