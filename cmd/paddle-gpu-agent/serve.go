package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

// serve publishes the topology, then keeps the assignments current: it
// re-reads the kubelet when a pod on the node changes (the kubelet assigns
// GPUs when it starts a pod's containers, and the pod's status changes
// then) and at least every resync, and writes only what changed.
func serve(ctx context.Context, o options, topo *gputopology.Topology) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	conn, err := dialPodResources(o.socket)
	if err != nil {
		return fmt.Errorf("kubelet PodResources socket %s: %w", o.socket, err)
	}
	defer conn.Close()
	a := &agent{
		reader: newAssignmentReader(conn, o.resource, topo),
		pub:    &publisher{client: client, node: o.node, topology: topo.Encode(), heartbeat: o.heartbeat, now: time.Now},
	}
	return a.run(ctx, client, o.resync)
}

// agent ties the kubelet's assignments to the node's annotations.
type agent struct {
	reader *assignmentReader
	pub    *publisher
	// refreshes counts completed refreshes (read and, where needed, written).
	refreshes atomic.Int64
}

func (a *agent) run(ctx context.Context, client kubernetes.Interface, resync time.Duration) error {
	node := a.pub.node
	// Only this node, and only the pods on it.
	nodes := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", node).String()
	}))
	pods := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", node).String()
	}))
	nodeLister := nodes.Core().V1().Nodes().Lister()
	trigger := make(chan struct{}, 1)
	poke := func(interface{}) {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: poke, UpdateFunc: func(_, n interface{}) { poke(n) }, DeleteFunc: poke}
	if _, err := pods.Core().V1().Pods().Informer().AddEventHandler(handler); err != nil {
		return err
	}
	nodes.Start(ctx.Done())
	pods.Start(ctx.Done())
	for typ, ok := range nodes.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("watching %v of node %s did not sync", typ, node)
		}
	}
	pods.WaitForCacheSync(ctx.Done())
	tick := time.NewTicker(resync)
	defer tick.Stop()
	for {
		n, err := nodeLister.Get(node)
		if err != nil {
			klog.ErrorS(err, "Node not found (yet)", "node", node)
		} else if err := a.refresh(ctx, n); err != nil {
			klog.ErrorS(err, "Refreshing GPU assignments", "node", node)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-trigger:
		case <-tick.C:
		}
	}
}

func (a *agent) refresh(ctx context.Context, n *corev1.Node) error {
	pods, err := a.reader.read(ctx)
	if err != nil {
		return err
	}
	wrote, err := a.pub.publish(ctx, n, pods)
	if err != nil {
		return err
	}
	klog.V(4).InfoS("Refreshed GPU assignments", "node", n.Name, "pods", len(pods), "wrote", wrote, "refresh", a.refreshes.Add(1))
	return nil
}
