package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

func TestDefaultTopologyNodes(t *testing.T) {
	nodes := DefaultTopology().Nodes()
	if len(nodes) != 8 {
		t.Fatalf("%d nodes, want 8", len(nodes))
	}
	racks := map[string]int{}
	ips := map[string]bool{}
	for _, n := range nodes {
		racks[n.Labels[LabelRack]]++
		if q := n.Status.Allocatable["nvidia.com/gpu"]; q.Value() != 8 {
			t.Errorf("%s: %d GPUs", n.Name, q.Value())
		}
		topo, err := gputopology.Parse(n.Annotations[gputopology.Annotation])
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		if islands := topo.Islands(); len(islands) != 2 || len(islands[0]) != 4 {
			t.Errorf("%s: islands %v", n.Name, islands)
		}
		ips[n.Status.Addresses[0].Address] = true
	}
	if len(racks) != 2 || racks["gpu-rack0"] != 4 {
		t.Errorf("racks %v", racks)
	}
	if len(ips) != 8 {
		t.Errorf("node addresses are not distinct: %v", ips)
	}
}

func TestLoadTopologyErrors(t *testing.T) {
	cases := map[string]string{
		"groups: []": "groups is empty",
		"groups: [{name: a, racks: 0, nodesPerRack: 1, cpu: '1', memory: 1Gi}]":                            "racks and nodesPerRack must be positive",
		"groups: [{name: a, racks: 1, nodesPerRack: 1, cpu: lots, memory: 1Gi}]":                           "cpu",
		"groups: [{name: a, racks: 1, nodesPerRack: 1, cpu: '1', memory: 1Gi, gpus: 8, gpuFabric: Magic}]": "fabric",
		"groups: [{name: a, racks: 1, nodesPerRack: 1, cpu: '1', memory: 1Gi, typo: 1}]":                   "unknown field",
	}
	for body, want := range cases {
		p := filepath.Join(t.TempDir(), "topo.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadTopology(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", body, err, want)
		}
	}
	p := filepath.Join(t.TempDir(), "ok.yaml")
	_ = os.WriteFile(p, []byte("groups: [{name: cpu, racks: 3, nodesPerRack: 2, cpu: '32', memory: 128Gi}]"), 0o644)
	topo, err := LoadTopology(p)
	if err != nil || topo.NodeCount() != 6 {
		t.Errorf("valid topology: %v, %d nodes", err, topo.NodeCount())
	}
}
