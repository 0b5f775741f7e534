// Package gputopologytest holds recorded GPU link tables of five kinds of
// machines, served through go-nvml's mock package as NVML would report them,
// for the tests of the GPU model and the agent.
package gputopologytest

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// Machine is a recorded link table: what NVML reports for each GPU pair
// (the PCIe common ancestor and the NVLinks), with the islands, fabric and
// NICs a correct reading gives.
type Machine struct {
	Name string
	// TopoFile is the `nvidia-smi topo -m` text of the same machine, in
	// ../testdata.
	TopoFile string
	Model    string
	NUMA     []int
	// PCIe is the common-ancestor level of every pair (X on the diagonal).
	PCIe [][]string
	// NVLink counts the direct NVLinks of every pair.
	NVLink [][]int
	// SwitchLinks is the NVLinks each GPU has into the NVSwitches (0: none).
	SwitchLinks int
	// NIC is each GPU's nearest NIC.
	NIC []string

	// What a correct reading finds.
	Fabric  string
	Islands [][]int
	// Links is the NV# or PCIe level nvidia-smi prints for every pair.
	Links [][]string
}

// N is the number of GPUs.
func (m Machine) N() int { return len(m.NUMA) }

// UUID of the GPU with index i.
func (m Machine) UUID(i int) string {
	return fmt.Sprintf("GPU-%s-%04d-0000-0000-000000000000", m.Name[:4], i)
}

// BusID of the GPU with index i, as NVML writes it (8-digit domain).
func (m Machine) BusID(i int) string { return fmt.Sprintf("00000000:%02X:00.0", 0x18+0x10*i) }

// switchBusID is the PCI bus ID of NVSwitch s (HGX boards have four).
func switchBusID(s int) string { return fmt.Sprintf("00000000:%02X:00.0", 0xC0+s) }

const nvSwitches = 4

var topologyLevels = map[string]nvml.GpuTopologyLevel{
	"PIX": nvml.TOPOLOGY_SINGLE, "PXB": nvml.TOPOLOGY_MULTIPLE, "PHB": nvml.TOPOLOGY_HOSTBRIDGE,
	"NODE": nvml.TOPOLOGY_NODE, "SYS": nvml.TOPOLOGY_SYSTEM,
}

// NVML serves the machine through go-nvml's mock package, answering every
// call the agent and go-gpuallocator make the way a driver does: NVLink
// peers by PCI bus ID, NVSwitch links with the switch as the peer.
func (m Machine) NVML() nvml.Interface {
	n := m.N()
	devs := make([]*mock.Device, n)
	byUUID := map[string]int{}
	for i := 0; i < n; i++ {
		i := i
		// The far end of each NVLink, and whether it is a switch.
		var remote []string
		var isSwitch []bool
		for j := 0; j < n; j++ {
			for k := 0; k < m.NVLink[i][j]; k++ {
				remote, isSwitch = append(remote, m.BusID(j)), append(isSwitch, false)
			}
		}
		for k := 0; k < m.SwitchLinks; k++ {
			remote, isSwitch = append(remote, switchBusID(k%nvSwitches)), append(isSwitch, true)
		}
		byUUID[m.UUID(i)] = i
		devs[i] = &mock.Device{
			GetIndexFunc: func() (int, nvml.Return) { return i, nvml.SUCCESS },
			GetNameFunc:  func() (string, nvml.Return) { return m.Model, nvml.SUCCESS },
			GetUUIDFunc:  func() (string, nvml.Return) { return m.UUID(i), nvml.SUCCESS },
			GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
				return pciInfo(m.BusID(i)), nvml.SUCCESS
			},
			GetNumaNodeIdFunc: func() (int, nvml.Return) { return m.NUMA[i], nvml.SUCCESS },
			GetTopologyCommonAncestorFunc: func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
				u, ret := other.GetUUID()
				if ret != nvml.SUCCESS {
					return 0, ret
				}
				j, ok := byUUID[u]
				if !ok || j == i {
					return 0, nvml.ERROR_INVALID_ARGUMENT
				}
				return topologyLevels[m.PCIe[i][j]], nvml.SUCCESS
			},
			GetNvLinkStateFunc: func(link int) (nvml.EnableState, nvml.Return) {
				if len(remote) == 0 {
					return 0, nvml.ERROR_NOT_SUPPORTED
				}
				if link >= len(remote) {
					return nvml.FEATURE_DISABLED, nvml.SUCCESS
				}
				return nvml.FEATURE_ENABLED, nvml.SUCCESS
			},
			GetNvLinkRemotePciInfoFunc: func(link int) (nvml.PciInfo, nvml.Return) {
				if link >= len(remote) {
					return nvml.PciInfo{}, nvml.ERROR_INVALID_ARGUMENT
				}
				return pciInfo(remote[link]), nvml.SUCCESS
			},
			GetNvLinkRemoteDeviceTypeFunc: func(link int) (nvml.IntNvLinkDeviceType, nvml.Return) {
				if link >= len(remote) {
					return nvml.NVLINK_DEVICE_TYPE_UNKNOWN, nvml.ERROR_INVALID_ARGUMENT
				}
				if isSwitch[link] {
					return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
				}
				return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
			},
		}
	}
	return &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return n, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= n {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
	}
}

