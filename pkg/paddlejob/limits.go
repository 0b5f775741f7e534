package paddlejob

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// Bounds on every number the plugin reads from a Job. They run before
// anything is built from the spec: resolving a layout allocates one host
// name per replica, and FLAGS_selected_gpus one id per GPU, so an absurd
// value ("replicas: 2147483647", "nvidia.com/gpu: 1e18") would otherwise
// exhaust the memory of vc-controller-manager or the webhook manager
// (makeslice panics) for every job of the cluster.
const (
	// MaxRoleReplicas bounds the replicas of one task. Paddle's endpoint
	// lists outgrow what Linux lets one env string hold (MAX_ARG_STRLEN)
	// at a few thousand replicas anyway; validateEnvSize then says so.
	MaxRoleReplicas = 10000
	// MaxJobPods bounds the pods of the whole job (Volcano sums replicas in
	// an int32 and builds every pod of a task in one sync).
	MaxJobPods = 20000
	// MaxGPUsPerContainer is more than any node offers.
	MaxGPUsPerContainer = 256
	// MaxBarrierTimeout bounds --barrier-timeout.
	MaxBarrierTimeout = 24 * time.Hour
	// MaxEnvPerContainer bounds the env entries of one container of a
	// Paddle task. Kubernetes sets no such bound, but checking a template
	// costs per entry and per replica (validateTemplateEnv), and no
	// training container needs more.
	MaxEnvPerContainer = 1024
)

var maxGPUs = resource.MustParse(fmt.Sprint(MaxGPUsPerContainer))

// validateLimits checks names and numbers before the layout is resolved; it
// is linear in the size of the spec and allocates nothing per replica.
func validateLimits(job *batch.Job, a *Args) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateJobName(job.Name)...)
	tasks := field.NewPath("spec", "tasks")
	var total int64
	for i := range job.Spec.Tasks {
		ts := &job.Spec.Tasks[i]
		path := tasks.Index(i)
		if ts.Replicas < 0 || ts.Replicas > MaxRoleReplicas {
			errs = append(errs, field.Invalid(path.Child("replicas"), ts.Replicas,
				fmt.Sprintf("task %q: replicas must be between 0 and %d for a Paddle job; split the work into several jobs", ts.Name, MaxRoleReplicas)))
		} else {
			total += int64(ts.Replicas)
		}
		containers := path.Child("template", "spec", "containers")
		for ci := range ts.Template.Spec.Containers {
			c := &ts.Template.Spec.Containers[ci]
			errs = append(errs, validateGPUs(c, containers.Index(ci))...)
			errs = append(errs, validateEnvShape(c, containers.Index(ci).Child("env"))...)
		}
	}
	if total > MaxJobPods {
		errs = append(errs, field.Invalid(tasks, total,
			fmt.Sprintf("the job would have %d pods, more than the %d a Paddle job may have; split the work into several jobs", total, MaxJobPods)))
	}
	if a != nil && a.BarrierTimeout > MaxBarrierTimeout {
		errs = append(errs, field.Invalid(argsPath.Key("--barrier-timeout"), a.BarrierTimeout.String(),
			fmt.Sprintf("must be at most %s; a peer that does not resolve for that long will not come", MaxBarrierTimeout)))
	}
	return errs
}

// CheckLimits runs the checks of ValidateJob that are linear in the size
// of the spec and allocate nothing per replica: names, replica and GPU
// bounds, env shape. The admission webhook runs them before a request
// waits for a slot, so an oversized job is refused at once.
func CheckLimits(job *batch.Job, a *Args) field.ErrorList { return validateLimits(job, a) }

// validateEnvShape bounds a container's env entries and refuses a Paddle
// variable given more than once: the kubelet keeps the last of repeated
// names (k8s.io/kubernetes pkg/kubelet/kubelet_pods.go: makeEnvironmentVariables),
// so the earlier ones are dead text that hides which value runs.
func validateEnvShape(c *v1.Container, path *field.Path) field.ErrorList {
	if n := len(c.Env); n > MaxEnvPerContainer {
		return field.ErrorList{field.TooMany(path, n, MaxEnvPerContainer)}
	}
	var errs field.ErrorList
	count := map[string]int{}
	for _, e := range c.Env {
		if contractEnvNames[e.Name] {
			count[e.Name]++
		}
	}
	for i, e := range c.Env {
		if n := count[e.Name]; n > 1 {
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"),
				fmt.Sprintf("%s is given %d times in container %q; give it once (the plugin sets it: best remove it)", e.Name, n, c.Name)))
			count[e.Name] = 0 // one error per name
		}
	}
	return errs
}

// validateJobName: the job's name becomes the name of its headless Service
// and the pods' DNS subdomain, and Service names must be DNS-1035 labels
// (k8s.io/kubernetes pkg/apis/core/validation: ValidateServiceName), which
// is stricter than the DNS-1123 rule Volcano's own webhook applies to Job
// names: "1paddle" is a valid Job but no valid Service.
func validateJobName(name string) field.ErrorList {
	msgs := validation.IsDNS1035Label(name)
	if len(msgs) == 0 {
		return nil
	}
	fix := "rename the job"
	if s := strings.TrimLeft(strings.ToLower(name), "0123456789-"); s != "" && len(validation.IsDNS1035Label("paddle-"+s)) == 0 {
		fix = fmt.Sprintf("rename the job, e.g. %q", "paddle-"+s)
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name,
		fmt.Sprintf("a Paddle job's name is the name of its headless Service, so it must be a DNS label a Service accepts (DNS-1035: %s); %s",
			strings.Join(msgs, "; "), fix))}
}

// validateGPUs bounds nvidia.com/gpu in limits and requests: a whole
// number (extended resources cannot be split) between 0 and
// MaxGPUsPerContainer.
func validateGPUs(c *v1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, rl := range []struct {
		name string
		list v1.ResourceList
	}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
		q, ok := rl.list[gpuResource]
		if !ok {
			continue
		}
		p := path.Child("resources", rl.name).Key(string(gpuResource))
		switch {
		case q.Sign() < 0 || q.Cmp(maxGPUs) > 0:
			errs = append(errs, field.Invalid(p, q.String(),
				fmt.Sprintf("container %q: GPUs per container must be between 0 and %d (no node offers more); ask for the GPUs of one node per pod and add replicas", c.Name, MaxGPUsPerContainer)))
		case q.MilliValue()%1000 != 0:
			errs = append(errs, field.Invalid(p, q.String(),
				fmt.Sprintf("container %q: GPUs are counted in whole devices; use an integer", c.Name)))
		}
	}
	return errs
}
