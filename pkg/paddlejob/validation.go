package paddlejob

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// maxEnvStringBytes is MAX_ARG_STRLEN (32 pages): Linux refuses to exec a
// process when one "NAME=value" string of its environment is longer, and a
// list from the job's ConfigMap reaches Paddle as such a string.
const maxEnvStringBytes = 131072

// ValidateJob resolves the job's Paddle layout and checks everything the
// plugin needs to produce pods that pass every check Paddle makes. Errors
// name the field and say how to fix it.
func ValidateJob(job *batch.Job, a *Args) (*Layout, field.ErrorList) {
	return ValidateJobContext(context.Background(), job, a)
}

// ValidateJobContext is ValidateJob that stops when ctx ends (the
// admission request's budget, or its client leaving), with an error
// that says so.
func ValidateJobContext(ctx context.Context, job *batch.Job, a *Args) (*Layout, field.ErrorList) {
	if errs := validateLimits(job, a); len(errs) > 0 { // limits.go: before anything is built per replica
		return nil, errs
	}
	if errs := BorrowedStoreLabels(job); len(errs) > 0 { // store.go: no template makes a pod look like an etcd store
		return nil, errs
	}
	// The layout, built completely: roles and mode, then the elastic
	// bounds. resolveLayout and resolveElastic refuse a spec they cannot
	// build a layout from.
	l, errs := resolveLayout(job, a)
	if l == nil || len(errs) > 0 {
		return nil, errs
	}
	if errs := resolveElastic(job, l); len(errs) > 0 { // elastic.go
		return nil, errs
	}
	// Then validated: each role's task, the host names of every
	// incarnation, the lists' sizes (which decide the lists the pods are
	// rendered with), and the template's own values of the variables the
	// pods are rendered with (env.go).
	for _, r := range l.roles() {
		errs = append(errs, validateRoleTask(job, l, r)...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	errs = append(errs, validateHostnames(job)...)
	facts, sizeErrs := checkListSizes(l)
	if errs = append(errs, sizeErrs...); len(errs) > 0 {
		return nil, errs
	}
	l = decideLayout(l, facts)
	if errs = validateTemplateEnv(ctx, job, l); len(errs) > 0 {
		return nil, errs
	}
	return l, nil
}

// NewInvalidJobError formats validation errors as one message that names
// the job; the admission webhook and the controller path share it.
func NewInvalidJobError(job *batch.Job, errs field.ErrorList) *InvalidJobError {
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	return &InvalidJobError{Job: job.Namespace + "/" + job.Name, Errs: errs,
		msg: fmt.Sprintf("paddle plugin rejected job %s/%s: %s", job.Namespace, job.Name, strings.Join(msgs, "; "))}
}

// InvalidJobError is returned by the hooks for a job the plugin will not
// run; nothing has been created for it.
type InvalidJobError struct {
	Job  string
	Errs field.ErrorList
	msg  string
}

func (e *InvalidJobError) Error() string { return e.msg }

func validateRoleTask(job *batch.Job, l *Layout, r *RoleTask) field.ErrorList {
	var errs field.ErrorList
	ts := &job.Spec.Tasks[r.TaskIndex]
	spec := field.NewPath("spec", "tasks").Index(r.TaskIndex).Child("template", "spec")
	if h := ts.Template.Spec.Hostname; h != "" && r.Replicas > 1 {
		errs = append(errs, field.Invalid(spec.Child("hostname"), h,
			fmt.Sprintf("task %q has %d replicas, which would all share this hostname and DNS name; remove hostname (each pod then gets its own name, %s)",
				r.TaskName, r.Replicas, paddleapi.Host(job.Name, r.TaskName, 0, 0))))
	}
	if sd := ts.Template.Spec.Subdomain; sd != "" && sd != job.Name {
		errs = append(errs, field.Invalid(spec.Child("subdomain"), sd,
			fmt.Sprintf("the plugin publishes pod names under the headless Service %q; remove subdomain or set it to %q", job.Name, job.Name)))
	}
	if ts.Template.Spec.HostNetwork && !l.Args.HostNetwork {
		errs = append(errs, field.Invalid(spec.Child("hostNetwork"), true,
			"pods on the host network share the node's ports, so two replicas on one node would collide on PADDLE_PORT; remove hostNetwork, or opt in with --host-network and make sure replicas land on different nodes"))
	}
	if r.Role == paddleapi.RolePServer && l.Mode != paddleapi.ModeCollective && l.fluidPort(r.Replicas-1) > 65535 {
		errs = append(errs, field.Invalid(argsPath.Key("--port"), l.Args.Port,
			fmt.Sprintf("pserver i listens on --port+i in the Fluid convention of the CTR images (PADDLE_PSERVERS), and %d pservers from port %d go past 65535; lower --port",
				r.Replicas, l.Args.Port)))
	}
	if len(ts.Template.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), "a task needs a container to run Paddle in"))
	}
	return errs
}

