package paddle

import (
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

// The GPU model inside a node: which GPUs each pod holds and which are
// free (the agent's report where fresh, else NVIDIA's allocator's
// prediction; pkg/gputopology), and how well a pod's GPUs would sit.

// gpuResource is the extended resource of NVIDIA's device plugin. Volcano
// keeps scalar resources in milli-units.
const gpuResource v1.ResourceName = gputopology.ResourceName

func gpusOf(r *api.Resource) int {
	if r == nil {
		return 0
	}
	return int(r.Get(gpuResource) / 1000)
}

// GPU-fit score, out of MaxScore.
const (
	// gpuLeftoverCost is lost when the pod's domain keeps all its other
	// GPUs free (scaled by the share left over): tight fits first.
	gpuLeftoverCost = 40.0
	// gpuWholeNodeCost is lost by a node whose GPUs are all free, for a pod
	// that does not need them all: keep whole nodes for whole-node pods.
	gpuWholeNodeCost = 10.0
	// What spanning fit domains scores on each fabric: on NVSwitch every
	// pair keeps full NVLink speed and only NUMA locality is lost; on PCIe
	// nodes traffic crosses the CPU interconnect; on NVLink-island nodes it
	// drops from NVLink to PCIe.
	gpuSpanNVSwitch = 70.0
	gpuSpanPCIe     = 40.0
	gpuSpanNVLink   = 20.0
)

// gpuState is the session's view of every node's GPUs, computed on first
// use and dropped when a pod is placed on or removed from the node. Scoring
// runs once per task over every candidate node; with this cache a node
// costs O(1) per task (the prediction is memoised in the model too).
type gpuState struct {
	maxAge time.Duration
	now    time.Time

	mu    sync.Mutex
	nodes map[string]*nodeGPUs
}

// nodeGPUs is one node's GPUs: its model (nil without a usable topology
// annotation) and which GPUs its pods hold.
type nodeGPUs struct {
	model *gputopology.Model
	occ   gputopology.Occupancy
}

func newGPUState(maxAge time.Duration, now time.Time) *gpuState {
	return &gpuState{maxAge: maxAge, now: now, nodes: map[string]*nodeGPUs{}}
}

// forget drops a node's occupancy after a pod was placed on it or removed.
func (g *gpuState) forget(node string) {
	g.mu.Lock()
	delete(g.nodes, node)
	g.mu.Unlock()
}

// node returns a node's GPUs. The caller holds mu.
func (g *gpuState) node(n *api.NodeInfo) *nodeGPUs {
	if ng, ok := g.nodes[n.Name]; ok {
		return ng
	}
	ng := &nodeGPUs{model: modelOf(n)}
	if ng.model != nil {
		ng.occ = ng.model.Occupy(gpuPods(n), g.assignments(n))
		klog.V(4).InfoS("paddle GPU occupancy", "node", n.Name, "source", ng.occ.Source, "free", ng.model.Indices(ng.occ.Free))
	}
	g.nodes[n.Name] = ng
	return ng
}

// nodeAnnotation parses the node's annotation key. ok is false without it
// and when it does not parse (logged): the node is then treated as one
// without the annotation.
func nodeAnnotation[T any](n *api.NodeInfo, key string, parse func(string) (T, error)) (v T, ok bool) {
	value, ok := n.Node.Annotations[key]
	if !ok {
		return v, false
	}
	v, err := parse(value)
	if err != nil {
		klog.V(4).InfoS("paddle: ignoring a node annotation that does not parse", "node", n.Name, "annotation", key, "err", err)
		return v, false
	}
	return v, true
}

// modelOf is the node's GPU model; nil without the annotation, with one
// that does not parse, or one whose GPU count is not the node's allocatable
// nvidia.com/gpu (a GPU the device plugin took out as unhealthy).
func modelOf(n *api.NodeInfo) *gputopology.Model {
	if n.Node == nil {
		return nil
	}
	m, ok := nodeAnnotation(n, gputopology.Annotation, gputopology.ModelFor)
	if !ok {
		return nil
	}
	if m.N() != gpusOf(n.Allocatable) {
		klog.V(4).InfoS("paddle: ignoring the GPU topology of a node: GPU count differs from allocatable", "node", n.Name,
			"annotated", m.N(), "allocatable", gpusOf(n.Allocatable))
		return nil
	}
	return m
}

// assignments are the agent's report on the node if present and younger
// than maxAge, else nil (the model then predicts every pod's GPUs).
func (g *gpuState) assignments(n *api.NodeInfo) *gputopology.Assignments {
	a, ok := nodeAnnotation(n, gputopology.AssignmentsAnnotation, gputopology.ParseAssignments)
	if !ok {
		return nil
	}
	if age := a.Age(g.now); age > g.maxAge {
		klog.V(4).InfoS("paddle: GPU assignments too old, predicting instead", "node", n.Name, "age", age, "maxAge", g.maxAge)
		return nil
	}
	return a
}

// gpuPods lists the node's GPU pods, pods of this session included, by
// name (Occupy replays them in creation order).
func gpuPods(n *api.NodeInfo) []gputopology.PodRequest {
	var pods []gputopology.PodRequest
	for _, t := range n.Tasks {
		if g := gpusOf(t.Resreq); g > 0 {
			p := gputopology.PodRequest{Key: t.Namespace + "/" + t.Name, GPUs: g}
			if t.Pod != nil {
				p.Created = t.Pod.CreationTimestamp.Time
			}
			pods = append(pods, p)
		}
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Key < pods[j].Key })
	return pods
}

