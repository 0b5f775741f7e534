// Package paddle is the Volcano job plugin for PaddlePaddle: the adapter
// between Volcano's job controller and pkg/paddlejob. For a
// batch.volcano.sh Job with `plugins: {paddle: [...]}` its hooks create
// the job's objects (pkg/paddlekube), decorate every pod as
// paddlejob.DecoratePod says, hold a resize the running gang cannot
// follow, and reject a job paddlejob.ValidateJob refuses with a message
// that names the field and the fix. It keeps per-process caches, since
// Volcano builds a fresh plugin for every hook call. Only the cmd/ mains
// import it (Register).
package paddle

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	pluginsinterface "volcano.sh/volcano/pkg/controllers/job/plugins/interface"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlekube"
)

// pluginName is the key under spec.plugins.
const pluginName = paddlejob.PluginName

type jobPlugin struct {
	client  pluginsinterface.PluginClientset
	rawArgs []string
	spec    paddlejob.Spec
}

var _ pluginsinterface.PluginInterface = &jobPlugin{}

// New builds the plugin for one hook call, as Volcano does for every call.
// Argument errors are kept and returned by the hooks, so a typo rejects the
// job instead of being logged and ignored.
func New(client pluginsinterface.PluginClientset, arguments []string) pluginsinterface.PluginInterface {
	return &jobPlugin{client: client, rawArgs: arguments, spec: paddlejob.ReadArgs(arguments)}
}

func (p *jobPlugin) Name() string { return pluginName }

// layout returns the job's validated layout or an error for the user.
func (p *jobPlugin) layout(job *batch.Job) (*paddlejob.Layout, error) {
	if len(p.spec.Errs) > 0 {
		return nil, paddlejob.NewInvalidJobError(job, p.spec.Errs)
	}
	return layouts.get(job, layoutCacheArgs(p.rawArgs, job), func() (*paddlejob.Layout, error) { return p.spec.Validate(job) })
}

func (p *jobPlugin) reject(job *batch.Job, err error) error {
	if _, ok := err.(*paddlejob.InvalidJobError); ok {
		klog.InfoS("Rejecting Paddle job", "job", klog.KObj(job), "reason", err.Error())
		reportInvalid(context.TODO(), p.client.KubeClients, job, err.Error())
	}
	return err
}

// OnJobAdd validates the job and creates its headless Service. It runs
// before Volcano creates the PodGroup and the pods, so a rejected job gets
// neither. Idempotent.
func (p *jobPlugin) OnJobAdd(job *batch.Job) error {
	if len(p.spec.Errs) == 0 {
		holdResize(p.client.KubeClients, p.spec.Args, job) // resize.go: pods of the recorded size may exist already
	}
	l, err := p.layout(job)
	if err != nil {
		return p.reject(job, err)
	}
	if !paddlejob.Serves(job) { // once per start, not per sync
		for _, w := range paddlejob.Warnings(job, l) { // the same warnings the webhook returns
			klog.InfoS("Paddle job accepted with a warning", "job", klog.KObj(job), "warning", w)
		}
	}
	err = paddlekube.Start(context.TODO(), p.client.KubeClients, job, l)
	reportStoreConflict(p.client.KubeClients, job, err)
	return err
}

// reportStoreConflict gives the job a Warning event of its own reason when
// an object under its etcd store's name is someone else's. The error goes
// back to Volcano as for a foreign headless Service (paddlekube.EnsureService):
// Volcano records it as a PluginError event and creates no PodGroup and no
// pod, and retries the sync (job_controller_actions.go: initiateJob).
func reportStoreConflict(client kubernetes.Interface, job *batch.Job, err error) {
	var conflict *paddlekube.StoreConflictError
	if errors.As(err, &conflict) {
		klog.InfoS("Elastic Paddle job's etcd store name is taken", "job", klog.KObj(job), "kind", conflict.Kind, "name", conflict.Name, "owner", conflict.Owner)
		eventRecorder(client).Event(job, v1.EventTypeWarning, paddlejob.StoreConflictReason, conflict.Error())
	}
}

// OnJobUpdate runs on every sync of a started job. Paddle's endpoint lists
// are fixed when its processes start, so a change of a role's replicas is
// held (resize.go: holdResize): the gang keeps its size until it restarts
// as a whole, with a Warning event and the job's status saying so. Refusing
// the sync instead would get the job terminated by Volcano's retry limit.
func (p *jobPlugin) OnJobUpdate(job *batch.Job) error {
	if len(p.spec.Errs) == 0 {
		holdResize(p.client.KubeClients, p.spec.Args, job)
	}
	l, err := p.layout(job)
	if err != nil {
		return p.reject(job, err)
	}
	now := l.ReplicaSummary()
	if job.Status.ControlledResources == nil {
		job.Status.ControlledResources = map[string]string{}
	}
	if _, ok := job.Status.ControlledResources[paddlejob.LayoutKey]; !ok {
		job.Status.ControlledResources[paddlejob.LayoutKey] = now
	}
	return nil
}

// OnJobDelete removes the Service this job owns. Idempotent.
func (p *jobPlugin) OnJobDelete(job *batch.Job) error {
	layouts.forget(job.UID)
	paddlekube.Forget(job.UID)
	// On a restart (killJob sets Restarting before this hook) the Service,
	// shared by all incarnations, stays, and the next incarnation's
	// ConfigMap removes the old lists (paddlekube.EnsureIncarnation): no
	// API call here, since every call delays killJob's PodGroup deletion,
	// which a restart at a low --kube-api-qps can then miss
	// (docs/security.md).
	if job.Status.State.Phase != batch.Restarting {
		if err := paddlekube.DeleteService(context.TODO(), p.client.KubeClients, job); err != nil {
			return err
		}
		if err := paddlekube.DeleteConfigMaps(context.TODO(), p.client.KubeClients, job, -1); err != nil {
			return err
		}
	}
	if p.spec.Elastic() {
		if err := paddlekube.DeleteEtcd(context.TODO(), p.client.KubeClients, job); err != nil {
			return err
		}
	}
	delete(job.Status.ControlledResources, paddlejob.ConfigMapKey)
	delete(job.Status.ControlledResources, paddlejob.ControlledKey)
	delete(job.Status.ControlledResources, paddlejob.LayoutKey)
	return nil
}

// OnPodCreate gives a pod its name, labels, env, ports and barrier
// (paddlejob.DecoratePod), after the lists its env refers to exist.
func (p *jobPlugin) OnPodCreate(pod *v1.Pod, job *batch.Job) error {
	l, err := p.layout(job)
	if err != nil {
		return p.reject(job, err)
	}
	l, role, err := paddlejob.DecoratePod(pod, job, l)
	if err != nil || !role {
		return err
	}
	if err := paddlekube.EnsureEtcdStarted(context.TODO(), p.client.KubeClients, job, l); err != nil {
		return err
	}
	return paddlekube.EnsureIncarnation(context.TODO(), p.client.KubeClients, job, l)
}
