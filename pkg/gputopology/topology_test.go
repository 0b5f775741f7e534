package gputopology

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology/gputopologytest"
)

func readTopo(t *testing.T, name string) *Topology {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := ParseTopoMatrix(string(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return topo
}

func column(topo *Topology, f func(GPU) interface{}) []interface{} {
	var out []interface{}
	for _, g := range topo.GPUs {
		out = append(out, f(g))
	}
	return out
}

func numas(topo *Topology) []interface{} {
	return column(topo, func(g GPU) interface{} { return g.NUMA })
}
func nics(topo *Topology) []interface{} {
	return column(topo, func(g GPU) interface{} { return g.NIC })
}

func linkRows(topo *Topology) [][]string {
	var out [][]string
	for _, g := range topo.GPUs {
		out = append(out, g.Links)
	}
	return out
}

func asInterfaces[T any](v []T) []interface{} {
	out := make([]interface{}, len(v))
	for i := range v {
		out[i] = v[i]
	}
	return out
}

// checkFabric checks the fabric, islands and links of topo against m.
func checkFabric(t *testing.T, topo *Topology, m gputopologytest.Machine) {
	t.Helper()
	if string(topo.Fabric) != m.Fabric {
		t.Errorf("fabric %s, want %s", topo.Fabric, m.Fabric)
	}
	if got := topo.Islands(); !reflect.DeepEqual(got, m.Islands) {
		t.Errorf("islands %v, want %v", got, m.Islands)
	}
	if got := linkRows(topo); !reflect.DeepEqual(got, m.Links) {
		t.Errorf("links\n%v, want\n%v", got, m.Links)
	}
}

// The five recorded machines as nvidia-smi topo -m text: islands, fabric,
// links, NUMA and NICs as a correct reading gives them.
func TestParseTopoMatrixMachines(t *testing.T) {
	for _, m := range gputopologytest.Machines() {
		t.Run(m.Name, func(t *testing.T) {
			topo := readTopo(t, m.TopoFile)
			checkFabric(t, topo, m)
			if got, want := numas(topo), asInterfaces(m.NUMA); !reflect.DeepEqual(got, want) {
				t.Errorf("numa %v, want %v", got, want)
			}
			if got, want := nics(topo), asInterfaces(m.NIC); !reflect.DeepEqual(got, want) {
				t.Errorf("nics %v, want %v", got, want)
			}
		})
	}
}

// The recorded output of a real H100 VM (one GPU, escape codes in the
// header, N/A columns).
func TestParseTopoMatrixRecordedH100VM(t *testing.T) {
	topo := readTopo(t, "h100-1gpu-vm.txt")
	want := &Topology{Fabric: FabricPCIe, GPUs: []GPU{{Index: 0, Island: 0, NUMA: 0, Links: []string{"X"}}}}
	if !reflect.DeepEqual(topo, want) {
		t.Errorf("got %+v, want %+v", topo, want)
	}
}

func TestParseTopoMatrixErrors(t *testing.T) {
	cases := map[string]string{
		"no matrix":    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
		"unknown link": "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tFOO\t0-1\nGPU1\tFOO\t X \t0-1\n",
		"asymmetric":   "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV2\t0-1\nGPU1\tSYS\t X \t0-1\n",
	}
	for name, text := range cases {
		if _, err := ParseTopoMatrix(text); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

// machineTopology is what the agent publishes on a recorded machine:
// FromNVML on go-nvml's mock with the machine's link tables.
func machineTopology(t *testing.T, m gputopologytest.Machine) *Topology {
	t.Helper()
	topo, err := FromNVML(m.NVML(), gputopologytest.Locality{M: m})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// NVML (go-nvml's mock, with the recorded link tables) and the text of
// nvidia-smi give the same topology; NVML adds the PCIe path under NVLinks.
func TestFromNVMLMachines(t *testing.T) {
	for _, m := range gputopologytest.Machines() {
		t.Run(m.Name, func(t *testing.T) {
			topo := machineTopology(t, m)
			checkFabric(t, topo, m)
			for i, g := range topo.GPUs {
				if !reflect.DeepEqual(g.PCIe, m.PCIe[i]) {
					t.Errorf("gpu %d pcie %v, want %v", i, g.PCIe, m.PCIe[i])
				}
				if g.UUID != m.UUID(i) || g.NUMA != m.NUMA[i] || g.NIC != m.NIC[i] {
					t.Errorf("gpu %d: uuid %s numa %d nic %q, want %s %d %q", i, g.UUID, g.NUMA, g.NIC, m.UUID(i), m.NUMA[i], m.NIC[i])
				}
			}
			text := readTopo(t, m.TopoFile)
			if !reflect.DeepEqual(text.Islands(), topo.Islands()) || text.Fabric != topo.Fabric {
				t.Errorf("text and NVML disagree: %v %s vs %v %s", text.Islands(), text.Fabric, topo.Islands(), topo.Fabric)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	good := func() *Topology { return Uniform(FabricNVLink, 4, 2) }
	cases := []struct {
		name  string
		edit  func(*Topology)
		error string
	}{
		{"ok", func(*Topology) {}, ""},
		{"fabric", func(t *Topology) { t.Fabric = "Carrier-Pigeon" }, "fabric"},
		{"duplicate index", func(t *Topology) { t.GPUs[1].Index = 0 }, "appears twice"},
		{"island disagrees with links", func(t *Topology) { t.GPUs[1].Island = 1 }, "links put it in island 0"},
		{"fabric disagrees with links", func(t *Topology) { t.Fabric = FabricPCIe }, "links make it NVLink"},
		{"asymmetric", func(t *Topology) { t.GPUs[0].Links[1] = "NV2" }, "reverse"},
		{"short row", func(t *Topology) { t.GPUs[2].Links = t.GPUs[2].Links[:3] }, "3 links"},
		{"some rows only", func(t *Topology) {
			for i := 1; i < 4; i++ {
				t.GPUs[i].Links = nil
			}
		}, "all or none"},
		{"hand-written without links", func(t *Topology) {
			for i := range t.GPUs {
				t.GPUs[i].Links, t.GPUs[i].UUID = nil, ""
			}
		}, ""},
	}
	for _, c := range cases {
		topo := good()
		c.edit(topo)
		err := topo.Validate()
		switch {
		case c.error == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.error != "" && (err == nil || !strings.Contains(err.Error(), c.error)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.error)
		}
	}
}

// Uniform topologies round-trip through the annotation and keep the
// islands they were built with.
func TestUniformRoundTrip(t *testing.T) {
	cases := []struct {
		fabric  Fabric
		gpus    int
		island  int
		islands [][]int
	}{
		{FabricNVLink, 8, 4, [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}},
		{FabricNVLink, 8, 2, [][]int{{0, 1}, {2, 3}, {4, 5}, {6, 7}}},
		{FabricNVSwitch, 8, 8, [][]int{{0, 1, 2, 3, 4, 5, 6, 7}}},
		{FabricPCIe, 4, 1, [][]int{{0}, {1}, {2}, {3}}},
	}
	for _, c := range cases {
		u := Uniform(c.fabric, c.gpus, c.island)
		back, err := Parse(u.Encode())
		if err != nil {
			t.Fatalf("%s %d/%d: %v", c.fabric, c.gpus, c.island, err)
		}
		if got := back.Islands(); !reflect.DeepEqual(got, c.islands) {
			t.Errorf("%s %d/%d: islands %v, want %v", c.fabric, c.gpus, c.island, got, c.islands)
		}
	}
}
