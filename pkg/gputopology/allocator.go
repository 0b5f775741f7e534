package gputopology

import (
	"fmt"
	"math/bits"
	"sync"

	"github.com/NVIDIA/go-gpuallocator/gpuallocator"
	"github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Set is a set of GPUs by position in Topology.GPUs (bit i: GPUs[i]).
type Set uint64

// Count is the number of GPUs in the set.
func (s Set) Count() int { return bits.OnesCount64(uint64(s)) }

// Has reports whether position i is in the set.
func (s Set) Has(i int) bool { return s&(1<<i) != 0 }

// Positions lists the set's positions in ascending order.
func (s Set) Positions() []int {
	out := make([]int, 0, s.Count())
	for v := uint64(s); v != 0; v &= v - 1 {
		out = append(out, bits.TrailingZeros64(v))
	}
	return out
}

// All is the set of every GPU of a node with n GPUs.
func All(n int) Set { return Set(^uint64(0) >> (MaxGPUs - n)) }

// Model is a node topology ready for the scheduler: its islands and fit
// domains, and the devices NVIDIA's allocator works on, built once per
// distinct annotation and shared by every node that publishes the same one.
type Model struct {
	Topology *Topology
	// Domain is each GPU's fit domain, the GPUs that work best together:
	// its NVLink island on NVLink nodes, its NUMA node on NVSwitch nodes
	// (every pair at full NVLink speed: CPU and NIC locality is what is
	// left) and on PCIe nodes.
	Domain      []int
	DomainSizes []int
	// DomainSets are the GPUs of each domain.
	DomainSets []Set

	devices []*gpuallocator.Device // by position
	byIndex map[int]int            // GPU index -> position
	memo    sync.Map               // memoKey -> prediction
}

type memoKey struct {
	free Set
	size int
}

type prediction struct {
	set     Set
	ownPick bool
}

// models caches a Model per annotation value: parsing and building devices
// once per distinct topology, not per node or session.
var models sync.Map // string -> modelOrErr

type modelOrErr struct {
	m   *Model
	err error
}

// ModelFor returns the model of an annotation value, built once per value.
func ModelFor(value string) (*Model, error) {
	if v, ok := models.Load(value); ok {
		r := v.(modelOrErr)
		return r.m, r.err
	}
	var r modelOrErr
	t, err := Parse(value)
	if err == nil {
		r.m, r.err = NewModel(t)
	} else {
		r.err = err
	}
	models.Store(value, r)
	return r.m, r.err
}

// NewModel builds the model of a validated topology. Its devices are made by
// go-gpuallocator's own NewDevices, which NVIDIA's device plugin calls too
// (k8s-device-plugin internal/rm/nvml_manager.go, alignedAlloc), on an NVML
// that answers from the published links; so the link types the allocator
// scores are the ones its own code derives (internal/links GetP2PLink,
// GetNVLink), NVSwitch semantics included.
func NewModel(t *Topology) (*Model, error) {
	lib := newLinkLib(t)
	devs, err := gpuallocator.NewDevices(gpuallocator.WithNvmlLib(lib),
		gpuallocator.WithDeviceLib(device.New(lib, device.WithVerifySymbols(false))))
	if err != nil {
		return nil, fmt.Errorf("building GPU devices from annotation %s: %w", Annotation, err)
	}
	if len(devs) != len(t.GPUs) {
		return nil, fmt.Errorf("building GPU devices from annotation %s: %d devices for %d GPUs", Annotation, len(devs), len(t.GPUs))
	}
	m := &Model{Topology: t, devices: devs, byIndex: map[int]int{}}
	domainOf := map[int]int{}
	for i, g := range t.GPUs {
		m.byIndex[g.Index] = i
		key := g.Island
		if t.Fabric != FabricNVLink {
			key = g.NUMA
		}
		d, ok := domainOf[key]
		if !ok {
			d = len(domainOf)
			domainOf[key] = d
			m.DomainSizes = append(m.DomainSizes, 0)
			m.DomainSets = append(m.DomainSets, 0)
		}
		m.Domain = append(m.Domain, d)
		m.DomainSizes[d]++
		m.DomainSets[d] |= 1 << i
	}
	return m, nil
}

// N is the number of GPUs.
func (m *Model) N() int { return len(m.Topology.GPUs) }

// Position returns the position of the GPU with the given index.
func (m *Model) Position(index int) (int, bool) {
	p, ok := m.byIndex[index]
	return p, ok
}

// Indices lists the GPU indices of a set.
func (m *Model) Indices(s Set) []int {
	pos := s.Positions()
	for i, p := range pos {
		pos[i] = m.Topology.GPUs[p].Index
	}
	return pos
}

// Predict returns the GPUs NVIDIA's device plugin gives a pod that asks for
// size GPUs when free are the free ones: go-gpuallocator's
// NewBestEffortPolicy().Allocate(available, nil, size), what the plugin's
// GetPreferredAllocation answers the kubelet. The kubelet hands the plugin
// the free devices in Go map order; Allocate keeps the first of equally
// scored sets, so among ties this predicts the one of available in index
// order. ownPick is false where the allocator gives no usable answer (too
// few GPUs, or its padding leaking into the set it returns, which the
// plugin cannot turn into device IDs): the kubelet then picks on its own,
// and the prediction is the lowest free GPUs. Memoised per free set and
// size: O(1) after the first call.
func (m *Model) Predict(free Set, size int) (pick Set, ownPick bool) {
	key := memoKey{free, size}
	if v, ok := m.memo.Load(key); ok {
		p := v.(prediction)
		return p.set, p.ownPick
	}
	avail := make([]*gpuallocator.Device, 0, free.Count())
	for _, p := range free.Positions() {
		avail = append(avail, m.devices[p])
	}
	var p prediction
	got := gpuallocator.NewBestEffortPolicy().Allocate(avail, nil, size)
	p.ownPick = len(got) == size && size > 0
	for _, d := range got {
		if d == nil {
			p.ownPick = false
			break
		}
		p.set |= 1 << d.Index
	}
	if !p.ownPick {
		p.set = 0
		for _, pos := range free.Positions() {
			if p.set.Count() == size {
				break
			}
			p.set |= 1 << pos
		}
	}
	m.memo.Store(key, p)
	return p.set, p.ownPick
}

// linkLib is an NVML that answers, from a published topology, exactly the
// calls go-gpuallocator's NewDevices makes (gpuallocator/device.go build,
// go-nvlib's VisitDevices, internal/links GetP2PLink and GetNVLink). It
// embeds the NVML interfaces so it satisfies them; any other call would be
// a nil dereference, which the exhaustive agreement test would catch.
type linkLib struct {
	nvml.Interface
	t       *Topology
	devices []*linkDevice
	byUUID  map[string]int
}

type linkDevice struct {
	nvml.Device
	lib *linkLib
	pos int
	// remote is the PCI bus ID at the other end of each NVLink.
	remote []string
}

// nvSwitchBusID stands for the NVSwitch at the far end of every NVLink of a
// switched GPU: NVML reports the switch, not a GPU, as the peer, so the
// allocator's GetNVLink finds no GPU-to-GPU NVLink there.
const nvSwitchBusID = "0000fffd:00:00.0"

func newLinkLib(t *Topology) *linkLib {
	l := &linkLib{t: t, byUUID: map[string]int{}}
	n := len(t.GPUs)
	nv := t.linkMatrix()
	for i := range t.GPUs {
		d := &linkDevice{lib: l, pos: i}
		for j := 0; j < n; j++ {
			for k := 0; k < nv[i][j] && t.Fabric != FabricNVSwitch; k++ {
				d.remote = append(d.remote, busID(j))
			}
		}
		if t.Fabric == FabricNVSwitch {
			links := 0
			for j := 0; j < n; j++ {
				links = max(links, nv[i][j])
			}
			for k := 0; k < links; k++ {
				d.remote = append(d.remote, nvSwitchBusID)
			}
		}
		l.devices = append(l.devices, d)
		l.byUUID[d.uuid()] = i
	}
	return l
}

// busID is a PCI bus ID for the GPU at a position, in a PCI domain no real
// machine uses (go-gpuallocator matches NVLink peers by bus ID).
func busID(pos int) string { return fmt.Sprintf("0000fffe:%02x:00.0", pos) }

func (l *linkLib) Init() nvml.Return                  { return nvml.SUCCESS }
func (l *linkLib) Shutdown() nvml.Return              { return nvml.SUCCESS }
func (l *linkLib) DeviceGetCount() (int, nvml.Return) { return len(l.devices), nvml.SUCCESS }
func (l *linkLib) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	if i < 0 || i >= len(l.devices) {
		return nil, nvml.ERROR_INVALID_ARGUMENT
	}
	return l.devices[i], nvml.SUCCESS
}

