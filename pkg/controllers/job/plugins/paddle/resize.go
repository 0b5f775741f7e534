package paddle

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

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
func holdResize(client kubernetes.Interface, args *paddlejob.Args, job *batch.Job) bool {
	was, ok := job.Status.ControlledResources[paddlejob.LayoutKey]
	if !ok {
		return false
	}
	sizes := paddlejob.ParseReplicaSummary(was)
	changed := false
	for i := range job.Spec.Tasks {
		if n, ok := sizes[job.Spec.Tasks[i].Name]; ok && n != job.Spec.Tasks[i].Replicas {
			changed = true
		}
	}
	if !changed || elasticResizeAllowed(args, job) {
		return false
	}
	old := job.DeepCopy()
	for i := range old.Spec.Tasks {
		if n, ok := sizes[old.Spec.Tasks[i].Name]; ok {
			old.Spec.Tasks[i].Replicas = n
		}
	}
	// Why the new size cannot apply now, in the words the webhook uses.
	errs := paddlejob.ValidateUpdate(old, job, args)
	paddlejob.RestoreSizes(job, sizes)
	msg := fmt.Sprintf("replicas of Paddle roles changed from %s while the job runs; the running gang keeps that size, because every Paddle process got the peer lists of it when it started. The new size takes effect when the job next restarts as a whole (a RestartJob policy, or vcctl job suspend then resume); to apply it now, delete the job and create it again",
		was)
	if len(errs) > 0 {
		msg += ". " + errs.ToAggregate().Error()
	}
	if job.Status.State.Reason != paddlejob.ResizeHeldReason || job.Status.State.Message != msg {
		klog.InfoS("Holding a running Paddle job at its size", "job", klog.KObj(job), "sizes", was)
		eventRecorder(client).Event(job, v1.EventTypeWarning, paddlejob.ResizeHeldReason, msg)
		reportState(context.TODO(), client, job, paddlejob.ResizeHeldReason, msg)
	}
	return true
}

// elasticResizeAllowed is holdResize's question for an elastic job: the
// trainers' replicas changed within [MIN, MAX] and nothing else the
// launchers depend on did. Volcano then creates and deletes pods as for
// any job (syncJob), and the survivors keep running: Paddle re-forms the
// world itself.
func elasticResizeAllowed(args *paddlejob.Args, job *batch.Job) bool {
	if !args.Elastic.Enabled() {
		return false
	}
	l, errs := paddlejob.ValidateJob(job, args)
	if len(errs) > 0 || l.Elastic == nil {
		return false // out of [MIN, MAX]: held like any resize, with the reason
	}
	if job.Status.ControlledResources != nil {
		job.Status.ControlledResources[paddlejob.LayoutKey] = l.ReplicaSummary()
	}
	return true
}
