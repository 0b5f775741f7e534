package testbuilders

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// NodeWrapper builds a node; Obj returns it.
type NodeWrapper struct{ v1.Node }

// MakeNode starts a node with room for 110 pods and nothing else, empty
// labels and annotations. Capacity and allocatable are the same list.
func MakeNode() *NodeWrapper {
	alloc := v1.ResourceList{v1.ResourcePods: resource.MustParse("110")}
	return &NodeWrapper{v1.Node{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}, Annotations: map[string]string{}},
		Status:     v1.NodeStatus{Capacity: alloc, Allocatable: alloc},
	}}
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *v1.Node { return &n.Node }

func (n *NodeWrapper) Name(name string) *NodeWrapper       { n.SetName(name); return n }
func (n *NodeWrapper) Label(k, v string) *NodeWrapper      { n.Labels[k] = v; return n }
func (n *NodeWrapper) Annotation(k, v string) *NodeWrapper { n.Annotations[k] = v; return n }

// Capacity sets one resource's capacity (and allocatable).
func (n *NodeWrapper) Capacity(name v1.ResourceName, quantity string) *NodeWrapper {
	n.Status.Capacity[name] = resource.MustParse(quantity)
	return n
}

// CPU and Memory set the node's capacity.
func (n *NodeWrapper) CPU(q string) *NodeWrapper    { return n.Capacity(v1.ResourceCPU, q) }
func (n *NodeWrapper) Memory(q string) *NodeWrapper { return n.Capacity(v1.ResourceMemory, q) }

// GPUs gives the node g GPUs (gputopology.ResourceName); 0 gives none.
func (n *NodeWrapper) GPUs(g int) *NodeWrapper {
	if g > 0 {
		n.Status.Capacity[gputopology.ResourceName] = *resource.NewQuantity(int64(g), resource.DecimalSI)
	}
	return n
}

// Topology annotates the node with its GPU topology, as the GPU agent does.
func (n *NodeWrapper) Topology(t *gputopology.Topology) *NodeWrapper {
	return n.Annotation(gputopology.Annotation, t.Encode())
}

// Rack and Spine set the default rack and spine labels; "" sets none.
func (n *NodeWrapper) Rack(rack string) *NodeWrapper {
	if rack != "" {
		n.Label(paddleapi.DefaultRackLabel, rack)
	}
	return n
}

func (n *NodeWrapper) Spine(spine string) *NodeWrapper {
	if spine != "" {
		n.Label(paddleapi.DefaultSpineLabel, spine)
	}
	return n
}