func (d *linkDevice) uuid() string {
	if u := d.lib.t.GPUs[d.pos].UUID; u != "" {
		return u
	}
	return fmt.Sprintf("gpu-index-%d", d.lib.t.GPUs[d.pos].Index)
}

func (d *linkDevice) GetName() (string, nvml.Return) { return "GPU", nvml.SUCCESS }
func (d *linkDevice) GetUUID() (string, nvml.Return) { return d.uuid(), nvml.SUCCESS }
func (d *linkDevice) GetPciInfo() (nvml.PciInfo, nvml.Return) {
	return pciInfo(busID(d.pos)), nvml.SUCCESS
}

// levelTopology maps nvidia-smi's PCIe levels to NVML's topology levels
// (nvmlGpuTopologyLevel_t: SINGLE is PIX, MULTIPLE PXB, HOSTBRIDGE PHB,
// NODE NODE, SYSTEM SYS).
var levelTopology = map[Level]nvml.GpuTopologyLevel{
	LevelPIX: nvml.TOPOLOGY_SINGLE, LevelPXB: nvml.TOPOLOGY_MULTIPLE, LevelPHB: nvml.TOPOLOGY_HOSTBRIDGE,
	LevelNODE: nvml.TOPOLOGY_NODE, LevelSYS: nvml.TOPOLOGY_SYSTEM,
}

