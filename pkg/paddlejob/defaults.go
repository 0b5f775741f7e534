package paddlejob

import (
	"fmt"
	"strings"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// PatchOperation is one JSON patch (RFC 6902) operation, as admission
// webhooks return them.
type PatchOperation struct {
	Op    string      `json:"op"`
	Path  string      `json:"path"`
	Value interface{} `json:"value,omitempty"`
}

// Defaulted is one default the mutating admission applies: the patch, and
// the warning that tells the user what was added and how to opt out, so
// that no field of the spec is set behind the user's back. A label that
// only restates the spec (modeLabel) comes without one.
type Defaulted struct {
	Patch   PatchOperation
	Warning string
}

// Defaults are the defaults the mutating admission applies to a valid
// Paddle job (l is its layout from ValidateJob):
//
// A parameter-server job whose trainer task has no TaskCompleted policy
// gets TaskCompleted -> CompleteJob there. Parameter servers never exit on
// their own, so without it the job runs (and holds its nodes) forever after
// training ends: the seed's CTR walkthrough shows exactly that. Volcano
// raises TaskCompleted when every pod of the task succeeded
// (volcano.sh/volcano pkg/controllers/job/job_controller_handler.go:
// updatePod), so the pservers are stopped once all trainers are done.
// --trainer-completes-job=false turns it off. A task with an AnyEvent ("*")
// policy is left alone: Volcano refuses "*" next to other events.
//
// A --checkpointable job without a PodEvicted policy gets PodEvicted ->
// RestartJob (checkpointRestart).
//
// Every Paddle job gets the label paddleapi.ModeLabel with its mode
// (modeLabel), silently.
func Defaults(job *batch.Job, a *Args, l *Layout) []Defaulted {
	var out []Defaulted
	if d, ok := trainerCompletesJob(job, a, l); ok {
		out = append(out, d)
	}
	if d, ok := checkpointRestart(job, a); ok {
		out = append(out, d)
	}
	if d, ok := modeLabel(job, l); ok {
		out = append(out, d)
	}
	return out
}

// modeLabel labels the job with its Paddle mode. Volcano's job controller
// copies a job's labels onto its PodGroup (pkg/controllers/job/
// job_controller_actions.go: createOrUpdatePodGroup), so the scheduler
// plugin knows a Paddle gang while the enqueue action has not yet admitted
// it and it has no pods to carry the job plugin's pod labels.
func modeLabel(job *batch.Job, l *Layout) (Defaulted, bool) {
	if job.Labels[paddleapi.ModeLabel] == string(l.Mode) {
		return Defaulted{}, false
	}
	if job.Labels == nil {
		return Defaulted{Patch: PatchOperation{Op: "add", Path: "/metadata/labels", Value: map[string]string{paddleapi.ModeLabel: string(l.Mode)}}}, true
	}
	// RFC 6901: "/" in a key is written "~1".
	return Defaulted{Patch: PatchOperation{Op: "add", Path: "/metadata/labels/" + strings.ReplaceAll(paddleapi.ModeLabel, "/", "~1"), Value: string(l.Mode)}}, true
}

// trainerCompletesJob is the TaskCompleted -> CompleteJob default of
// Defaults.
func trainerCompletesJob(job *batch.Job, a *Args, l *Layout) (Defaulted, bool) {
	if !a.TrainerCompletesJob || (l.Mode != paddleapi.ModePS && l.Mode != paddleapi.ModeHeterPS) {
		return Defaulted{}, false
	}
	ti := l.Trainer.TaskIndex
	policies := job.Spec.Tasks[ti].Policies
	if handles(policies, bus.TaskCompletedEvent) {
		return Defaulted{}, false
	}
	op := addPolicy(fmt.Sprintf("/spec/tasks/%d/policies", ti), policies, bus.TaskCompletedEvent, bus.CompleteJobAction)
	return Defaulted{Patch: op, Warning: fmt.Sprintf("spec.tasks[%d].policies: added TaskCompleted -> CompleteJob on the trainer task %q, so that the parameter servers stop when every trainer has succeeded; give the task a TaskCompleted policy of your own, or pass --trainer-completes-job=false to the plugin, to keep the job running",
		ti, l.Trainer.TaskName)}, true
}

// handles reports whether policies already answer event: a policy of the
// event, or an AnyEvent one (Volcano refuses "*" next to other events).
func handles(policies []batch.LifecyclePolicy, event bus.Event) bool {
	return hasPolicy(policies, event, "") || hasPolicy(policies, bus.AnyEvent, "")
}

// addPolicy is the patch that adds event -> action to policies, the list at
// path: appended to it, or the whole list when it is empty (a JSON patch
// cannot append to a list that is absent).
func addPolicy(path string, policies []batch.LifecyclePolicy, event bus.Event, action bus.Action) PatchOperation {
	p := batch.LifecyclePolicy{Event: event, Action: action}
	if len(policies) == 0 {
		return PatchOperation{Op: "add", Path: path, Value: []batch.LifecyclePolicy{p}}
	}
	return PatchOperation{Op: "add", Path: path + "/-", Value: p}
}

// checkpointRestart: a --checkpointable job without a PodEvicted policy
// (job-level or on a task, or an AnyEvent one) gets PodEvicted ->
// RestartJob at admission. The scheduler takes such a job's pods on one
// node at a time (Volcano's preempt and reclaim actions evict per node):
// without the policy Volcano's job controller only re-creates the evicted
// pods, and the rest of the world keeps running without them.
func checkpointRestart(job *batch.Job, a *Args) (Defaulted, bool) {
	if !a.Checkpointable {
		return Defaulted{}, false
	}
	if handles(job.Spec.Policies, bus.PodEvictedEvent) {
		return Defaulted{}, false
	}
	for _, t := range job.Spec.Tasks {
		if handles(t.Policies, bus.PodEvictedEvent) {
			return Defaulted{}, false
		}
	}
	op := addPolicy("/spec/policies", job.Spec.Policies, bus.PodEvictedEvent, bus.RestartJobAction)
	maxRetry := job.Spec.MaxRetry
	if maxRetry == 0 {
		maxRetry = 3 // Volcano's default (its job mutating webhook)
	}
	return Defaulted{Patch: op, Warning: fmt.Sprintf("spec.policies: added PodEvicted -> RestartJob, so that the --checkpointable job restarts whole from its checkpoint when the scheduler preempts it; every preemption counts as one of its spec.maxRetry (%d) restarts and paddle's scheduler plugin stops the job only while its next restart stays below it; raise it if the job may be preempted more often", maxRetry)}, true
}
