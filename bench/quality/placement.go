package quality

import (
	"fmt"
	"math/rand"
	"sort"
)

// Cluster is the node layout the placements are judged on.
type Cluster struct {
	Preset       Preset
	Racks        int
	NodesPerRack int
	// Background holds GPUs already used per node (1-GPU jobs).
	Background map[string][]int
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

// podSizes lists a job's pods in Placement order: pservers (0 GPUs) first.
func podSizes(j Job) []int {
	var out []int
	for i := 0; i < j.PServers; i++ {
		out = append(out, 0)
	}
	for i := 0; i < j.Pods; i++ {
		out = append(out, j.PodGPUs)
	}
	return out
}

// Resolve turns placements into cost-model pods, assigning GPUs to islands
// the way NVIDIA's device plugin does on every node (largest requests first,
// each into the tightest island that holds it), background pods included.
// All placers are resolved with the same rule.
func (c Cluster) Resolve(ps []Placement) map[string][]Pod {
	type req struct {
		job string
		idx int
		g   int
	}
	byNode := map[string][]req{}
	for n, gs := range c.Background {
		for i, g := range gs {
			byNode[n] = append(byNode[n], req{"", i, g})
		}
	}
	out := map[string][]Pod{}
	for _, p := range ps {
		sizes := podSizes(p.Job)
		pods := make([]Pod, len(p.Nodes))
		for i, n := range p.Nodes {
			pods[i] = Pod{Node: n, Rack: c.rackOf(n), GPUs: sizes[i], PServer: sizes[i] == 0 && p.Job.PS}
			if sizes[i] > 0 {
				byNode[n] = append(byNode[n], req{p.Job.Name, i, sizes[i]})
			}
		}
		out[p.Job.Name] = pods
	}
	islandSize := max(1, c.Preset.IslandSize)
	islands := c.Preset.GPUsPerNode / islandSize
	for _, reqs := range byNode {
		sort.Slice(reqs, func(a, b int) bool {
			if reqs[a].g != reqs[b].g {
				return reqs[a].g > reqs[b].g
			}
			if reqs[a].job != reqs[b].job {
				return reqs[a].job < reqs[b].job
			}
			return reqs[a].idx < reqs[b].idx
		})
		free := make([]int, islands)
		for i := range free {
			free[i] = islandSize
		}
		for _, r := range reqs {
			var used []int
			best := -1
			for i, f := range free {
				if f >= r.g && (best < 0 || f < free[best]) {
					best = i
				}
			}
			if best >= 0 {
				free[best] -= r.g
				used = []int{best}
			} else {
				order := make([]int, len(free))
				for i := range order {
					order[i] = i
				}
				sort.SliceStable(order, func(a, b int) bool { return free[order[a]] > free[order[b]] })
				g := r.g
				for _, i := range order {
					if g == 0 {
						break
					}
					if take := min(g, free[i]); take > 0 {
						free[i] -= take
						g -= take
						used = append(used, i)
					}
				}
			}
			if r.job != "" {
				out[r.job][r.idx].Islands = used
			}
		}
	}
	return out
}

// Step is a job's step time under its placement.
func (c Cluster) Step(m Model, j Job, pods []Pod) float64 {
	if j.PS {
		return PSStep(c.Preset, m, m.Bsz, pods)
	}
	return CollectiveStep(c.Preset, m, m.Bsz, pods)
}
