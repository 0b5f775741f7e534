package paddle

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Limits on what a pod can carry. Linux refuses to exec a process when one
// "NAME=value" string exceeds MAX_ARG_STRLEN (32 pages: 131072 bytes), and
// the whole environment plus arguments must fit in a quarter of the stack
// limit (2 MiB with the usual 8 MiB); we leave half of that to the user.
const (
	maxEnvStringBytes = 131072
	maxInjectedBytes  = 1 << 20
)

// ValidateJob resolves the job's Paddle layout and checks everything the
// plugin needs to produce pods that pass every check Paddle makes. Errors
// name the field and say how to fix it.
func ValidateJob(job *batch.Job, a *Args) (*Layout, field.ErrorList) {
	if errs := validateLimits(job, a); len(errs) > 0 { // limits.go: before anything is built per replica
		return nil, errs
	}
	l, errs := resolveLayout(job, a)
	if l == nil || len(errs) > 0 {
		return nil, errs
	}
	if msgs := validation.IsDNS1123Label(job.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), job.Name,
			"the job name is the pods' DNS subdomain (the headless Service name), so it must be a DNS label: "+strings.Join(msgs, "; ")))
	}
	for _, r := range l.roles() {
		errs = append(errs, validateRoleTask(job, l, r)...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	errs = append(errs, validateTemplateEnv(job, l)...)
	errs = append(errs, validateEnvSize(l)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return l, nil
}

func (l *Layout) roles() []*RoleTask {
	var out []*RoleTask
	for _, r := range []*RoleTask{l.PServer, l.Trainer, l.Heter} {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

func validateRoleTask(job *batch.Job, l *Layout, r *RoleTask) field.ErrorList {
	var errs field.ErrorList
	ts := &job.Spec.Tasks[r.TaskIndex]
	spec := field.NewPath("spec", "tasks").Index(r.TaskIndex).Child("template", "spec")
	if h := ts.Template.Spec.Hostname; h != "" && r.Replicas > 1 {
		errs = append(errs, field.Invalid(spec.Child("hostname"), h,
			fmt.Sprintf("task %q has %d replicas, which would all share this hostname and DNS name; remove hostname (each pod then gets its own name, %s)",
				r.TaskName, r.Replicas, paddleapi.Host(job.Name, r.TaskName, 0))))
	}
	if sd := ts.Template.Spec.Subdomain; sd != "" && sd != job.Name {
		errs = append(errs, field.Invalid(spec.Child("subdomain"), sd,
			fmt.Sprintf("the plugin publishes pod names under the headless Service %q; remove subdomain or set it to %q", job.Name, job.Name)))
	}
	if ts.Template.Spec.HostNetwork && !l.Args.HostNetwork {
		errs = append(errs, field.Invalid(spec.Child("hostNetwork"), true,
			"pods on the host network share the node's ports, so two replicas on one node would collide on PADDLE_PORT; remove hostNetwork, or opt in with --host-network and make sure replicas land on different nodes"))
	}
	if r.Replicas > 0 {
		longest := r.Hosts[r.Replicas-1]
		hostname := longest[:strings.IndexByte(longest, '.')]
		if msgs := validation.IsDNS1123Label(hostname); len(msgs) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), job.Name,
				fmt.Sprintf("pod host name %q (job-task-index) is not a valid DNS label (%s); shorten the job name or task %q",
					hostname, strings.Join(msgs, "; "), r.TaskName)))
		}
	}
	if len(ts.Template.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), "a task needs a container to run Paddle in"))
	}
	return errs
}

