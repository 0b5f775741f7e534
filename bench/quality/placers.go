package quality

import (
	"math/rand"
)

// podCPU is what every pod asks of CPU in all placers and in the scheduler
// runs (cores), against 64 per node.
const (
	podCPU  = 4
	nodeCPU = 64
)

type capacity struct {
	gpu, cpu map[string]int
}

func (c Cluster) capacity() capacity {
	cp := capacity{gpu: map[string]int{}, cpu: map[string]int{}}
	for i := 0; i < c.nodes(); i++ {
		n := NodeName(i)
		cp.gpu[n] = c.Preset.GPUsPerNode - len(c.Background[n])
		cp.cpu[n] = nodeCPU - podCPU*len(c.Background[n])
	}
	return cp
}

// RandomPlacer places jobs in arrival order, each pod on a random node with
// room for it, the whole gang or nothing: the yardstick for "no placement
// policy".
func (c Cluster) RandomPlacer(jobs []Job, seed int64) []Placement {
	rng := rand.New(rand.NewSource(seed))
	cp := c.capacity()
	names := make([]string, c.nodes())
	for i := range names {
		names[i] = NodeName(i)
	}
	var out []Placement
	for _, j := range jobs {
		var nodes []string
		ok := true
		for _, g := range PodSizes(j) {
			var fit []string
			for _, n := range names {
				if cp.gpu[n] >= g && cp.cpu[n] >= podCPU {
					fit = append(fit, n)
				}
			}
			if len(fit) == 0 {
				ok = false
				break
			}
			n := fit[rng.Intn(len(fit))]
			cp.gpu[n] -= g
			cp.cpu[n] -= podCPU
			nodes = append(nodes, n)
		}
		if !ok { // roll the gang back
			for i, n := range nodes {
				cp.gpu[n] += PodSizes(j)[i]
				cp.cpu[n] += podCPU
			}
			continue
		}
		out = append(out, Placement{Job: j, Nodes: nodes})
	}
	return out
}

// BestPlacement is the best placement a job could have, alone on an empty
// cluster of the same nodes: its GPUs on as few nodes as possible, all in
// one rack, pservers on the trainers' nodes. Slowdowns are measured against
// it.
func (c Cluster) BestPlacement(j Job) (Cluster, Placement) {
	empty := Cluster{Preset: c.Preset, Racks: c.Racks, NodesPerRack: c.NodesPerRack, Background: map[string][]int{}}
	perNode := c.Preset.GPUsPerNode
	var nodes []string
	node, left := 0, perNode
	var trainerNodes []string
	for i := 0; i < j.Pods; i++ {
		if left < j.PodGPUs {
			node++
			left = perNode
		}
		left -= j.PodGPUs
		trainerNodes = append(trainerNodes, NodeName(node))
	}
	distinct := []string{}
	seen := map[string]bool{}
	for _, n := range trainerNodes {
		if !seen[n] {
			seen[n] = true
			distinct = append(distinct, n)
		}
	}
	for i := 0; i < j.PServers; i++ {
		nodes = append(nodes, distinct[i%len(distinct)])
	}
	nodes = append(nodes, trainerNodes...)
	return empty, Placement{Job: j, Nodes: nodes}
}