// validateHostnames: every pod's hostname, <job>-<task>-<index> or the
// template's, must stay a DNS label (63 characters) in every incarnation
// Volcano can reach, which appends up to "-v2147483647" after a restart of
// the whole job (paddleapi.WithIncarnation). Linear in the tasks: the last
// index is the longest.
func validateHostnames(job *batch.Job) field.ErrorList {
	var errs field.ErrorList
	for i := range job.Spec.Tasks {
		ts := &job.Spec.Tasks[i]
		if ts.Replicas < 1 {
			continue
		}
		base, path, what := paddleapi.PodName(job.Name, ts.Name, int(ts.Replicas)-1), field.NewPath("metadata", "name"), "job-task-index"
		if h := ts.Template.Spec.Hostname; h != "" {
			base, path, what = h, field.NewPath("spec", "tasks").Index(i).Child("template", "spec", "hostname"), "the template's hostname"
		}
		worst := base + strings.Repeat("9", paddleapi.MaxIncarnationSuffixLen)
		if msgs := validation.IsDNS1123Label(worst); len(msgs) > 0 {
			errs = append(errs, field.Invalid(path, base,
				fmt.Sprintf("pod host name %q (%s) must stay a DNS label (at most 63 characters) after a restart of the whole job appends up to %d characters (-v<job version>, so that restarted pods get fresh DNS names); keep it at most %d characters: shorten the job name or task %q",
					base, what, paddleapi.MaxIncarnationSuffixLen, validation.DNS1123LabelMaxLength-paddleapi.MaxIncarnationSuffixLen, ts.Name)))
		}
	}
	return errs
}

// checkListSizes: every list reaches Paddle as one environment string,
// which Linux caps at MAX_ARG_STRLEN; a longer one makes every container
// fail at exec ("argument list too long") after the whole gang was
// scheduled. Sizes are those of the incarnation with the longest names. A
// list a mode cannot do without rejects the job; an optional one (a PS job
// of thousands of trainers) is to be left out of the pods, and the entry
// points that read it are unavailable for that job (Warnings says which).
// It reads l and writes nothing.
//
// The ConfigMap holding the lists stays far below its 1 MiB limit as a
// consequence: at most six lists of at most MAX_ARG_STRLEN each
// (TestConfigMapBound).
func checkListSizes(l *Layout) (listFacts, field.ErrorList) {
	const fix = "the lists grow with replicas and name length: use shorter job and task names, or fewer replicas"
	var errs field.ErrorList
	var f listFacts
	optional := l.optionalLists()
	worst := l.worstCase()
	worst.sizes = listFacts{}
	tooLong := func(w *Layout, key string) (int, bool) {
		n := len(key) + 1 + len(w.list(key))
		return n, n > maxEnvStringBytes
	}
	for _, key := range l.lists() {
		n, over := tooLong(worst, key)
		if !over {
			continue
		}
		switch {
		case optional[key]:
			if f.omitted == nil {
				f.omitted = map[string]bool{}
			}
			f.omitted[key] = true
			continue
		case key == listBarrierHosts && l.Mode == paddleapi.ModePS:
			f.narrowBarrier = true
			narrow := worst.withLists(listFacts{narrowBarrier: true})
			if n, over = tooLong(narrow, key); !over {
				continue
			}
		}
		errs = append(errs, field.Invalid(l.listPath(key), l.ReplicaSummary(),
			fmt.Sprintf("%s would be %d bytes, over the %d bytes Linux allows one environment string (MAX_ARG_STRLEN), so no container of the job could start; %s",
				key, n, maxEnvStringBytes, fix)))
	}
	return f, errs
}

// decideLayout is the layout the pods are built from, given what the
// checks found: lists too long are left out, and a too-long barrier list
// names the pservers only. l itself is left as it was.
func decideLayout(l *Layout, f listFacts) *Layout { return l.withLists(f) }

