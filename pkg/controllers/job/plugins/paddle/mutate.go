package paddle

import (
	"fmt"

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
func Defaults(job *batch.Job, a *Args, l *Layout) []PatchOperation {
	if !a.TrainerCompletesJob || (l.Mode != paddleapi.ModePS && l.Mode != paddleapi.ModeHeterPS) {
		return nil
	}
	ti := l.Trainer.TaskIndex
	policies := job.Spec.Tasks[ti].Policies
	if hasPolicy(policies, bus.TaskCompletedEvent, "") || hasPolicy(policies, bus.AnyEvent, "") {
		return nil
	}
	p := batch.LifecyclePolicy{Event: bus.TaskCompletedEvent, Action: bus.CompleteJobAction}
	if len(policies) == 0 {
		return []PatchOperation{{Op: "add", Path: fmt.Sprintf("/spec/tasks/%d/policies", ti), Value: []batch.LifecyclePolicy{p}}}
	}
	return []PatchOperation{{Op: "add", Path: fmt.Sprintf("/spec/tasks/%d/policies/-", ti), Value: p}}
}