func pciInfo(bus string) nvml.PciInfo {
	var p nvml.PciInfo
	for i := 0; i < len(bus) && i < len(p.BusId)-1; i++ {
		p.BusId[i] = int8(bus[i])
	}
	return p
}

// Locality answers NIC and NUMA questions from the machine's table, as the
// agent's sysfs lookup does on a real node.
type Locality struct{ M Machine }

func (l Locality) index(bus string) int {
	for i := 0; i < l.M.N(); i++ {
		if b := l.M.BusID(i); b[4:] == bus || b == bus {
			return i
		}
	}
	return -1
}

// NUMA of the GPU at bus.
func (l Locality) NUMA(bus string) int {
	if i := l.index(bus); i >= 0 {
		return l.M.NUMA[i]
	}
	return -1
}

// NearestNIC of the GPU at bus.
func (l Locality) NearestNIC(bus string) string {
	if i := l.index(bus); i >= 0 && i < len(l.M.NIC) {
		return l.M.NIC[i]
	}
	return ""
}

// pcie builds a PCIe table from a rule on GPU pairs.
func pcie(n int, level func(i, j int) string) [][]string {
	t := make([][]string, n)
	for i := range t {
		t[i] = make([]string, n)
		for j := range t[i] {
			if i == j {
				t[i][j] = "X"
			} else {
				t[i][j] = level(i, j)
			}
		}
	}
	return t
}

// links is what nvidia-smi prints: NV# where there are NVLinks (through the
// switches: the GPU's switch links), else the PCIe level.
func links(pcie [][]string, nv [][]int, switchLinks int) [][]string {
	t := make([][]string, len(pcie))
	for i := range pcie {
		t[i] = make([]string, len(pcie))
		for j := range pcie {
			switch {
			case i == j:
				t[i][j] = "X"
			case nv[i][j]+switchLinks > 0:
				t[i][j] = fmt.Sprintf("NV%d", nv[i][j]+switchLinks)
			default:
				t[i][j] = pcie[i][j]
			}
		}
	}
	return t
}

func noNVLink(n int) [][]int {
	t := make([][]int, n)
	for i := range t {
		t[i] = make([]int, n)
	}
	return t
}

func sameHalf(i, j, n int) bool { return i/(n/2) == j/(n/2) }

// tiers is the PCIe table of a two-socket machine: pair between GPUs 2k and
// 2k+1 (unless pair is empty), half within a socket, SYS across sockets.
func tiers(n int, pair, half string) [][]string {
	return pcie(n, func(i, j int) string {
		switch {
		case pair != "" && i/2 == j/2:
			return pair
		case sameHalf(i, j, n):
			return half
		}
		return "SYS"
	})
}

// nvSwitch8 is an 8-GPU machine whose GPUs reach each other only through
// NVSwitches (links NVLinks each), one island; pair is the PCIe tier of GPU
// pairs (tiers), numa and nic per GPU.
func nvSwitch8(name, topoFile, model string, links int, pair string, numa []int, nic []string) Machine {
	m := Machine{Name: name, TopoFile: topoFile, Model: model,
		NUMA: numa, NVLink: noNVLink(8), SwitchLinks: links, NIC: nic,
		Fabric: "NVSwitch", Islands: [][]int{{0, 1, 2, 3, 4, 5, 6, 7}}}
	m.PCIe = tiers(8, pair, "NODE")
	return m
}

