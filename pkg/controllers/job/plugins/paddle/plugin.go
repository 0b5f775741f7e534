// Package paddle is the Volcano job plugin for PaddlePaddle. For a
// batch.volcano.sh Job with `plugins: {paddle: [...]}` it creates the job's
// headless Service, gives every pod a stable DNS name and the env Paddle's
// launchers and role makers read, declares the ports, adds a DNS barrier and
// labels pods with their Paddle role; a job it cannot serve correctly is
// rejected with a message that names the field and the fix.
package paddle

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	pluginsinterface "volcano.sh/volcano/pkg/controllers/job/plugins/interface"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// PluginName is the key under spec.plugins.
const PluginName = "paddle"

// Keys in Job.Status.ControlledResources: that the plugin initialised the
// job, and the replica counts its endpoint lists were built for.
const (
	controlledKey = "plugin-" + PluginName
	layoutKey     = "plugin-" + PluginName + "-layout"
)

type jobPlugin struct {
	client  pluginsinterface.PluginClientset
	rawArgs []string
	args    *Args
	argErrs field.ErrorList
}

var _ pluginsinterface.PluginInterface = &jobPlugin{}

// New builds the plugin for one hook call, as Volcano does for every call.
// Argument errors are kept and returned by the hooks, so a typo rejects the
// job instead of being logged and ignored.
func New(client pluginsinterface.PluginClientset, arguments []string) pluginsinterface.PluginInterface {
	p := &jobPlugin{client: client, rawArgs: arguments}
	p.args, p.argErrs = ParseArgs(arguments)
	return p
}

func (p *jobPlugin) Name() string { return PluginName }

