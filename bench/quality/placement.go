package quality

import (
	"fmt"
	"math/rand"
	"sort"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

// Cluster is the node layout the placements are judged on.
type Cluster struct {
	Preset       Preset
	Racks        int
	NodesPerRack int
	// Background holds GPUs already used per node (1-GPU jobs).
	Background map[string][]int
	// FirstFreeGPUs: pods get the lowest-numbered free GPUs of their node,
	// as a device plugin blind to the GPUs' links would give them, instead
	// of NVIDIA's topology-aware pick (the sensitivity pass that asks
	// whether a result needs the topology model the plugin scores with).
	FirstFreeGPUs bool
}

// NodeName and RackName name nodes and racks the same way everywhere.
func NodeName(i int) string { return fmt.Sprintf("node-%04d", i) }
func RackName(i int) string { return fmt.Sprintf("rack-%03d", i) }

func (c Cluster) nodes() int { return c.Racks * c.NodesPerRack }

func (c Cluster) rackOf(node string) string {
	var i int
	fmt.Sscanf(node, "node-%d", &i)
	return RackName(i / c.NodesPerRack)
}

// NewCluster pre-occupies about half the nodes with single-GPU jobs (1 to
// GPUsPerNode-1 of them each), with a fixed seed.
func NewCluster(p Preset, racks, nodesPerRack int, seed int64) Cluster {
	rng := rand.New(rand.NewSource(seed))
	c := Cluster{Preset: p, Racks: racks, NodesPerRack: nodesPerRack, Background: map[string][]int{}}
	for i := 0; i < c.nodes(); i++ {
		if rng.Float64() < 0.5 {
			for k := 1 + rng.Intn(p.GPUsPerNode-1); k > 0; k-- {
				c.Background[NodeName(i)] = append(c.Background[NodeName(i)], 1)
			}
		}
	}
	return c
}

// FreeGPUs after the background load.
func (c Cluster) FreeGPUs() int {
	used := 0
	for _, g := range c.Background {
		used += len(g)
	}
	return c.nodes()*c.Preset.GPUsPerNode - used
}

// Placement of a job: the node of each pod, pservers first (PServers of
// them) then trainers, empty when the job was not placed.
type Placement struct {
	Job   Job
	Nodes []string
}

// PodSizes lists a job's GPUs per pod in Placement order: pservers (0 GPUs)
// first.
func PodSizes(j Job) []int {
	var out []int
	for i := 0; i < j.PServers; i++ {
		out = append(out, 0)
	}
	for i := 0; i < j.Pods; i++ {
		out = append(out, j.PodGPUs)
	}
	return out
}

// Resolve turns placements into cost-model pods, giving each pod the GPUs
// NVIDIA's device plugin would give it on the node's topology (the shared
// model of pkg/gputopology, the one the scheduler scores with): the node's
// background pods first, then the placements in order, as the kubelet
// admits them. All placers are resolved with the same rule.
func (c Cluster) Resolve(ps []Placement) map[string][]Pod {
	model := c.gpuModel()
	type ref struct {
		job string
		idx int
	}
	byNode := map[string][]gputopology.PodRequest{}
	owner := map[string]ref{}
	nodes := make([]string, 0, len(c.Background))
	for n := range c.Background {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		for i, g := range c.Background[n] {
			byNode[n] = append(byNode[n], gputopology.PodRequest{Key: fmt.Sprintf("bg/%s/%d", n, i), GPUs: g})
		}
	}
	out := map[string][]Pod{}
	for _, p := range ps {
		sizes := PodSizes(p.Job)
		pods := make([]Pod, len(p.Nodes))
		for i, n := range p.Nodes {
			pods[i] = Pod{Node: n, Rack: c.rackOf(n), GPUs: sizes[i], PServer: sizes[i] == 0 && p.Job.PS}
			if sizes[i] > 0 {
				key := fmt.Sprintf("job/%s/%d", p.Job.Name, i)
				byNode[n] = append(byNode[n], gputopology.PodRequest{Key: key, GPUs: sizes[i]})
				owner[key] = ref{p.Job.Name, i}
			}
		}
		out[p.Job.Name] = pods
	}
	for _, reqs := range byNode {
		occ := model.Occupy(reqs, nil)
		if c.FirstFreeGPUs {
			occ = firstFree(model.N(), reqs)
		}
		for key, set := range occ.Pods {
			r, ok := owner[key]
			if !ok {
				continue
			}
			seen := map[int]bool{}
			var islands []int
			for _, pos := range set.Positions() {
				if is := model.Topology.GPUs[pos].Island; !seen[is] {
					seen[is] = true
					islands = append(islands, is)
				}
			}
			sort.Ints(islands)
			out[r.job][r.idx].Islands = islands
		}
	}
	return out
}

// firstFree gives each pod, in order, the lowest-numbered free GPUs.
func firstFree(n int, reqs []gputopology.PodRequest) gputopology.Occupancy {
	o := gputopology.Occupancy{Free: gputopology.All(n), Pods: map[string]gputopology.Set{}}
	for _, r := range reqs {
		var s gputopology.Set
		for pos, took := 0, 0; pos < n && took < r.GPUs; pos++ {
			if o.Free.Has(pos) {
				s |= 1 << pos
				took++
			}
		}
		o.Pods[r.Key], o.Free = s, o.Free&^s
	}
	return o
}

// gpuTopology is every node's GPU topology: the preset's GPUs in islands
// of its island size.
func (c Cluster) gpuTopology() *gputopology.Topology {
	p := c.Preset
	fabric := gputopology.FabricNVLink
	switch {
	case p.IslandSize >= p.GPUsPerNode:
		fabric = gputopology.FabricNVSwitch
	case p.IslandSize <= 1:
		fabric = gputopology.FabricPCIe
	}
	return gputopology.Uniform(fabric, p.GPUsPerNode, max(1, p.IslandSize))
}

func (c Cluster) gpuModel() *gputopology.Model {
	m, err := gputopology.ModelFor(c.gpuTopology().Encode())
	if err != nil {
		panic(fmt.Sprintf("preset %s: %v", c.Preset.Name, err)) // a preset is code: fixed by its author
	}
	return m
}

// Step is a job's step time under its placement.
func (c Cluster) Step(m Model, j Job, pods []Pod) float64 {
	if j.PS {
		return PSStep(c.Preset, m, m.Bsz, pods)
	}
	return CollectiveStep(c.Preset, m, m.Bsz, pods)
}
