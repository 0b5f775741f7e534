package paddlejob

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// ValidateUpdate is the rule for what may change while a Paddle job exists.
// The admission webhook applies it to every UPDATE and the controller
// (OnJobUpdate) to the sizes it started the job with, so the two cannot
// disagree.
//
//   - An update that leaves the spec alone (labels, annotations,
//     finalizers, the steps of a deletion) is never refused, even for a job
//     the current rules consider invalid: refusing it would make the job
//     impossible to label or to delete with --cascade=foreground.
//   - The replicas of a Paddle role may not change while the job exists:
//     every process got the peer lists of the old size when it started.
//     (A job that was never valid never started, so it is judged alone.)
//   - Any other change must leave a valid job.
func ValidateUpdate(old, job *batch.Job, a *Args) field.ErrorList {
	if SpecUnchanged(old, job) {
		return nil
	}
	l, errs := ValidateJob(job, a)
	if len(errs) > 0 {
		return errs
	}
	if was := ReadArgs(old.Spec.Plugins[PluginName]); l.Elastic != nil || was.Elastic() {
		return elasticReplicaChanges(old, was, job, l)
	}
	if was, oldErrs := ValidateJob(old, a); len(oldErrs) > 0 || was == nil {
		return nil
	}
	return replicaChanges(old, job, l)
}

// SpecUnchanged: the update changes only metadata, or is a step of the
// job's deletion. Such an update is never refused (ValidateUpdate), even
// before the plugin arguments are looked at.
func SpecUnchanged(old, job *batch.Job) bool {
	return job.DeletionTimestamp != nil || equality.Semantic.DeepEqual(old.Spec, job.Spec)
}

// replicaChanges reports, per field, every Paddle role task whose replicas
// differ between old and the job resolved as l.
func replicaChanges(old, job *batch.Job, l *Layout) field.ErrorList {
	var errs field.ErrorList
	for _, r := range l.roles() {
		oi := taskIndex(old, r.TaskName)
		if oi < 0 || int(old.Spec.Tasks[oi].Replicas) == r.Replicas {
			continue
		}
		errs = append(errs, field.Forbidden(field.NewPath("spec", "tasks").Index(r.TaskIndex).Child("replicas"),
			fmt.Sprintf("task %q (Paddle %s) cannot change from %d to %d replicas while the job exists: every Paddle process got the peer lists of the old size when it started; delete the job and create it with the new size",
				r.TaskName, r.Role, old.Spec.Tasks[oi].Replicas, r.Replicas)))
	}
	return errs
}

// ParseReplicaSummary reads back Layout.ReplicaSummary ("ps=2,worker=4").
func ParseReplicaSummary(s string) map[string]int32 {
	out := map[string]int32{}
	for _, part := range strings.Split(s, ",") {
		i := strings.LastIndexByte(part, '=')
		if i < 0 {
			continue
		}
		if n, err := strconv.ParseInt(part[i+1:], 10, 32); err == nil {
			out[part[:i]] = int32(n)
		}
	}
	return out
}

// RestoreSizes puts the recorded replicas (ParseReplicaSummary) back and keeps the minimums
// within them (a user who raised replicas may have raised minAvailable too;
// a gang minimum above its pods would never be met).
func RestoreSizes(job *batch.Job, sizes map[string]int32) {
	var total int32
	for i := range job.Spec.Tasks {
		ts := &job.Spec.Tasks[i]
		if n, ok := sizes[ts.Name]; ok {
			ts.Replicas = n
		}
		if ts.MinAvailable != nil && *ts.MinAvailable > ts.Replicas {
			m := ts.Replicas
			ts.MinAvailable = &m
		}
		total += ts.Replicas
	}
	if job.Spec.MinAvailable > total {
		job.Spec.MinAvailable = total
	}
}

// elasticReplicaChanges is the resize rule of an elastic job (l, valid):
// the trainers' replicas may change within [MIN, MAX] while it runs, MIN,
// MAX and everything else the launchers were started with may not. A
// launcher's MIN:MAX is fixed when its pod is created, and one that sees
// more peers than its MAX ends (controllers/master.py: wait_peer_ready).
func elasticReplicaChanges(old *batch.Job, was Spec, job *batch.Job, l *Layout) field.ErrorList {
	if len(was.Errs) > 0 {
		return nil // never ran: judged alone
	}
	oldArgs := was.Args
	if was, errs := ValidateJob(old, oldArgs); len(errs) > 0 || was == nil {
		return nil
	}
	tasks := field.NewPath("spec", "tasks")
	switch {
	case !oldArgs.Elastic.Enabled():
		return field.ErrorList{field.Forbidden(argsPath.Key("--elastic-max"),
			"a running job cannot become elastic: its launchers were started with a fixed world; delete the job and create it with --elastic-max")}
	case l.Elastic == nil:
		return field.ErrorList{field.Forbidden(argsPath.Key("--elastic-max"),
			"a running elastic job cannot become fixed-size: its launchers were started with an etcd master; delete the job and create it without --elastic-max")}
	}
	var errs field.ErrorList
	if oldArgs.Elastic != l.Args.Elastic {
		errs = append(errs, field.Forbidden(argsPath,
			"the elastic arguments cannot change while the job exists: every launcher got PADDLE_NNODES, PADDLE_ELASTIC_TIMEOUT and PADDLE_MAX_RESTART when its pod was created; delete the job and create it with the new arguments"))
	}
	ti := l.Trainer.TaskIndex
	if oi := taskIndex(old, l.Trainer.TaskName); oi >= 0 {
		if om := old.Spec.Tasks[oi].MinAvailable; om != nil && int(*om) != l.Elastic.Min {
			errs = append(errs, field.Forbidden(tasks.Index(ti).Child("minAvailable"),
				fmt.Sprintf("the trainer task's minAvailable is MIN of PADDLE_NNODES=%d:%d, which every launcher got when its pod was created; it cannot change from %d to %d while the job exists",
					*om, l.Elastic.Max, *om, l.Elastic.Min)))
		}
	}
	// An elastic job is collective: the trainers are its only role.
	return errs
}
