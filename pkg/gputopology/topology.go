// Package gputopology is the one model of a node's GPUs that the scheduler
// plugin, the GPU agent, the placement-quality benchmark and the e2e judge
// share: the node annotation the agent publishes (per GPU its index, UUID,
// NUMA node, nearest NIC and link to every other GPU), the NVLink islands
// derived from the links, the GPUs the agent saw assigned to pods, and the
// prediction of which GPUs NVIDIA's device plugin gives a pod, made by
// NVIDIA's own allocator (go-gpuallocator's best-effort policy) on devices
// built from the published links.
package gputopology

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Annotation is set on a node to describe how its GPUs are wired. Nothing
// standard publishes this (GPU Feature Discovery labels carry the model and
// count, not the links); the paddle-gpu-agent DaemonSet writes it, or an
// operator by hand (docs/gpu-topology.md).
const Annotation = "paddle.volcano.sh/gpu-topology"

// Fabric names how the GPUs of an island talk to each other.
type Fabric string

const (
	// FabricNVSwitch: the GPUs' NVLinks go to NVSwitches (HGX/DGX A100,
	// H100, B200); every GPU behind the switches is one island. NVML reports
	// the switch, not a GPU, as the NVLink peer, so NVIDIA's allocator sees
	// only the PCIe links between them.
	FabricNVSwitch Fabric = "NVSwitch"
	// FabricNVLink: direct NVLinks between GPUs (bridged pairs, DGX-1's
	// hybrid cube-mesh); between islands traffic crosses PCIe or the SMP link.
	FabricNVLink Fabric = "NVLink"
	// FabricPCIe: no NVLink; every GPU is its own island.
	FabricPCIe Fabric = "PCIe"
)

// Topology is the decoded value of Annotation.
type Topology struct {
	Fabric Fabric `json:"fabric"`
	GPUs   []GPU  `json:"gpus"`
}

// GPU is one GPU of the node.
type GPU struct {
	// Index is the device index as nvidia-smi and NVML number it.
	Index int `json:"index"`
	// UUID is the NVML UUID, the device ID NVIDIA's device plugin gives
	// the kubelet (optional when written by hand).
	UUID string `json:"uuid,omitempty"`
	// Island is the NVLink island; derived from Links when they are given.
	Island int `json:"island"`
	// NUMA is the GPU's NUMA node, -1 when unknown.
	NUMA int `json:"numa"`
	// NIC is the nearest network interface (optional).
	NIC string `json:"nic,omitempty"`
	// Links is the link to every GPU of the node, in the order of gpus, as
	// `nvidia-smi topo -m` writes it: X (itself), NV# (# bonded NVLinks,
	// direct or through NVSwitch), PIX, PXB, PHB, NODE, SYS. Optional.
	Links []string `json:"links,omitempty"`
	// PCIe is the PCIe path to every GPU (PIX, PXB, PHB, NODE, SYS), which
	// nvidia-smi hides behind NV#; the agent fills it from NVML. Without
	// it the PCIe path of an NVLinked pair is taken as NODE on one NUMA
	// node and SYS across.
	PCIe []string `json:"pcie,omitempty"`
}

// Level is a PCIe path between two GPUs, nearest first, as nvidia-smi names
// them in its topo -m legend.
type Level string

const (
	LevelSelf Level = "X"
	LevelPIX  Level = "PIX"  // at most a single PCIe bridge
	LevelPXB  Level = "PXB"  // multiple PCIe bridges, no host bridge
	LevelPHB  Level = "PHB"  // a PCIe host bridge (the CPU)
	LevelNODE Level = "NODE" // host bridges within a NUMA node
	LevelSYS  Level = "SYS"  // the SMP interconnect between NUMA nodes
)

// levelRank orders PCIe levels, nearest first.
var levelRank = map[Level]int{LevelPIX: 1, LevelPXB: 2, LevelPHB: 3, LevelNODE: 4, LevelSYS: 5}