// validateTemplateEnv checks variables the template sets itself. The plugin
// never overwrites them, so one that disagrees with the plugin's value would
// break a check inside Paddle (a pserver's POD_IP:PADDLE_PORT must be in the
// list, ids must match list positions...): reject it with the value to use.
// A value that changes with the incarnation (a host name, a list) cannot be
// fixed in a template at all.
//
// Linear in replicas x (Paddle variables + the template's Paddle entries):
// each replica's env is built once for all containers, lists are held by
// reference, and validateLimits has refused a Paddle name given twice in a
// container and more than MaxEnvPerContainer entries. It stops when ctx ends.
func validateTemplateEnv(ctx context.Context, job *batch.Job, l *Layout) field.ErrorList {
	var errs field.ErrorList
	next := l.At(l.Incarnation + 1)
	for _, r := range l.roles() {
		ts := &job.Spec.Tasks[r.TaskIndex]
		spec := field.NewPath("spec", "tasks").Index(r.TaskIndex).Child("template", "spec")
		type entry struct {
			e    *v1.EnvVar
			path *field.Path
			done bool // reported, or not a variable of this mode
		}
		var entries []*entry
		for ci := range ts.Template.Spec.Containers {
			c := &ts.Template.Spec.Containers[ci]
			for ei := range c.Env {
				if contractEnvNames[c.Env[ei].Name] {
					entries = append(entries, &entry{e: &c.Env[ei], path: spec.Child("containers").Index(ci).Child("env").Index(ei)})
				}
			}
		}
		// The first replica whose value differs is enough to report.
		for idx := 0; idx < r.Replicas && len(entries) > 0; idx++ {
			if idx%256 == 0 && ctx.Err() != nil {
				return append(errs, field.InternalError(spec.Child("containers"),
					fmt.Errorf("checking the env of %d replicas of task %q stopped: %w", r.Replicas, r.TaskName, ctx.Err())))
			}
			env, nextEnv := l.roleEnv(r, idx), next.roleEnv(r, idx)
			left := entries[:0]
			for _, en := range entries {
				if err := checkTemplateVar(job, r, idx, en.e, en.path, env, nextEnv); err != nil {
					errs = append(errs, err)
				} else if _, ok := envValue(env, en.e.Name); ok {
					left = append(left, en)
				} // else: not a variable of this mode (e.g. PADDLE_MASTER in a PS job): the user's value is left alone
			}
			entries = left
		}
	}
	return errs
}

// checkTemplateVar compares one template variable with the value of
// replica idx; nil when it agrees or the mode has no such variable.
func checkTemplateVar(job *batch.Job, r *RoleTask, idx int, e *v1.EnvVar, path *field.Path, env, nextEnv []envVar) *field.Error {
	w, ok := envValue(env, e.Name)
	if !ok || w.field != "" {
		return nil // a field of the pod (an elastic pod's POD_IP): elastic.go checks the template's
	}
	need := strconv.Quote(w.value)
	if w.list != "" {
		need = "the job's list (" + w.list + ")"
	}
	restart := ""
	if w.list != "" || w != mustEnvValue(nextEnv, e.Name) {
		restart = "; it names the job's pods, whose host names change when the whole job restarts (-v<job version>), so no template value fits"
	}
	have := strconv.Quote(e.Value)
	if e.ValueFrom != nil {
		have = "from " + valueFromString(e.ValueFrom)
	}
	if e.ValueFrom == nil && restart == "" && e.Value == w.value {
		return nil
	}
	return field.Invalid(path, e.Name,
		fmt.Sprintf("%s is %s here, but Paddle needs %s in pod %s%s; remove it from the template (the plugin sets it)%s",
			e.Name, have, need, paddleapi.PodName(job.Name, r.TaskName, idx), restart, envHint(e.Name)))
}

func envValue(env []envVar, name string) (envVar, bool) {
	for _, e := range env {
		if e.name == name {
			return e, true
		}
	}
	return envVar{}, false
}

func mustEnvValue(env []envVar, name string) envVar {
	v, _ := envValue(env, name)
	return v
}

func envHint(name string) string {
	switch name {
	case EnvPort:
		return "; to choose the port, pass --port=<port> to the plugin"
	case EnvPortsNum:
		return "; to choose the range, pass --ports-per-pod=<n> to the plugin"
	case EnvWithGloo:
		return "; to turn gloo on, pass --gloo=1 (or 2) to the plugin"
	case EnvHeterDeviceType:
		return "; to choose the device, pass --heter-device to the plugin"
	}
	return ""
}

func valueFromString(s *v1.EnvVarSource) string {
	switch {
	case s.FieldRef != nil:
		return "fieldRef " + s.FieldRef.FieldPath
	case s.ResourceFieldRef != nil:
		return "resourceFieldRef " + s.ResourceFieldRef.Resource
	case s.ConfigMapKeyRef != nil:
		return "configMap " + s.ConfigMapKeyRef.Name
	case s.SecretKeyRef != nil:
		return "secret " + s.SecretKeyRef.Name
	}
	return "valueFrom"
}

// Validate is ValidateJob for the job's arguments s, with the argument or
// validation errors as one *InvalidJobError that names the job.
func (s Spec) Validate(job *batch.Job) (*Layout, error) {
	if len(s.Errs) > 0 {
		return nil, NewInvalidJobError(job, s.Errs)
	}
	l, errs := ValidateJob(job, s.Args)
	if len(errs) > 0 {
		return nil, NewInvalidJobError(job, errs)
	}
	return l, nil
}
