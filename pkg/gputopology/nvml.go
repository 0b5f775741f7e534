package gputopology

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// topologyLevel maps NVML's common-ancestor levels to nvidia-smi's names
// (nvidia-smi topo -m prints the same table from the same call).
// TOPOLOGY_INTERNAL (two GPUs on one board) is the nearest there is.
var topologyLevel = map[nvml.GpuTopologyLevel]Level{
	nvml.TOPOLOGY_INTERNAL: LevelPIX, nvml.TOPOLOGY_SINGLE: LevelPIX, nvml.TOPOLOGY_MULTIPLE: LevelPXB,
	nvml.TOPOLOGY_HOSTBRIDGE: LevelPHB, nvml.TOPOLOGY_NODE: LevelNODE, nvml.TOPOLOGY_SYSTEM: LevelSYS,
}

// Locality answers what NVML does not know about a GPU, by its PCI bus ID:
// its NUMA node where NVML cannot tell (-1 unknown), and its nearest NIC.
type Locality interface {
	NUMA(busID string) int
	NearestNIC(busID string) string
}

// FromNVML reads the node's GPUs through NVML: index, UUID, NUMA node, the
// PCIe path between every pair (GetTopologyCommonAncestor) and the NVLinks
// of each GPU (GetNvLinkState, GetNvLinkRemotePciInfo,
// GetNvLinkRemoteDeviceType). A link whose far end is a GPU is a direct
// NVLink; one whose far end is an NVSwitch joins the GPU to every other GPU
// behind the switches (NVML names the switch, not the GPU, as the peer).
func FromNVML(lib nvml.Interface, loc Locality) (*Topology, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML init: %v", nvmlError(ret))
	}
	defer lib.Shutdown()
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device count: %v", nvmlError(ret))
	}
	if count == 0 {
		return nil, fmt.Errorf("NVML sees no GPU")
	}
	if count > MaxGPUs {
		return nil, fmt.Errorf("%d GPUs, at most %d are supported", count, MaxGPUs)
	}
	devs := make([]nvml.Device, count)
	bus := make([]string, count)
	posOfBus := map[string]int{}
	t := &Topology{GPUs: make([]GPU, count)}
	for i := range devs {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d: %v", i, nvmlError(ret))
		}
		devs[i] = d
		g := GPU{Index: i, NUMA: -1}
		if idx, ret := d.GetIndex(); ret == nvml.SUCCESS {
			g.Index = idx
		}
		if g.UUID, ret = d.GetUUID(); ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d UUID: %v", i, nvmlError(ret))
		}
		pci, ret := d.GetPciInfo()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("NVML device %d PCI info: %v", i, nvmlError(ret))
		}
		bus[i] = normBusID(pci)
		posOfBus[bus[i]] = i
		if numa, ret := d.GetNumaNodeId(); ret == nvml.SUCCESS && numa >= 0 {
			g.NUMA = numa
		} else if loc != nil {
			g.NUMA = loc.NUMA(bus[i])
		}
		if loc != nil {
			g.NIC = loc.NearestNIC(bus[i])
		}
		t.GPUs[i] = g
	}
	direct := make([][]int, count)
	switchLinks := make([]int, count)
	for i, d := range devs {
		direct[i] = make([]int, count)
		for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
			state, ret := d.GetNvLinkState(l)
			if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
				continue
			}
			if ret != nvml.SUCCESS {
				return nil, fmt.Errorf("NVML device %d NVLink %d state: %v", i, l, nvmlError(ret))
			}
			if state != nvml.FEATURE_ENABLED {
				continue
			}
			remote, ret := d.GetNvLinkRemotePciInfo(l)
			if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
				continue
			}
			if ret != nvml.SUCCESS {
				return nil, fmt.Errorf("NVML device %d NVLink %d remote: %v", i, l, nvmlError(ret))
			}
			peer, isGPU := posOfBus[normBusID(remote)]
			kind, ret := d.GetNvLinkRemoteDeviceType(l)
			switch {
			case ret == nvml.SUCCESS && kind == nvml.NVLINK_DEVICE_TYPE_SWITCH:
				switchLinks[i]++
			case isGPU && peer != i:
				direct[i][peer]++
			case !isGPU && ret != nvml.SUCCESS:
				// Older drivers lack the remote type: a peer that is no
				// GPU of this node is the switch.
				switchLinks[i]++
			}
		}
	}
	nv := make([][]int, count)
	for i := range t.GPUs {
		nv[i] = make([]int, count)
		for j := range t.GPUs {
			if i == j {
				t.GPUs[i].Links = append(t.GPUs[i].Links, string(LevelSelf))
				t.GPUs[i].PCIe = append(t.GPUs[i].PCIe, string(LevelSelf))
				continue
			}
			level, ret := devs[i].GetTopologyCommonAncestor(devs[j])
			if ret != nvml.SUCCESS {
				return nil, fmt.Errorf("NVML common ancestor of GPUs %d and %d: %v", t.GPUs[i].Index, t.GPUs[j].Index, nvmlError(ret))
			}
			lv, ok := topologyLevel[level]
			if !ok {
				return nil, fmt.Errorf("NVML common ancestor of GPUs %d and %d: unknown level %d", t.GPUs[i].Index, t.GPUs[j].Index, level)
			}
			nv[i][j] = min(direct[i][j], direct[j][i])
			if switchLinks[i] > 0 && switchLinks[j] > 0 {
				nv[i][j] += min(switchLinks[i], switchLinks[j])
			}
			link := string(lv)
			if nv[i][j] > 0 {
				link = fmt.Sprintf("NV%d", nv[i][j])
			}
			t.GPUs[i].Links = append(t.GPUs[i].Links, link)
			t.GPUs[i].PCIe = append(t.GPUs[i].PCIe, string(lv))
		}
	}
	switched := false
	for _, s := range switchLinks {
		switched = switched || s > 0
	}
	return t.withIslands(switched)
}

// normBusID is the PCI bus ID as Linux writes it under /sys/bus/pci/devices
// (domain of 4 hex digits, lower case): NVML gives 8 domain digits.
func normBusID(p nvml.PciInfo) string {
	var b []byte
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	id := strings.ToLower(string(b))
	if len(id) == len("00000000:00:00.0") {
		id = id[4:]
	}
	return id
}

func nvmlError(ret nvml.Return) string {
	return fmt.Sprintf("%d (%s)", int32(ret), ret.String())
}