// layout returns the job's validated layout or an error for the user.
func (p *jobPlugin) layout(job *batch.Job) (*Layout, error) {
	if len(p.argErrs) > 0 {
		return nil, NewInvalidJobError(job, p.argErrs)
	}
	l, errs := layouts.get(job, layoutCacheArgs(p.rawArgs, job), func() (*Layout, field.ErrorList) { return ValidateJob(job, p.args) })
	if len(errs) > 0 {
		return nil, NewInvalidJobError(job, errs)
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

func (p *jobPlugin) reject(job *batch.Job, err error) error {
	if _, ok := err.(*InvalidJobError); ok {
		klog.InfoS("Rejecting Paddle job", "job", klog.KObj(job), "reason", err.Error())
		reportInvalid(context.TODO(), p.client.KubeClients, job, err.Error())
	}
	return err
}

// OnJobAdd validates the job and creates its headless Service. It runs
// before Volcano creates the PodGroup and the pods, so a rejected job gets
// neither. Idempotent.
func (p *jobPlugin) OnJobAdd(job *batch.Job) error {
	if len(p.argErrs) == 0 {
		p.holdResize(job) // update.go: pods of the recorded size may exist already
	}
	l, err := p.layout(job)
	if err != nil {
		return p.reject(job, err)
	}
	if err := ensureService(context.TODO(), p.client.KubeClients, job); err != nil {
		return err
	}
	if err := ensureEtcd(context.TODO(), p.client.KubeClients, job, l); err != nil { // elastic_etcd.go
		return err
	}
	if !Serves(job) { // once per start, not per sync
		for _, w := range Warnings(job, l) { // the same warnings the webhook returns
			klog.InfoS("Paddle job accepted with a warning", "job", klog.KObj(job), "warning", w)
		}
	}
	// The peer lists exist before any pod refers to them (configmap.go).
	if err := ensureIncarnation(context.TODO(), p.client.KubeClients, job, l.At(int(job.Status.Version))); err != nil {
		return err
	}
	job.Status.ControlledResources[controlledKey] = PluginName
	job.Status.ControlledResources[layoutKey] = l.ReplicaSummary()
	return nil
}

// OnJobUpdate runs on every sync of a started job. Paddle's endpoint lists
// are fixed when its processes start, so a change of a role's replicas is
// held (update.go: holdResize): the gang keeps its size until it restarts
// as a whole, with a Warning event and the job's status saying so. Refusing
// the sync instead would get the job terminated by Volcano's retry limit.
func (p *jobPlugin) OnJobUpdate(job *batch.Job) error {
	if len(p.argErrs) == 0 {
		p.holdResize(job)
	}
	l, err := p.layout(job)
	if err != nil {
		return p.reject(job, err)
	}
	now := l.ReplicaSummary()
	if job.Status.ControlledResources == nil {
		job.Status.ControlledResources = map[string]string{}
	}
	if _, ok := job.Status.ControlledResources[layoutKey]; !ok {
		job.Status.ControlledResources[layoutKey] = now
	}
	return nil
}

// OnJobDelete removes the Service this job owns. Idempotent.
func (p *jobPlugin) OnJobDelete(job *batch.Job) error {
	layouts.forget(job.UID)
	ensured.forget(job.UID)
	// On a restart (killJob sets Restarting before this hook) the Service,
	// shared by all incarnations, stays, and the next incarnation's
	// ensureConfigMap removes the old lists: no API call here, since every
	// call delays killJob's PodGroup deletion, which a restart at a low
	// --kube-api-qps can then miss (docs/security.md).
	if job.Status.State.Phase != batch.Restarting {
		if err := deleteService(context.TODO(), p.client.KubeClients, job); err != nil {
			return err
		}
		if err := deleteConfigMaps(context.TODO(), p.client.KubeClients, job, -1); err != nil {
			return err
		}
	}
	if err := deleteEtcd(context.TODO(), p.client.KubeClients, job); err != nil { // elastic_etcd.go
		return err
	}
	delete(job.Status.ControlledResources, configMapKey)
	delete(job.Status.ControlledResources, controlledKey)
	delete(job.Status.ControlledResources, layoutKey)
	return nil
}

// OnPodCreate gives a pod its name, labels, env, ports and barrier.
func (p *jobPlugin) OnPodCreate(pod *v1.Pod, job *batch.Job) error {
	l, err := p.layout(job)
	if err != nil {
		return p.reject(job, err)
	}
	// Host names carry the incarnation (paddleapi.WithIncarnation).
	l = l.At(podIncarnation(pod, job))
	pod.Spec.Hostname = l.podHostname(job, pod)
	if pod.Spec.Subdomain == "" {
		pod.Spec.Subdomain = job.Name
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[paddleapi.ModeLabel] = string(l.Mode)
	if job.UID != "" {
		pod.Labels[paddleapi.JobUIDLabel] = string(job.UID)
	}

	task := pod.Annotations[batch.TaskSpecKey]
	r := l.roleTask(task)
	l.markPreemption(pod, r) // preemption.go
	if r == nil {
		return nil // a helper task: DNS name only
	}
	index, err := podIndex(pod)
	if err != nil || index >= r.Replicas {
		return fmt.Errorf("paddle: pod %s/%s of task %s has index %q outside its %d replicas", pod.Namespace, pod.Name, task, pod.Annotations[batch.TaskIndex], r.Replicas)
	}
	pod.Labels[paddleapi.RoleLabel] = string(r.Role)
	// Least privilege: Paddle's processes need no API access (peers come
	// from env and DNS), so no service-account token unless the template
	// asks for one.
	if pod.Spec.AutomountServiceAccountToken == nil {
		automount := false
		pod.Spec.AutomountServiceAccountToken = &automount
	}
	pod.Labels[paddleapi.IndexLabel] = strconv.Itoa(index)
	if l.Elastic != nil {
		labelElasticPod(pod) // elastic.go
	}

	if err := ensureIncarnation(context.TODO(), p.client.KubeClients, job, l); err != nil {
		return err
	}
	env := l.podEnv(r, index)
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		injectEnv(c, env)
		if n := gpuCount(c); n > 0 {
			injectEnv(c, []v1.EnvVar{{Name: EnvSelectedGPUs, Value: selectedGPUs(n)}})
		}
		if proxy, noProxy := hasProxy(c); proxy && !noProxy {
			np := l.noProxyValue()
			injectEnv(c, []v1.EnvVar{{Name: "NO_PROXY", Value: np}, {Name: "no_proxy", Value: np}})
		}
	}
	if len(pod.Spec.Containers) > 0 {
		declarePorts(pod, l.ports(r, index))
	}
	if l.Args.Barrier {
		addBarrier(pod, l.barrierContainer())
	}
	return nil
}

func podIndex(pod *v1.Pod) (int, error) {
	if s, ok := pod.Annotations[batch.TaskIndex]; ok {
		return strconv.Atoi(s)
	}
	// Volcano names pods <job>-<task>-<index>.
	i := strings.LastIndexByte(pod.Name, '-')
	return strconv.Atoi(pod.Name[i+1:])
}

// declarePorts adds ports to the first container (the training container by
// Volcano's and paddle-operator's convention) unless a container of the pod
// already declares that port number or name.
func declarePorts(pod *v1.Pod, ports []v1.ContainerPort) {
	for _, want := range ports {
		taken := false
		for _, c := range pod.Spec.Containers {
			for _, have := range c.Ports {
				if have.ContainerPort == want.ContainerPort || have.Name == want.Name {
					taken = true
				}
			}
		}
		if !taken {
			pod.Spec.Containers[0].Ports = append(pod.Spec.Containers[0].Ports, want)
		}
	}
}