// validateTemplateEnv checks variables the template sets itself. The plugin
// never overwrites them, so one that disagrees with the plugin's value would
// break a check inside Paddle (a pserver's POD_IP:PADDLE_PORT must be in the
// list, ids must match list positions...): reject it with the value to use.
func validateTemplateEnv(job *batch.Job, l *Layout) field.ErrorList {
	var errs field.ErrorList
	for _, r := range l.roles() {
		ts := &job.Spec.Tasks[r.TaskIndex]
		spec := field.NewPath("spec", "tasks").Index(r.TaskIndex).Child("template", "spec")
		for ci := range ts.Template.Spec.Containers {
			c := &ts.Template.Spec.Containers[ci]
			if !setsContractEnv(c) {
				continue
			}
			for ei, e := range c.Env {
				if !contractEnvNames[e.Name] {
					continue
				}
				path := spec.Child("containers").Index(ci).Child("env").Index(ei)
				// The first replica whose value differs is enough to report.
				for idx := 0; idx < r.Replicas; idx++ {
					w, ok := envValue(l.podEnv(r, idx), e.Name)
					if !ok {
						// Not a variable of this mode (e.g. PADDLE_MASTER in
						// a PS job): the user's value is left alone.
						break
					}
					pod := paddleapi.PodName(job.Name, r.TaskName, idx)
					if e.ValueFrom != nil {
						errs = append(errs, field.Invalid(path, e.Name,
							fmt.Sprintf("%s comes from %s here, but Paddle needs it to equal %q in pod %s (the plugin sets it); remove it from the template",
								e.Name, valueFromString(e.ValueFrom), w, pod)))
						break
					}
					if e.Value != w {
						errs = append(errs, field.Invalid(path, e.Name+"="+e.Value,
							fmt.Sprintf("Paddle needs %s=%q in pod %s; remove it from the template (the plugin sets it)%s",
								e.Name, w, pod, envHint(e.Name))))
						break
					}
				}
			}
		}
	}
	return errs
}

func envValue(env []v1.EnvVar, name string) (string, bool) {
	for _, e := range env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func setsContractEnv(c *v1.Container) bool {
	for _, e := range c.Env {
		if contractEnvNames[e.Name] {
			return true
		}
	}
	return false
}

// contractEnvNames are the names podEnv produces that Paddle cross-checks.
// PADDLE_JOB_ID and FLAGS_selected_gpus are not among them: a user's value
// for those breaks no check and simply wins.
var contractEnvNames = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range []string{EnvPort, EnvPortsNum, EnvTrainersNum, EnvTrainerEndpoints, EnvTrainers, EnvTrainerID,
		EnvPodIP, EnvCurrentEndpoint, EnvTrainingRole, EnvPaddleTrainingRole, EnvPServerEndpoints, EnvPServerID,
		EnvWithGloo, EnvGlooRendezvous, EnvGlooHTTPEnpoint, EnvMaster, EnvNNodes, EnvAllHeterEndpoints,
		EnvNextHeterEndpoints, EnvPreviousHeterEndpoints, EnvStageID, EnvStageNum, EnvStageTrainersNum,
		EnvHeterDeviceType, EnvFluidPServers, EnvFluidPServersNum, EnvFluidTrainerIPs, EnvFluidCurrentIP} {
		m[n] = true
	}
	return m
}()

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

// validateEnvSize rejects jobs whose endpoint lists would not fit in a
// process environment: the container would fail at exec with "argument list
// too long", after the whole gang was scheduled.
func validateEnvSize(l *Layout) field.ErrorList {
	const fix = "the lists grow with replicas and name length: use shorter job and task names, or fewer replicas"
	var errs field.ErrorList
	for _, r := range l.roles() {
		if r.Replicas == 0 {
			continue
		}
		path := field.NewPath("spec", "tasks").Index(r.TaskIndex)
		env := append(l.podEnv(r, r.Replicas-1), l.barrierContainer().Env...)
		total := 0
		for _, e := range env {
			n := len(e.Name) + 1 + len(e.Value) + 1
			total += n
			if n > maxEnvStringBytes {
				return append(errs, field.Invalid(path, r.TaskName,
					fmt.Sprintf("%s would be %d bytes, over the %d bytes Linux allows one environment string (MAX_ARG_STRLEN), so the container could not start; %s",
						e.Name, n, maxEnvStringBytes, fix)))
			}
		}
		if total > maxInjectedBytes {
			errs = append(errs, field.Invalid(path, r.TaskName,
				fmt.Sprintf("the Paddle env of a pod would be %d bytes, over the %d bytes the plugin allows itself (the kernel limit on all env and arguments is 2 MiB); %s",
					total, maxInjectedBytes, fix)))
		}
	}
	return errs
}
