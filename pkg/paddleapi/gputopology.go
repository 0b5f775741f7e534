package paddleapi

import (
	"encoding/json"
	"fmt"
	"sort"
)

// GPUTopologyAnnotation is set on a node to describe how its GPUs are wired.
// Nothing standard publishes this (GPU Feature Discovery labels carry the
// model and count, not the links), so we define it; see
// docs/scheduler-plugin.md for the format.
const GPUTopologyAnnotation = "paddle.volcano.sh/gpu-topology"

// Fabric names how GPUs inside one island talk to each other.
type Fabric string

const (
	// FabricNVSwitch: every GPU pair is connected through NVSwitch (e.g. HGX
	// H100/A100); the whole node is one island.
	FabricNVSwitch Fabric = "NVSwitch"
	// FabricNVLink: direct NVLink inside islands (e.g. two quads, or pairs
	// joined by NVLink bridges); between islands traffic crosses PCIe/QPI.
	FabricNVLink Fabric = "NVLink"
	// FabricPCIe: no NVLink; every GPU is its own island.
	FabricPCIe Fabric = "PCIe"
)

// GPUTopology is the decoded value of GPUTopologyAnnotation.
type GPUTopology struct {
	Fabric Fabric    `json:"fabric"`
	GPUs   []GPUInfo `json:"gpus"`
}

// GPUInfo describes one GPU: its device index, the NVLink island it belongs
// to, its NUMA node and its nearest NIC (empty if unknown).
type GPUInfo struct {
	Index  int    `json:"index"`
	Island int    `json:"island"`
	NUMA   int    `json:"numa"`
	NIC    string `json:"nic,omitempty"`
}

// ParseGPUTopology decodes and validates an annotation value.
func ParseGPUTopology(value string) (*GPUTopology, error) {
	var t GPUTopology
	if err := json.Unmarshal([]byte(value), &t); err != nil {
		return nil, fmt.Errorf("annotation %s is not valid JSON: %w", GPUTopologyAnnotation, err)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// Validate checks the invariants the scheduler relies on.
func (t *GPUTopology) Validate() error {
	switch t.Fabric {
	case FabricNVSwitch, FabricNVLink, FabricPCIe:
	default:
		return fmt.Errorf("annotation %s: fabric %q is not one of %s, %s, %s",
			GPUTopologyAnnotation, t.Fabric, FabricNVSwitch, FabricNVLink, FabricPCIe)
	}
	if len(t.GPUs) == 0 {
		return fmt.Errorf("annotation %s: gpus is empty", GPUTopologyAnnotation)
	}
	seen := map[int]bool{}
	for _, g := range t.GPUs {
		if g.Index < 0 || g.Island < 0 || g.NUMA < 0 {
			return fmt.Errorf("annotation %s: gpu %d has a negative index, island or numa", GPUTopologyAnnotation, g.Index)
		}
		if seen[g.Index] {
			return fmt.Errorf("annotation %s: gpu index %d appears twice", GPUTopologyAnnotation, g.Index)
		}
		seen[g.Index] = true
	}
	return nil
}

// Encode returns the annotation value.
func (t *GPUTopology) Encode() string {
	b, _ := json.Marshal(t)
	return string(b)
}

// Islands returns the GPU indices of each island, islands in ascending id
// order and indices sorted.
func (t *GPUTopology) Islands() [][]int {
	byID := map[int][]int{}
	for _, g := range t.GPUs {
		byID[g.Island] = append(byID[g.Island], g.Index)
	}
	ids := make([]int, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	out := make([][]int, 0, len(ids))
	for _, id := range ids {
		idx := byID[id]
		sort.Ints(idx)
		out = append(out, idx)
	}
	return out
}

// UniformTopology builds the topology of a node with gpus GPUs split into
// equal islands of islandSize (islandSize == gpus means one island), each
// island on its own NUMA node with its own NIC, the common layout of 8-GPU
// servers with two NVLink quads.
func UniformTopology(fabric Fabric, gpus, islandSize int) *GPUTopology {
	if islandSize <= 0 || islandSize > gpus {
		islandSize = gpus
	}
	t := &GPUTopology{Fabric: fabric}
	for i := 0; i < gpus; i++ {
		island := i / islandSize
		t.GPUs = append(t.GPUs, GPUInfo{Index: i, Island: island, NUMA: island, NIC: fmt.Sprintf("mlx5_%d", island)})
	}
	return t
}
