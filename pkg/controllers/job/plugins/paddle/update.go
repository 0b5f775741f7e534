package paddle

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// ResizeHeldReason is the Job status reason (and Warning event reason)
// when the controller keeps a running Paddle job at its old size.
const ResizeHeldReason = "PaddleResizeHeld"

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
	if l.Elastic != nil || IsElastic(old) {
		return elasticReplicaChanges(old, job, l) // elastic.go
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

// parseReplicaSummary reads back Layout.ReplicaSummary ("ps=2,worker=4").
func parseReplicaSummary(s string) map[string]int32 {
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

// holdResize handles, in the controller, a change of a Paddle role's
// replicas that reached it (no webhook, or a namespace the webhook skips).
//
// Refusing it would get the job killed: Volcano retries a sync whose plugin
// fails and, after --max-requeue-num retries, terminates the job
// (volcano.sh/volcano pkg/controllers/job/job_controller.go:
// handleJobError). Instead the controller keeps running the gang at the
// size it started with: Volcano hands OnJobUpdate the copy of the job it
// then syncs pods and the PodGroup from (job_controller_actions.go:
// syncJob, initOnJobUpdate), so putting the recorded replicas back into
// that copy makes Volcano neither create nor delete pods. The job gets a
// Warning event and its status reason says so. The new size is used when
// the job next restarts as a whole gang: killJob runs OnJobDelete, which
// forgets the recorded size.
//
// It reports whether it held the job at its recorded size.
func (p *jobPlugin) holdResize(job *batch.Job) bool {
	was, ok := job.Status.ControlledResources[layoutKey]
	if !ok {
		return false
	}
	sizes := parseReplicaSummary(was)
	changed := false
	for i := range job.Spec.Tasks {
		if n, ok := sizes[job.Spec.Tasks[i].Name]; ok && n != job.Spec.Tasks[i].Replicas {
			changed = true
		}
	}
	if !changed || p.elasticResizeAllowed(job) { // elastic.go
		return false
	}
	old := job.DeepCopy()
	for i := range old.Spec.Tasks {
		if n, ok := sizes[old.Spec.Tasks[i].Name]; ok {
			old.Spec.Tasks[i].Replicas = n
		}
	}
	// Why the new size cannot apply now, in the words the webhook uses.
	errs := ValidateUpdate(old, job, p.args)
	restoreSizes(job, sizes)
	msg := fmt.Sprintf("replicas of Paddle roles changed from %s while the job runs; the running gang keeps that size, because every Paddle process got the peer lists of it when it started. The new size takes effect when the job next restarts as a whole (a RestartJob policy, or vcctl job suspend then resume); to apply it now, delete the job and create it again",
		was)
	if len(errs) > 0 {
		msg += ". " + errs.ToAggregate().Error()
	}
	if job.Status.State.Reason != ResizeHeldReason || job.Status.State.Message != msg {
		klog.InfoS("Holding a running Paddle job at its size", "job", klog.KObj(job), "sizes", was)
		eventRecorder(p.client.KubeClients).Event(job, v1.EventTypeWarning, ResizeHeldReason, msg)
		reportState(context.TODO(), p.client.KubeClients, job, ResizeHeldReason, msg)
	}
	return true
}

// restoreSizes puts the recorded replicas back and keeps the minimums
// within them (a user who raised replicas may have raised minAvailable too;
// a gang minimum above its pods would never be met).
func restoreSizes(job *batch.Job, sizes map[string]int32) {
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

// layoutCacheArgs extends the layout cache key (cache.go keys on UID,
// generation and arguments) with every task's replicas: while a resize is
// held, the controller resolves the recorded sizes under the same
// generation as the new spec, and the restart that applies the new sizes
// must not get the held layout back from the cache.
func layoutCacheArgs(raw []string, job *batch.Job) []string {
	var b strings.Builder
	b.WriteString("\x00replicas")
	for i := range job.Spec.Tasks {
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(int(job.Spec.Tasks[i].Replicas)))
	}
	return append(raw[:len(raw):len(raw)], b.String())
}
