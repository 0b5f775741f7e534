package paddle

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Layout is a Paddle job resolved from its Volcano Job and the plugin
// arguments: which task plays which role and every peer's stable address.
// It is a pure function of the Job spec, so a pod re-created after a failure
// gets exactly the env its predecessor had.
type Layout struct {
	Namespace, Job string
	Mode           paddleapi.Mode
	Args           *Args
	// Roles present in the job; Trainer is always set.
	PServer, Trainer, Heter *RoleTask
}

// RoleTask is the task that plays one Paddle role.
type RoleTask struct {
	Role      paddleapi.Role
	TaskIndex int
	TaskName  string
	Replicas  int
	Hosts     []string
	// gpus is the most nvidia.com/gpu any container of the task asks for.
	gpus int64
}

// Endpoints are Hosts joined with the port.
func (r *RoleTask) Endpoints(port int) []string {
	if r == nil {
		return nil
	}
	out := make([]string, len(r.Hosts))
	for i, h := range r.Hosts {
		out[i] = paddleapi.Endpoint(h, port)
	}
	return out
}

// roleTask returns the role played by the named task, nil for other tasks
// (a job may carry helper tasks such as a TensorBoard).
func (l *Layout) roleTask(task string) *RoleTask {
	for _, r := range []*RoleTask{l.PServer, l.Trainer, l.Heter} {
		if r != nil && r.TaskName == task {
			return r
		}
	}
	return nil
}

