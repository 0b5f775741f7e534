// Package controllerkit is what the Paddle controllers of
// vc-controller-manager-paddle (paddleobjects, paddleelastic) build the same
// way: informers over the few objects that carry one label, a named work
// queue, an event recorder, and the start that waits for their caches. Each
// controller keeps its own handlers and work.
package controllerkit

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	vcscheme "volcano.sh/apis/pkg/client/clientset/versioned/scheme"
)

// Component is the source of the controllers' events.
const Component = "vc-controller-manager-paddle"

// LabelledInformers is an informer factory over only the objects that carry
// label (any value). The controllers watch kinds (Pods, Services,
// ConfigMaps) that a cluster holds many of; a cluster-wide informer on all of
// them would cost the controller manager memory for nothing.
func LabelledInformers(kube kubernetes.Interface, label string) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = label }))
}

// NewQueue is a rate-limited work queue called name (its metrics carry the
// name) with client-go's default controller rate limiter.
func NewQueue[T comparable](name string) workqueue.TypedRateLimitingInterface[T] {
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
