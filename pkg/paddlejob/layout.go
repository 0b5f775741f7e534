package paddlejob

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Layout is the env contract of one Paddle job: which task plays which
// role, every replica's host name in an incarnation, the endpoint lists all
// pods share, and (entrypoints.go) the variables each entry point of Paddle reads.
// It is a pure function of the Job spec, the plugin arguments and the
// incarnation, so every pod of an incarnation sees the same lists and a pod
// re-created within it gets exactly the env its predecessor had.
//
// Nothing here is built per replica up front: a host is computed when asked
// for, and a list (O(replicas)) only when the job's ConfigMap is built, once
// per incarnation. A pod's env refers to the lists in that ConfigMap, so
// its size does not depend on the replica count.
type Layout struct {
	Namespace, Job string
	Mode           paddleapi.Mode
	Args           *Args
	// Roles present in the job; Trainer is always set.
	PServer, Trainer, Heter *RoleTask
	// Incarnation is the Volcano job version the hosts are built for
	// (paddleapi.WithIncarnation); the cached layout has 0, OnPodCreate
	// works on At(the pod's version).
	Incarnation int
	// sizes says which lists are left out of every pod's env because a
	// process could not be started with them, and whether the barrier
	// waits for the pservers only (validation.go: checkListSizes, then
	// decideLayout).
	sizes listFacts
	// Elastic is set for an elastic collective job (elastic.go).
	Elastic *Elastic
}

// RoleTask is the task that plays one Paddle role.
type RoleTask struct {
	Role      paddleapi.Role
	TaskIndex int
	TaskName  string
	Replicas  int
	// hostname is the template's fixed hostname (single-replica tasks only).
	hostname string
	// gpus is the most nvidia.com/gpu any container of the task asks for.
	gpus int64
}

// At is the layout of an incarnation. The copy shares the role tasks, which
// are never written after resolveLayout.
func (l *Layout) At(incarnation int) *Layout {
	c := *l
	c.Incarnation = incarnation
	return &c
}

// listFacts is what checkListSizes found out about a job's lists: which
// optional lists are too long to reach a process, and whether the barrier
// list fits only when it names the pservers alone. decideLayout turns the
// facts into the layout the pods are built from; Warnings tells the user.
type listFacts struct {
	omitted       map[string]bool
	narrowBarrier bool
}

// withLists is the layout with the given list facts.
func (l *Layout) withLists(f listFacts) *Layout {
	c := *l
	c.sizes = f
	return &c
}

// podIncarnation is the incarnation a pod belongs to: the job version
// Volcano wrote on it (createJobPod), else the job's current one.
func podIncarnation(pod *v1.Pod, job *batch.Job) int {
	if n, err := strconv.Atoi(pod.Annotations[batch.JobVersion]); err == nil && n >= 0 {
		return n
	}
	return int(job.Status.Version)
}

// podHostname is the hostname of any pod of the job in the layout's
// incarnation, helper tasks included: the template's hostname or the pod
// name (Volcano's <job>-<task>-<index>), with the incarnation suffix.
func (l *Layout) podHostname(job *batch.Job, pod *v1.Pod) string {
	base := pod.Name
	if i := taskIndex(job, pod.Annotations[batch.TaskSpecKey]); i >= 0 && job.Spec.Tasks[i].Template.Spec.Hostname != "" {
		base = job.Spec.Tasks[i].Template.Spec.Hostname
	}
	return paddleapi.WithIncarnation(base, l.Incarnation)
}

// ports are the ports replica index of r declares: PADDLE_PORT; on pserver
// i > 0 the Fluid-era PADDLE_PORT+i its CTR image listens on; on pserver 0
// the gloo store when gloo is on.
func (l *Layout) ports(r *RoleTask, index int) []v1.ContainerPort {
	if l.Elastic != nil {
		return nil // elasticenv.go: Paddle picks new random ports at every rendezvous
	}
	a := l.Args
	out := []v1.ContainerPort{{Name: "paddle", ContainerPort: int32(a.Port), Protocol: v1.ProtocolTCP}}
	if r.Role == paddleapi.RolePServer && index > 0 && l.Mode != paddleapi.ModeCollective {
		out = append(out, v1.ContainerPort{Name: "paddle-fluid", ContainerPort: int32(l.fluidPort(index)), Protocol: v1.ProtocolTCP})
	}
	if r.Role == paddleapi.RolePServer && index == 0 && a.Gloo > 0 {
		out = append(out, v1.ContainerPort{Name: "paddle-gloo", ContainerPort: int32(a.glooPort()), Protocol: v1.ProtocolTCP})
	}
	return out
}