// parseLevel accepts nvidia-smi's names, including the older SOC (now SYS)
// and CPU (now NODE/PHB) of drivers before R384.
func parseLevel(s string) (Level, bool) {
	switch l := Level(strings.ToUpper(strings.TrimSpace(s))); l {
	case LevelPIX, LevelPXB, LevelPHB, LevelNODE, LevelSYS:
		return l, true
	case "SOC":
		return LevelSYS, true
	case "CPU":
		return LevelNODE, true
	}
	return "", false
}

// nvLinks returns the # of an NV# link, 0 for anything else.
func nvLinks(link string) int {
	s := strings.ToUpper(strings.TrimSpace(link))
	if !strings.HasPrefix(s, "NV") {
		return 0
	}
	n, err := strconv.Atoi(s[2:])
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// Parse decodes and validates an annotation value.
func Parse(value string) (*Topology, error) {
	var t Topology
	if err := json.Unmarshal([]byte(value), &t); err != nil {
		return nil, fmt.Errorf("annotation %s is not valid JSON: %w", Annotation, err)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// Encode returns the annotation value.
func (t *Topology) Encode() string {
	b, _ := json.Marshal(t)
	return string(b)
}

// Validate checks what the model relies on, and that islands and fabric
// agree with the links where links are given, naming the field to fix.
func (t *Topology) Validate() error {
	switch t.Fabric {
	case FabricNVSwitch, FabricNVLink, FabricPCIe:
	default:
		return fmt.Errorf("annotation %s: fabric %q is not one of %s, %s, %s", Annotation, t.Fabric, FabricNVSwitch, FabricNVLink, FabricPCIe)
	}
	n := len(t.GPUs)
	if n == 0 {
		return fmt.Errorf("annotation %s: gpus is empty", Annotation)
	}
	if n > MaxGPUs {
		return fmt.Errorf("annotation %s: %d GPUs, at most %d are supported", Annotation, n, MaxGPUs)
	}
	seen := map[int]bool{}
	withLinks := 0
	for _, g := range t.GPUs {
		if g.Index < 0 || g.Island < 0 || g.NUMA < -1 {
			return fmt.Errorf("annotation %s: gpu %d has a negative index or island, or a numa below -1", Annotation, g.Index)
		}
		if seen[g.Index] {
			return fmt.Errorf("annotation %s: gpu index %d appears twice", Annotation, g.Index)
		}
		seen[g.Index] = true
		if len(g.Links) > 0 {
			withLinks++
		}
	}
	if withLinks == 0 {
		return nil
	}
	if withLinks != n {
		return fmt.Errorf("annotation %s: links are given for %d of %d GPUs; give them for all or none", Annotation, withLinks, n)
	}
	for i, g := range t.GPUs {
		if len(g.Links) != n {
			return fmt.Errorf("annotation %s: gpu %d has %d links, want one per GPU (%d)", Annotation, g.Index, len(g.Links), n)
		}
		if len(g.PCIe) != 0 && len(g.PCIe) != n {
			return fmt.Errorf("annotation %s: gpu %d has %d pcie entries, want one per GPU (%d)", Annotation, g.Index, len(g.PCIe), n)
		}
		for j, l := range g.Links {
			other := t.GPUs[j].Links[i]
			switch {
			case i == j:
				if Level(strings.TrimSpace(l)) != LevelSelf {
					return fmt.Errorf("annotation %s: gpu %d's link to itself is %q, want X", Annotation, g.Index, l)
				}
				continue
			case nvLinks(l) == 0:
				if _, ok := parseLevel(l); !ok {
					return fmt.Errorf("annotation %s: gpu %d's link to gpu %d is %q, not one of NV#, PIX, PXB, PHB, NODE, SYS", Annotation, g.Index, t.GPUs[j].Index, l)
				}
			}
			if !strings.EqualFold(strings.TrimSpace(l), strings.TrimSpace(other)) {
				return fmt.Errorf("annotation %s: gpu %d's link to gpu %d is %s but the reverse is %s", Annotation, g.Index, t.GPUs[j].Index, l, other)
			}
			if len(g.PCIe) == n {
				if _, ok := parseLevel(g.PCIe[j]); !ok {
					return fmt.Errorf("annotation %s: gpu %d's pcie path to gpu %d is %q, not one of PIX, PXB, PHB, NODE, SYS", Annotation, g.Index, t.GPUs[j].Index, g.PCIe[j])
				}
			}
		}
	}
	fabric, islands := deriveIslands(t.linkMatrix(), t.Fabric == FabricNVSwitch)
	if t.Fabric != fabric && !(t.Fabric == FabricNVSwitch && fabric == FabricNVLink) {
		return fmt.Errorf("annotation %s: fabric is %s but the links make it %s", Annotation, t.Fabric, fabric)
	}
	for i, g := range t.GPUs {
		if g.Island != islands[i] {
			return fmt.Errorf("annotation %s: gpu %d is in island %d but its links put it in island %d", Annotation, g.Index, g.Island, islands[i])
		}
	}
	return nil
}

// linkMatrix is the NV# count between every pair (by position in GPUs).
func (t *Topology) linkMatrix() [][]int {
	n := len(t.GPUs)
	m := make([][]int, n)
	for i, g := range t.GPUs {
		m[i] = make([]int, n)
		for j := range m[i] {
			if i != j && len(g.Links) == n {
				m[i][j] = nvLinks(g.Links[j])
			}
		}
	}
	return m
}

// pcieLevel is the PCIe path between the GPUs at positions i and j: the
// published pcie row, else the link when it is a PCIe level, else (an
// NVLinked pair seen only through nvidia-smi) NODE on one NUMA node and
// SYS across.
func (t *Topology) pcieLevel(i, j int) Level {
	a, b := t.GPUs[i], t.GPUs[j]
	if len(a.PCIe) == len(t.GPUs) {
		if l, ok := parseLevel(a.PCIe[j]); ok {
			return l
		}
	}
	if len(a.Links) == len(t.GPUs) {
		if l, ok := parseLevel(a.Links[j]); ok {
			return l
		}
	}
	if a.NUMA >= 0 && a.NUMA == b.NUMA {
		return LevelNODE
	}
	return LevelSYS
}

// Islands returns the GPU indices of each island, islands in ascending id
// order and indices sorted.
func (t *Topology) Islands() [][]int {
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

// Uniform builds the topology of a node with gpus GPUs in equal islands of
// islandSize (islandSize >= gpus: one island), island i on NUMA node i with
// NIC mlx5_i, as in 8-GPU servers with two NVLink quads, with the links
// nvidia-smi would show: NV4 inside an island on NVLink nodes, NV18 on
// NVSwitch nodes, and PCIe levels (NODE on one NUMA node, SYS across)
// elsewhere.
func Uniform(fabric Fabric, gpus, islandSize int) *Topology {
	if islandSize <= 0 || islandSize > gpus || fabric == FabricNVSwitch {
		islandSize = gpus
	}
	if fabric == FabricPCIe {
		islandSize = 1
	}
	numaSize := islandSize
	if fabric != FabricNVLink {
		numaSize = max(1, gpus/2) // two sockets
	}
	t := &Topology{Fabric: fabric}
	for i := 0; i < gpus; i++ {
		numa := i / numaSize
		t.GPUs = append(t.GPUs, GPU{Index: i, UUID: fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i),
			Island: i / islandSize, NUMA: numa, NIC: fmt.Sprintf("mlx5_%d", numa)})
	}
	for i := range t.GPUs {
		for j := range t.GPUs {
			var l string
			switch {
			case i == j:
				l = string(LevelSelf)
			case fabric == FabricNVSwitch:
				l = "NV18"
			case fabric == FabricNVLink && i/islandSize == j/islandSize:
				l = "NV4"
			case i/numaSize == j/numaSize:
				l = string(LevelNODE)
			default:
				l = string(LevelSYS)
			}
			t.GPUs[i].Links = append(t.GPUs[i].Links, l)
		}
	}
	return t
}