// resolveLayout finds the role tasks and the mode. It reports every problem
// with the field to change.
func resolveLayout(job *batch.Job, a *Args) (*Layout, field.ErrorList) {
	var errs field.ErrorList
	l := &Layout{Namespace: job.Namespace, Job: job.Name, Args: a}

	pick := func(role paddleapi.Role, flagName, explicit string, conventions []string) *RoleTask {
		if explicit != "" {
			i := taskIndex(job, explicit)
			if i < 0 {
				errs = append(errs, field.Invalid(argsPath.Key(flagName), explicit,
					fmt.Sprintf("no task is named %q; tasks are %s", explicit, taskNames(job))))
				return nil
			}
			return newRoleTask(job, role, i)
		}
		var found []int
		for _, n := range conventions {
			if i := taskIndex(job, n); i >= 0 {
				found = append(found, i)
			}
		}
		switch len(found) {
		case 0:
			return nil
		case 1:
			return newRoleTask(job, role, found[0])
		default:
			errs = append(errs, field.Invalid(field.NewPath("spec", "tasks"), taskNames(job),
				fmt.Sprintf("tasks %q and %q both look like the %s task; say which one with %s=<task>",
					job.Spec.Tasks[found[0]].Name, job.Spec.Tasks[found[1]].Name, role, flagName)))
			return nil
		}
	}
	l.PServer = pick(paddleapi.RolePServer, "--ps-task", a.PServerTask, paddleapi.DefaultPServerTaskNames)
	l.Trainer = pick(paddleapi.RoleTrainer, "--trainer-task", a.TrainerTask, paddleapi.DefaultTrainerTaskNames)
	l.Heter = pick(paddleapi.RoleHeter, "--heter-task", a.HeterTask, paddleapi.DefaultHeterTaskNames)
	if len(errs) > 0 {
		return nil, errs
	}
	for _, pair := range [][2]*RoleTask{{l.PServer, l.Trainer}, {l.PServer, l.Heter}, {l.Trainer, l.Heter}} {
		if pair[0] != nil && pair[1] != nil && pair[0].TaskName == pair[1].TaskName {
			errs = append(errs, field.Invalid(argsPath, pair[0].TaskName,
				fmt.Sprintf("task %q is named for both the %s and the %s role; give each role its own task", pair[0].TaskName, pair[0].Role, pair[1].Role)))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}

	tasksPath := field.NewPath("spec", "tasks")
	if l.Trainer == nil {
		return nil, append(errs, field.Required(tasksPath,
			fmt.Sprintf("a Paddle job needs a trainer task: name one %s, or point --trainer-task at it; tasks are %s",
				strings.Join(paddleapi.DefaultTrainerTaskNames, " or "), taskNames(job))))
	}
	if l.Trainer.Replicas < 1 {
		errs = append(errs, field.Invalid(tasksPath.Index(l.Trainer.TaskIndex).Child("replicas"), l.Trainer.Replicas,
			fmt.Sprintf("task %q trains, so it needs at least 1 replica", l.Trainer.TaskName)))
	}
	hasPS := l.PServer != nil && l.PServer.Replicas > 0
	switch a.Mode {
	case modeAuto:
		switch {
		case hasPS && l.Heter != nil:
			l.Mode = paddleapi.ModeHeterPS
		case hasPS:
			l.Mode = paddleapi.ModePS
		default:
			l.Mode = paddleapi.ModeCollective
		}
	default:
		l.Mode = paddleapi.Mode(a.Mode)
	}
	modePath := argsPath.Key("--mode")
	switch l.Mode {
	case paddleapi.ModePS, paddleapi.ModeHeterPS:
		if !hasPS {
			errs = append(errs, field.Invalid(modePath, a.Mode,
				fmt.Sprintf("mode %s needs a pserver task with at least 1 replica (named %s, or set --ps-task); tasks are %s",
					l.Mode, strings.Join(paddleapi.DefaultPServerTaskNames, " or "), taskNames(job))))
		}
		if l.Mode == paddleapi.ModeHeterPS && (l.Heter == nil || l.Heter.Replicas < 1) {
			errs = append(errs, field.Invalid(modePath, a.Mode,
				"mode heter-ps needs a heter task with at least 1 replica (named heter, or set --heter-task)"))
		}
		if l.Mode == paddleapi.ModePS && l.Heter != nil {
			errs = append(errs, field.Invalid(modePath, a.Mode,
				fmt.Sprintf("task %q is a heter trainer task, which only heter-ps mode uses; use --mode=heter-ps or remove the task", l.Heter.TaskName)))
		}
	case paddleapi.ModeCollective:
		if l.PServer != nil {
			errs = append(errs, field.Invalid(modePath, a.Mode,
				fmt.Sprintf("task %q is a pserver task, but collective jobs have no parameter servers; use --mode=ps or remove the task", l.PServer.TaskName)))
		}
		if l.Heter != nil {
			errs = append(errs, field.Invalid(modePath, a.Mode,
				fmt.Sprintf("task %q is a heter trainer task, which only heter-ps mode uses", l.Heter.TaskName)))
		}
		if a.Gloo != 0 {
			errs = append(errs, field.Invalid(argsPath.Key("--gloo"), a.Gloo,
				"gloo rendezvous through pserver 0 exists only in parameter-server mode; remove --gloo for collective jobs (Paddle's collective launch sets up its own store)"))
		}
	}
	return l, errs
}

func newRoleTask(job *batch.Job, role paddleapi.Role, i int) *RoleTask {
	ts := job.Spec.Tasks[i]
	r := &RoleTask{Role: role, TaskIndex: i, TaskName: ts.Name, Replicas: int(ts.Replicas)}
	for ci := range ts.Template.Spec.Containers {
		r.gpus = max(r.gpus, gpuCount(&ts.Template.Spec.Containers[ci]))
	}
	for idx := 0; idx < r.Replicas; idx++ {
		r.Hosts = append(r.Hosts, hostOf(job, &ts, idx))
	}
	return r
}

// hostOf is a replica's DNS name. A single-replica task may fix its hostname
// in the template (validation rejects that for more replicas).
func hostOf(job *batch.Job, ts *batch.TaskSpec, idx int) string {
	if h := ts.Template.Spec.Hostname; h != "" {
		return h + "." + job.Name
	}
	return paddleapi.Host(job.Name, ts.Name, idx)
}

func taskIndex(job *batch.Job, name string) int {
	for i, t := range job.Spec.Tasks {
		if t.Name == name {
			return i
		}
	}
	return -1
}

func taskNames(job *batch.Job) string {
	names := make([]string, 0, len(job.Spec.Tasks))
	for _, t := range job.Spec.Tasks {
		names = append(names, t.Name)
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// gpuCount is what a container asks of nvidia.com/gpu (limits win, as for
// extended resources they must equal requests).
func gpuCount(c *v1.Container) int64 {
	if q, ok := c.Resources.Limits[gpuResource]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Requests[gpuResource]; ok {
		return q.Value()
	}
	return 0
}

const gpuResource v1.ResourceName = "nvidia.com/gpu"
