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