// Machines are the five recorded machines.
func Machines() []Machine {
	var ms []Machine

	// HGX H100 8-GPU: every GPU has 18 NVLinks into four NVSwitches; two
	// sockets of four GPUs, one NIC per GPU.
	ms = append(ms, nvSwitch8("hgx-h100", "hgx-h100.txt", "NVIDIA H100 80GB HBM3", 18, "",
		[]int{0, 0, 0, 0, 1, 1, 1, 1},
		[]string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"}))

	// DGX A100: 12 NVLinks per GPU into six NVSwitches (served as four
	// here), GPU pairs behind one PCIe switch with a pair of NICs.
	ms = append(ms, nvSwitch8("dgx-a100", "dgx-a100.txt", "NVIDIA A100-SXM4-80GB", 12, "PXB",
		[]int{3, 3, 1, 1, 7, 7, 5, 5},
		[]string{"mlx5_0", "mlx5_0", "mlx5_2", "mlx5_2", "mlx5_6", "mlx5_6", "mlx5_8", "mlx5_8"}))

	// A 4-GPU PCIe server, two sockets, GPUs 0-1 and 2-3 joined by NVLink
	// bridges (NV4 on RTX A6000).
	p := Machine{Name: "pcie-nvlink-pairs", TopoFile: "pcie-nvlink-pairs.txt", Model: "NVIDIA RTX A6000",
		NUMA: []int{0, 0, 1, 1}, NVLink: noNVLink(4), NIC: []string{"mlx5_0", "mlx5_0", "mlx5_0", "mlx5_0"},
		Fabric: "NVLink", Islands: [][]int{{0, 1}, {2, 3}}}
	p.NVLink[0][1], p.NVLink[1][0], p.NVLink[2][3], p.NVLink[3][2] = 4, 4, 4, 4
	p.PCIe = tiers(4, "", "NODE")
	ms = append(ms, p)

	// A PCIe-only node: four T4s, two per PCIe switch, one switch per
	// socket, no NVLink, no RDMA NIC.
	t := Machine{Name: "pcie-t4", TopoFile: "pcie-t4.txt", Model: "Tesla T4",
		NUMA: []int{0, 0, 1, 1}, NVLink: noNVLink(4), NIC: []string{"", "", "", ""},
		Fabric: "PCIe", Islands: [][]int{{0}, {1}, {2}, {3}}}
	t.PCIe = tiers(4, "", "PIX")
	ms = append(ms, t)

	// DGX-1 with V100: the hybrid cube-mesh. Six NVLinks per GPU: NV1, NV1,
	// NV2 inside its quad and NV2 to its twin in the other quad; GPU pairs
	// share a PCIe switch, two switches per socket.
	d := Machine{Name: "dgx1-v100", TopoFile: "dgx1-v100.txt", Model: "Tesla V100-SXM2-32GB",
		NUMA: []int{0, 0, 0, 0, 1, 1, 1, 1}, NVLink: noNVLink(8),
		NIC:    []string{"mlx5_0", "mlx5_0", "mlx5_1", "mlx5_1", "mlx5_2", "mlx5_2", "mlx5_3", "mlx5_3"},
		Fabric: "NVLink", Islands: [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}}
	cube := [][3]int{
		{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {1, 2, 2}, {1, 3, 1}, {2, 3, 2},
		{4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2},
		{0, 4, 2}, {1, 5, 2}, {2, 6, 1}, {3, 7, 1},
	}
	for _, e := range cube {
		d.NVLink[e[0]][e[1]], d.NVLink[e[1]][e[0]] = e[2], e[2]
	}
	d.PCIe = tiers(8, "PIX", "PHB")
	ms = append(ms, d)

	for i := range ms {
		ms[i].Links = links(ms[i].PCIe, ms[i].NVLink, ms[i].SwitchLinks)
	}
	return ms
}
