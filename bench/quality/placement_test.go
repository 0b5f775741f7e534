package quality

import (
	"reflect"
	"testing"
)

// Pods get the islands NVIDIA's allocator gives them, after the node's
// background pods, on every preset's topology.
func TestResolveIslands(t *testing.T) {
	cases := []struct {
		name       string
		preset     Preset
		background []int
		podGPUs    int
		pods       int
		want       [][]int
	}{
		// Pairs: a 2-GPU pod gets one bridged pair, the next one another.
		{"pairs", PCIeNVLinkPairs, nil, 2, 2, [][]int{{0}, {1}}},
		// A GPU of pair 0 in use: a 4-GPU pod takes two whole pairs, not
		// the rest of the broken one.
		{"pairs after background", PCIeNVLinkPairs, []int{1}, 4, 1, [][]int{{2, 3}}},
		// NVSwitch: one island whatever the size.
		{"nvswitch", H100SXM, []int{3}, 4, 1, [][]int{{0}}},
		// PCIe: every GPU its own island.
		{"pcie", T4PCIe, nil, 2, 1, [][]int{{0, 1}}},
	}
	for _, c := range cases {
		cl := Cluster{Preset: c.preset, Racks: 1, NodesPerRack: 1, Background: map[string][]int{}}
		node := NodeName(0)
		if c.background != nil {
			cl.Background[node] = c.background
		}
		j := Job{Name: "j", Pods: c.pods, PodGPUs: c.podGPUs}
		p := Placement{Job: j}
		for i := 0; i < c.pods; i++ {
			p.Nodes = append(p.Nodes, node)
		}
		var got [][]int
		for _, pod := range cl.Resolve([]Placement{p})["j"] {
			got = append(got, pod.Islands)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: islands %v, want %v", c.name, got, c.want)
		}
	}
}

// No placement beats StepLowerBound: random placements on a half-used
// cluster and the best placement, for collective and PS jobs of every size
// on every preset. The PS rows include jobs BestPlacement places worse than
// other placements do (pservers round-robin), the case that let replays
// beat the old bound.
func TestStepLowerBoundHolds(t *testing.T) {
	m := Model{Name: "m", Params: 25e6, Gamma: 2, Profile: map[int]float64{32: 0.1}, Bsz: 32}
	jobs := []Job{
		{Name: "c1", GPUs: 1, PodGPUs: 1, Pods: 1},
		{Name: "c2x1", GPUs: 2, PodGPUs: 1, Pods: 2},
		{Name: "c8x1", GPUs: 8, PodGPUs: 8, Pods: 1},
		{Name: "c4x2", GPUs: 8, PodGPUs: 2, Pods: 4},
		{Name: "c16x8", GPUs: 16, PodGPUs: 8, Pods: 2},
		{Name: "c32x4", GPUs: 32, PodGPUs: 4, Pods: 8},
		{Name: "ps4", GPUs: 4, PodGPUs: 1, Pods: 4, PS: true, PServers: 1},
		{Name: "ps12", GPUs: 12, PodGPUs: 1, Pods: 12, PS: true, PServers: 3},
		{Name: "ps32", GPUs: 32, PodGPUs: 1, Pods: 32, PS: true, PServers: 8},
	}
	for _, p := range Presets {
		// Half the nodes partly used, and the same nodes empty (where the
		// largest jobs fit).
		c := NewCluster(p, 4, 4, 1)
		for _, j := range jobs {
			if j.PodGPUs > p.GPUsPerNode {
				continue // no node holds its pod
			}
			bound := StepLowerBound(p, m, j, c.NodesPerRack)
			empty, best := c.BestPlacement(j)
			if s := empty.Step(m, j, empty.Resolve([]Placement{best})[j.Name]); s < bound*(1-1e-12) {
				t.Errorf("%s %s: best placement %g below the bound %g", p.Name, j.Name, s, bound)
			}
			checked := 0
			for seed := int64(0); seed < 100; seed++ {
				on := c
				if seed%2 == 1 {
					on = empty
				}
				for _, pl := range on.RandomPlacer([]Job{j}, seed) {
					s := on.Step(m, j, on.Resolve([]Placement{pl})[j.Name])
					if s < bound*(1-1e-12) {
						t.Errorf("%s %s seed %d: placement %v steps %g, below the bound %g", p.Name, j.Name, seed, pl.Nodes, s, bound)
					}
					checked++
				}
			}
			if checked == 0 {
				t.Errorf("%s %s: no random placement fitted", p.Name, j.Name)
			}
		}
	}
}

// A topology-blind device plugin gives a pod the lowest free GPUs, where
// NVIDIA's allocator keeps it on whole NVLink pairs.
func TestFirstFreeGPUs(t *testing.T) {
	for _, c := range []struct {
		firstFree bool
		want      [][]int
	}{{false, [][]int{{1}}}, {true, [][]int{{0, 1}}}} {
		cl := Cluster{Preset: PCIeNVLinkPairs, Racks: 1, NodesPerRack: 1, Background: map[string][]int{NodeName(0): {1}}, FirstFreeGPUs: c.firstFree}
		j := Job{Name: "j", Pods: 1, PodGPUs: 2, GPUs: 2}
		var got [][]int
		for _, pod := range cl.Resolve([]Placement{{Job: j, Nodes: []string{NodeName(0)}}})["j"] {
			got = append(got, pod.Islands)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("first-free %v: islands %v, want %v", c.firstFree, got, c.want)
		}
	}
	p := PCIeNVLinkPairs.WithLinks(0.5)
	if p.IslandGBps != 100 || p.CrossIslandGBps != 6 || p.NICGbps != 50 || p.ComputeScale != PCIeNVLinkPairs.ComputeScale || p.NetLatency != PCIeNVLinkPairs.NetLatency {
		t.Errorf("WithLinks(0.5): %+v", p)
	}
}
