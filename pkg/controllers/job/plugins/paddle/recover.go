package paddle

import (
	"fmt"
	"runtime/debug"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcscheme "volcano.sh/apis/pkg/client/clientset/versioned/scheme"
	"volcano.sh/volcano/pkg/controllers/job/plugins"
	pluginsinterface "volcano.sh/volcano/pkg/controllers/job/plugins/interface"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// PanicReason is the reason of the Warning event a job gets when a plugin
// hook panicked on it.
const PanicReason = "PaddlePluginPanic"

// Recovering wraps a job plugin builder so that a panic in the builder or
// in any hook stays with the job that caused it.
//
// Volcano's job controller calls plugin hooks straight from its workers
// (volcano.sh/volcano pkg/controllers/job/job_controller_plugins.go:
// pluginOnPodCreate, pluginOnJobAdd, ...) without recovering, so one panic
// would end vc-controller-manager-paddle, and the same job would end it
// again after every restart, stopping every job of the cluster. Like
// k8s.io/apimachinery/pkg/util/runtime.HandleCrash it logs the panic with
// its stack, but it does not re-panic: the hook returns an error instead,
// so Volcano creates nothing for that job (a pod whose OnPodCreate failed is
// not created) and retries it with backoff, while other jobs go on. The
// job gets a Warning event that says what happened.
func Recovering(build plugins.PluginBuilder) plugins.PluginBuilder {
	return func(client pluginsinterface.PluginClientset, args []string) (p pluginsinterface.PluginInterface) {
		rp := &recoveringPlugin{client: client.KubeClients}
		defer func() {
			if r := recover(); r != nil {
				rp.buildPanic = r
				rp.buildStack = debug.Stack()
				p = rp
			}
		}()
		rp.inner = build(client, args)
		return rp
	}
}

type recoveringPlugin struct {
	inner      pluginsinterface.PluginInterface
	client     kubernetes.Interface
	buildPanic interface{}
	buildStack []byte
}

var _ pluginsinterface.PluginInterface = &recoveringPlugin{}

func (p *recoveringPlugin) Name() string { return paddlejob.PluginName }

func (p *recoveringPlugin) OnPodCreate(pod *v1.Pod, job *batch.Job) error {
	return p.guard("OnPodCreate", job, func() error { return p.inner.OnPodCreate(pod, job) })
}

func (p *recoveringPlugin) OnJobAdd(job *batch.Job) error {
	return p.guard("OnJobAdd", job, func() error { return p.inner.OnJobAdd(job) })
}

func (p *recoveringPlugin) OnJobDelete(job *batch.Job) error {
	return p.guard("OnJobDelete", job, func() error { return p.inner.OnJobDelete(job) })
}

func (p *recoveringPlugin) OnJobUpdate(job *batch.Job) error {
	return p.guard("OnJobUpdate", job, func() error { return p.inner.OnJobUpdate(job) })
}

func (p *recoveringPlugin) guard(hook string, job *batch.Job, fn func() error) (err error) {
	if p.buildPanic != nil {
		return p.panicked("building the plugin", job, p.buildPanic, p.buildStack)
	}
	defer func() {
		if r := recover(); r != nil {
			err = p.panicked(hook, job, r, debug.Stack())
		}
	}()
	return fn()
}

// PanicError is what a hook returns after a panic.
type PanicError struct {
	Hook, Job string
	Value     interface{}
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("paddle plugin: internal error in %s for job %s (%v); nothing more is created for this job, other jobs are not affected; please report it with the job spec, and delete or fix the job",
		e.Hook, e.Job, e.Value)
}

func (p *recoveringPlugin) panicked(hook string, job *batch.Job, r interface{}, stack []byte) error {
	e := &PanicError{Hook: hook, Job: "<nil>", Value: r}
	if job == nil {
		klog.ErrorS(nil, "Paddle job plugin panicked", "hook", hook, "panic", r, "stack", string(stack))
		return e
	}
	e.Job = job.Namespace + "/" + job.Name
	klog.ErrorS(nil, "Paddle job plugin panicked; the job is held, other jobs go on", "hook", hook, "job", klog.KObj(job), "panic", r, "stack", string(stack))
	if p.client != nil {
		eventRecorder(p.client).Event(job, v1.EventTypeWarning, PanicReason, e.Error())
	}
	return e
}

// eventRecorder returns one recorder per clientset (Volcano passes the
// controller's clientset to every plugin call). client-go's recorder
// aggregates repeated events, so a job retried with backoff does not flood
// the API server.
func eventRecorder(client kubernetes.Interface) record.EventRecorder {
	recordersMu.Lock()
	defer recordersMu.Unlock()
	if r, ok := recorders[client]; ok {
		return r.recorder
	}
	// The controller has one clientset; tests and fuzzing make many, whose
	// broadcasters (a goroutine each) must not pile up.
	if len(recorders) >= maxRecorders {
		for c, r := range recorders {
			r.broadcaster.Shutdown()
			delete(recorders, c)
		}
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	r := b.NewRecorder(vcscheme.Scheme, v1.EventSource{Component: "vc-controller-manager-paddle"})
	recorders[client] = clientRecorder{broadcaster: b, recorder: r}
	return r
}

const maxRecorders = 8

type clientRecorder struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
}

var (
	recordersMu sync.Mutex
	recorders   = map[kubernetes.Interface]clientRecorder{}
)
