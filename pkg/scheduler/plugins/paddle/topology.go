package paddle

import (
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// gpuResource is the extended resource of NVIDIA's device plugin. Volcano
// keeps scalar resources in milli-units.
const gpuResource v1.ResourceName = "nvidia.com/gpu"

func gpusOf(r *api.Resource) int {
	if r == nil {
		return 0
	}
	return int(r.Get(gpuResource) / 1000)
}

// place is where a node sits in the network: its rack and spine (the tier
// above racks). Empty names are unknown.
type place struct{ rack, spine string }

// buildPlaces maps every node to its rack and spine: from Volcano HyperNodes
// when the cluster has them (the lowest tier as rack, the next as spine),
// else from the configured node labels.
func buildPlaces(ssn *framework.Session, a Args) map[string]place {
	out := make(map[string]place, len(ssn.Nodes))
	if len(ssn.HyperNodesTiers) > 0 && ssn.HyperNodesReadyToSchedule {
		for level, tier := range ssn.HyperNodesTiers {
			if level > 1 {
				break
			}
			for hn := range ssn.HyperNodesSetByTier[tier] {
				if hn == framework.ClusterTopHyperNode {
					continue
				}
				for _, n := range ssn.RealNodesList[hn] {
					p := out[n.Name]
					if level == 0 {
						p.rack = hn
					} else {
						p.spine = hn
					}
					out[n.Name] = p
				}
			}
		}
	}
	for name, n := range ssn.Nodes {
		p := out[name]
		if n.Node != nil {
			if p.rack == "" && a.RackLabel != "" {
				p.rack = n.Node.Labels[a.RackLabel]
			}
			if p.spine == "" && a.SpineLabel != "" {
				p.spine = n.Node.Labels[a.SpineLabel]
			}
		}
		out[name] = p
	}
	return out
}

// closeness of two nodes in [0,1]: 1 same node, 0.6 same rack, 0.3 same
// spine, 0 otherwise (or unknown).
func closeness(a, b string, pa, pb place) float64 {
	switch {
	case a == b:
		return 1
	case pa.rack != "" && pa.rack == pb.rack:
		return 0.6
	case pa.spine != "" && pa.spine == pb.spine:
		return 0.3
	}
	return 0
}

// gpuLayout is a node's GPUs grouped into fit domains: GPUs that work best
// together. On NVLink nodes a domain is an NVLink island; on NVSwitch nodes
// (every pair at full NVLink speed) and PCIe nodes it is a NUMA node, whose
// CPU and NIC the GPUs share.
type gpuLayout struct {
	fabric  paddleapi.Fabric
	domains []int // GPUs per domain
	total   int
}

// Parsed annotations are shared by all sessions: a node's annotation rarely
// changes and parsing it on every session for thousands of nodes is waste.
var layoutCache sync.Map // annotation value -> *gpuLayout (nil when invalid)

func layoutOf(node *v1.Node) *gpuLayout {
	if node == nil {
		return nil
	}
	value, ok := node.Annotations[paddleapi.GPUTopologyAnnotation]
	if !ok {
		return nil
	}
	if l, ok := layoutCache.Load(value); ok {
		return l.(*gpuLayout)
	}
	var l *gpuLayout
	if t, err := paddleapi.ParseGPUTopology(value); err == nil {
		l = newGPULayout(t)
	}
	layoutCache.Store(value, l)
	return l
}

func newGPULayout(t *paddleapi.GPUTopology) *gpuLayout {
	byDomain := map[int]int{}
	for _, g := range t.GPUs {
		key := g.Island
		if t.Fabric != paddleapi.FabricNVLink {
			key = g.NUMA
		}
		byDomain[key]++
	}
	keys := make([]int, 0, len(byDomain))
	for k := range byDomain {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	l := &gpuLayout{fabric: t.Fabric, total: len(t.GPUs)}
	for _, k := range keys {
		l.domains = append(l.domains, byDomain[k])
	}
	return l
}

// freePerDomain replays the GPU pods on a node into its domains and returns
// the free GPUs of each. Kubernetes does not tell the scheduler which GPUs a
// pod got; NVIDIA's device plugin prefers GPUs that share NVLink, so the
// replay places the largest requests first, each into the tightest domain
// that holds it. Pods this session placed are on the node too, and leave it
// again when their gang is rolled back, so the replay follows both.
func (l *gpuLayout) freePerDomain(node *api.NodeInfo) []int {
	free := append([]int(nil), l.domains...)
	var reqs []int
	for _, t := range node.Tasks {
		if g := gpusOf(t.Resreq); g > 0 {
			reqs = append(reqs, g)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(reqs)))
	for _, g := range reqs {
		takeGPUs(free, g)
	}
	return free
}

// takeGPUs takes g GPUs from free: from the tightest domain that holds them
// all, else from the fullest domains first (fewest domains spanned).
func takeGPUs(free []int, g int) {
	best := -1
	for i, f := range free {
		if f >= g && (best < 0 || f < free[best]) {
			best = i
		}
	}
	if best >= 0 {
		free[best] -= g
		return
	}
	order := make([]int, len(free))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return free[order[a]] > free[order[b]] })
	for _, i := range order {
		take := min(g, free[i])
		free[i] -= take
		g -= take
		if g == 0 {
			return
		}
	}
}

// domainsNeeded is the fewest domains g GPUs can occupy given free.
func domainsNeeded(free []int, g int) int {
	sorted := append([]int(nil), free...)
	sort.Sort(sort.Reverse(sort.IntSlice(sorted)))
	n := 0
	for _, f := range sorted {
		if g <= 0 {
			break
		}
		g -= f
		n++
	}
	if g > 0 {
		return -1
	}
	return n
}
