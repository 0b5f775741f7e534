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
		"groups: [{name: a, racks: 1, nodesPerRack: 1, cpu: '1', memory: 1Gi, taints: [{key: k}]}]":        "effect",
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

// A group's taints land on each of its nodes, and only there.
func TestTopologyTaints(t *testing.T) {
	p := filepath.Join(t.TempDir(), "taints.yaml")
	body := `groups:
- {name: gpu, racks: 1, nodesPerRack: 2, cpu: '4', memory: 8Gi}
- name: control-plane
  racks: 1
  nodesPerRack: 1
  cpu: '8'
  memory: 8Gi
  taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]
`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	topo, err := LoadTopology(p)
	if err != nil {
		t.Fatal(err)
	}
	tainted := map[string]bool{}
	for _, n := range topo.Nodes() {
		if len(n.Spec.Taints) > 0 {
			tainted[n.Name] = n.Spec.Taints[0].Key == "node-role.kubernetes.io/control-plane" && n.Spec.Taints[0].Effect == "NoSchedule"
		}
	}
	if len(tainted) != 1 || !tainted["control-plane-r0-n0"] {
		t.Errorf("tainted nodes %v, want only control-plane-r0-n0 with the control-plane taint", tainted)
	}
}