func (d *linkDevice) GetTopologyCommonAncestor(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
	u, ret := other.GetUUID()
	if ret != nvml.SUCCESS {
		return 0, ret
	}
	j, ok := d.lib.byUUID[u]
	if !ok || j == d.pos {
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	return levelTopology[d.lib.t.pcieLevel(d.pos, j)], nvml.SUCCESS
}

func (d *linkDevice) GetNvLinkState(link int) (nvml.EnableState, nvml.Return) {
	if link < 0 || link >= len(d.remote) {
		return nvml.FEATURE_DISABLED, nvml.ERROR_INVALID_ARGUMENT
	}
	return nvml.FEATURE_ENABLED, nvml.SUCCESS
}

func (d *linkDevice) GetNvLinkRemotePciInfo(link int) (nvml.PciInfo, nvml.Return) {
	if link < 0 || link >= len(d.remote) {
		return nvml.PciInfo{}, nvml.ERROR_INVALID_ARGUMENT
	}
	return pciInfo(d.remote[link]), nvml.SUCCESS
}

// pciInfo builds an NVML PCI info with the given bus ID.
func pciInfo(bus string) nvml.PciInfo {
	var p nvml.PciInfo
	for i := 0; i < len(bus) && i < len(p.BusId)-1; i++ {
		p.BusId[i] = int8(bus[i])
	}
	for i := 0; i < len(bus) && i < len(p.BusIdLegacy)-1; i++ {
		p.BusIdLegacy[i] = int8(bus[i])
	}
	return p
}