// fitScore scores where a pod's g GPUs would sit on the node: the GPUs NVIDIA's
// device plugin will give it (predicted on the free ones), best in one fit
// domain and tightly, without breaking a fully free node when a partly used
// one would do. Nodes without a usable topology are scored by count
// (tightest fit), never rejected. The caller holds mu.
func (g *gpuState) fitScore(n *api.NodeInfo, size int, verbose bool) (float64, string) {
	why := func(format string, args ...interface{}) string {
		if !verbose {
			return ""
		}
		return fmt.Sprintf(format, args...)
	}
	ng := g.node(n)
	m := ng.model
	if m == nil {
		alloc, free := gpusOf(n.Allocatable), gpusOf(n.Idle)
		if free < size || alloc == 0 {
			return 0, why("gpu 0: not enough free GPUs; ")
		}
		s := MaxScore * (1 - float64(free-size)/float64(alloc))
		return s, why("gpu %.0f: %d of %d free (no topology); ", s, free, alloc)
	}
	free := ng.occ.Free
	if free.Count() < size {
		return 0, why("gpu 0: not enough free GPUs; ")
	}
	pick, _ := m.Predict(free, size)
	penalty := 0.0
	if free == gputopology.All(m.N()) && size < m.N() {
		penalty = gpuWholeNodeCost
	}
	spanned, domain, largest := 0, -1, 0
	for d, set := range m.DomainSets {
		largest = max(largest, m.DomainSizes[d])
		if pick&set != 0 {
			spanned++
			domain = d
		}
	}
	switch {
	case spanned == 1:
		leftover := (free & m.DomainSets[domain]).Count() - size
		s := MaxScore - gpuLeftoverCost*float64(leftover)/float64(m.DomainSizes[domain]) - penalty
		return s, why("gpu %.0f: GPUs %v (%s) in one domain, %d left free there; ", s, m.Indices(pick), ng.occ.Source, leftover)
	case size > largest && spanned == (size+largest-1)/largest:
		// Larger than a domain: best when it takes as few as it can.
		s := MaxScore - penalty*float64(m.N()-size)/float64(m.N())
		return s, why("gpu %.0f: GPUs %v (%s) take %d domains, the fewest possible; ", s, m.Indices(pick), ng.occ.Source, spanned)
	}
	s := spanScore(m.Topology.Fabric) - penalty
	return s, why("gpu %.0f: GPUs %v (%s) would span %d %s domains; ", s, m.Indices(pick), ng.occ.Source, spanned, m.Topology.Fabric)
}

func spanScore(f gputopology.Fabric) float64 {
	switch f {
	case gputopology.FabricNVSwitch:
		return gpuSpanNVSwitch
	case gputopology.FabricPCIe:
		return gpuSpanPCIe
	}
	return gpuSpanNVLink
}

// MaxScore is the top of each score component; the ConfigMap weights scale
// them (Volcano's nodeorder and binpack plugins also score 0..100 x weight).
const MaxScore = 100.0
