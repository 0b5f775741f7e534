// Package controllerkit is what the Paddle controllers of
// vc-controller-manager-paddle (paddleobjects, paddleelastic) build the same
// way: informers over the few objects that carry one label, a named work
// queue, an event recorder, and the start that waits for their caches. Each
// controller keeps its own handlers and work.
package controllerkit

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	vcclientset "volcano.sh/apis/pkg/client/clientset/versioned"
	vcscheme "volcano.sh/apis/pkg/client/clientset/versioned/scheme"
	batchinformers "volcano.sh/apis/pkg/client/informers/externalversions/batch/v1alpha1"
	batchlisters "volcano.sh/apis/pkg/client/listers/batch/v1alpha1"
	"volcano.sh/volcano/pkg/controllers/framework"
)

// Component is the source of the controllers' events.
const Component = "vc-controller-manager-paddle"

// Base is what every Paddle controller holds: the clients, the Volcano
// jobs (from the manager's shared factory, which Volcano's job controller
// reads too), its own labelled informer factory, the caches it must wait
// for and its event recorder.
type Base struct {
	Kube     kubernetes.Interface
	VC       vcclientset.Interface
	Jobs     batchlisters.JobLister
	Factory  informers.SharedInformerFactory
	Synced   []cache.InformerSynced
	Recorder record.EventRecorder
}

// NewBase builds the Base of a controller whose own informers watch only
// the objects that carry label. It returns the job informer too, for the
// controller's handlers; the controller adds its own informers' HasSynced
// to Synced.
func NewBase(opt *framework.ControllerOption, label string) (Base, batchinformers.JobInformer) {
	jobInformer := opt.VCSharedInformerFactory.Batch().V1alpha1().Jobs()
	return Base{
		Kube:     opt.KubeClient,
		VC:       opt.VolcanoClient,
		Jobs:     jobInformer.Lister(),
		Factory:  LabelledInformers(opt.KubeClient, label),
		Synced:   []cache.InformerSynced{jobInformer.Informer().HasSynced},
		Recorder: NewRecorder(opt.KubeClient),
	}, jobInformer
}

// Start starts the Base's informers and waits for its caches (see Start).
func (b *Base) Start(stopCh <-chan struct{}, controller string) bool {
	return Start(stopCh, controller, b.Factory, b.Synced)
}

// LabelledInformers is an informer factory over only the objects that carry
// label (any value). The controllers watch kinds (Pods, Services,
// ConfigMaps) that a cluster holds many of; a cluster-wide informer on all of
// them would cost the controller manager memory for nothing.
func LabelledInformers(kube kubernetes.Interface, label string) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = label }))
}

// Queue is a controller's rate-limited work queue of T.
type Queue[T comparable] = workqueue.TypedRateLimitingInterface[T]

// NewQueue is a rate-limited work queue called name (its metrics carry the
// name) with client-go's default controller rate limiter.
func NewQueue[T comparable](name string) Queue[T] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[T](),
		workqueue.TypedRateLimitingQueueConfig[T]{Name: name})
}

// NewRecorder records events through the API server as Component.
func NewRecorder(kube kubernetes.Interface) record.EventRecorder {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return b.NewRecorder(vcscheme.Scheme, v1.EventSource{Component: Component})
}

// Start starts factory's informers and waits until every cache in synced
// (the factory's and the shared factories' the controller reads) has
// synced. It is false, and logged, when stopCh closes first: the controller
// must not work from caches that have not listed everything yet.
func Start(stopCh <-chan struct{}, controller string, factory informers.SharedInformerFactory, synced []cache.InformerSynced) bool {
	factory.Start(stopCh)
	if !cache.WaitForCacheSync(stopCh, synced...) {
		klog.ErrorS(nil, "Caches did not sync", "controller", controller)
		return false
	}
	klog.InfoS("Started", "controller", controller)
	return true
}

// ProcessNext takes the next item of q and hands it to sync. When sync
// fails, failed logs the error and the item goes back to q rate-limited,
// unless it already went back retries times (retries < 0: no bound); q
// then forgets it. It is false once q has shut down.
func ProcessNext[T comparable](q Queue[T], retries int, sync func(T) error, failed func(T, error)) bool {
	item, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(item)
	if err := sync(item); err != nil {
		failed(item, err)
		if retries < 0 || q.NumRequeues(item) < retries {
			q.AddRateLimited(item)
			return true
		}
	}
	q.Forget(item)
	return true
}

// Workers starts n goroutines that call next until it is false, again
// each second, until stopCh closes.
func Workers(stopCh <-chan struct{}, n int, next func() bool) {
	for i := 0; i < n; i++ {
		go wait.Until(func() {
			for next() {
			}
		}, time.Second, stopCh)
	}
}