// roles are the role tasks present, in list order pserver, trainer, heter.
func (l *Layout) roles() []*RoleTask {
	var out []*RoleTask
	for _, r := range []*RoleTask{l.PServer, l.Trainer, l.Heter} {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

// roleTask returns the role played by the named task, nil for other tasks
// (a job may carry helper tasks such as a TensorBoard).
func (l *Layout) roleTask(task string) *RoleTask {
	for _, r := range l.roles() {
		if r.TaskName == task {
			return r
		}
	}
	return nil
}

// hostname is replica index's hostname in the layout's incarnation.
func (l *Layout) hostname(r *RoleTask, index int) string {
	if r.hostname != "" {
		return paddleapi.WithIncarnation(r.hostname, l.Incarnation)
	}
	return paddleapi.Hostname(l.Job, r.TaskName, index, l.Incarnation)
}

// host is replica index's DNS name (hostname.subdomain).
func (l *Layout) host(r *RoleTask, index int) string {
	return l.hostname(r, index) + "." + l.Job
}

// endpoint is host:PADDLE_PORT, the address Paddle's fleet code uses.
func (l *Layout) endpoint(r *RoleTask, index int) string {
	return paddleapi.Endpoint(l.host(r, index), l.Args.Port)
}

// fluidPort is where pserver index serves in the Fluid-era convention of
// the seed's CTR image: PADDLE_PORT + PADDLE_PSERVER_ID
// (elasticdeeplearning/edl example/ctr/ctr/train.py: train).
func (l *Layout) fluidPort(index int) int { return l.Args.Port + index }

// barrierRoles are the roles whose names the barrier init container waits
// for: every pod of the job. A PS job too large for that list to reach a
// process (checkListSizes) waits for its pservers only, which is what
// its pods resolve while starting: trainers connect to the servers (brpc
// client, Fluid's DistributeTranspiler) and to pserver 0's gloo store, and
// no trainer resolves another trainer's name in PS mode.
func (l *Layout) barrierRoles() []*RoleTask {
	if l.sizes.narrowBarrier {
		return []*RoleTask{l.PServer}
	}
	return l.roles()
}

// worstCase is the layout in the incarnation with the longest host names,
// which size checks use so that a job admitted once fits in every
// incarnation Volcano can reach.
func (l *Layout) worstCase() *Layout { return l.At(math.MaxInt32) }

// ReplicaSummary records the sizes the endpoint lists were built for.
func (l *Layout) ReplicaSummary() string {
	var parts []string
	for _, r := range l.roles() {
		parts = append(parts, fmt.Sprintf("%s=%d", r.TaskName, r.Replicas))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// heterDevice is HETER_DEVICE_TYPE: the argument, or gpu when the heter
// task asks for GPUs.
func (l *Layout) heterDevice() string {
	if l.Args.HeterDevice != heterDeviceAuto {
		return l.Args.HeterDevice
	}
	if l.Heter != nil && l.Heter.gpus > 0 {
		return "gpu"
	}
	return "cpu"
}

// noProxyValue keeps the job's own names away from an HTTP proxy: Paddle's
// launchers drop http_proxy for the same reason (proxies hang multi-node
// training, launch/context/args_envs.py: fetch_envs), but `python train.py`
// does not.
func (l *Layout) noProxyValue() string {
	return fmt.Sprintf(".%s,.%s.%s.svc,localhost,127.0.0.1", l.Job, l.Job, l.Namespace)
}

// optionalLists are the lists a mode's pods can start without. In PS mode
// only fleetrun (PADDLE_TRAINERS must be set), the new launcher
// (PADDLE_TRAINERS_ENDPOINTS) and paddle_k8s-era scripts
// (PADDLE_TRAINER_IPS) read the trainer lists; role_maker._ps_env treats
// PADDLE_TRAINER_ENDPOINTS as optional and the CTR image never reads them.
func (l *Layout) optionalLists() map[string]bool {
	if l.Mode == paddleapi.ModePS {
		return map[string]bool{listTrainerEndpoints: true, listTrainerHosts: true}
	}
	return nil
}

// listPath is the task whose replicas make a list long.
func (l *Layout) listPath(key string) *field.Path {
	tasks := field.NewPath("spec", "tasks")
	var r *RoleTask
	switch key {
	case listPServerEndpoints, listFluidPServers:
		r = l.PServer
	case listTrainerEndpoints, listTrainerHosts:
		r = l.Trainer
	case listHeterEndpoints:
		r = l.Heter
	}
	if r == nil {
		return tasks
	}
	return tasks.Index(r.TaskIndex)
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
	ts := &job.Spec.Tasks[i]
	r := &RoleTask{Role: role, TaskIndex: i, TaskName: ts.Name, Replicas: int(ts.Replicas), hostname: ts.Template.Spec.Hostname}
	for ci := range ts.Template.Spec.Containers {
		r.gpus = max(r.gpus, gpuCount(&ts.Template.Spec.Containers[ci]))
	}
	return r
}

func taskNames(job *batch.Job) string {
	names := make([]string, 0, len(job.Spec.Tasks))
	for _, t := range job.Spec.Tasks {
		names = append(names, t.Name)
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// Elastic is the elastic part of a job's layout.
type Elastic struct {
	// Min and Max bound the trainer pods (PADDLE_NNODES=Min:Max).
	Min, Max int
	Args     *ElasticArgs
}

// etcdHost is the etcd's DNS name as the pods' resolvers find it (search
// list <namespace>.svc.<cluster domain>).
func (l *Layout) etcdHost() string { return EtcdName(l.Job) + "." + l.Namespace + ".svc" }

// jobID is PADDLE_JOB_ID: the etcd prefix /paddle/<id> and /<id>/info,
// which every starting launcher deletes, so it is one per job and the same
// on all its pods.
func (l *Layout) jobID() string { return jobID(l.Namespace, l.Job) }
