package paddle

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Two racks; n0 is busy on CPU, n2 and n3 a little. Volcano's stock scoring
// (balanced and least-requested resources) then spreads a PS job over both
// racks. With paddle the trainers sit with their pservers and the pservers
// on separate nodes of one rack.
func psCluster() cluster {
	var gang []*v1.Pod
	for i := 0; i < 2; i++ {
		gang = append(gang, paddlePod("wd", "ps", i, paddleapi.RolePServer, paddleapi.ModePS, "", "8", 0),
			paddlePod("wd", "worker", i, paddleapi.RoleTrainer, paddleapi.ModePS, "", "8", 4))
	}
	return oneGang(twoRacks(), "wd", 4, gang,
		filler("busy-0", "n0", "40", 0), filler("busy-2", "n2", "2", 0), filler("busy-3", "n3", "2", 0))
}

// oneGang is a cluster of nodes running the fillers (PodGroup "fillers")
// and the pods of one gang (PodGroup gang with minMember), all created now.
func oneGang(nodes []*v1.Node, gang string, minMember int32, pods []*v1.Pod, fillers ...*v1.Pod) cluster {
	return cluster{nodes: nodes, pods: append(fillers, pods...),
		groups: []*schedulingv1.PodGroup{group(gang, minMember, time.Now()), group("fillers", 0, time.Now())}}
}

func TestPSTrainersNearPservers(t *testing.T) {
	c := psCluster()
	tiers, cfgs := paddleTiers(t)
	got := allocateOnce(t, tiers, cfgs, c, nil).placed
	if len(got) != 4 {
		t.Fatalf("placed %v, want the 4 pods of the gang", got)
	}
	ps0, ps1 := got["wd-ps-0"], got["wd-ps-1"]
	if ps0 == ps1 {
		t.Errorf("both pservers on %s: their NIC bandwidth does not add up", ps0)
	}
	if rackOf(c, ps0) != rackOf(c, ps1) {
		t.Errorf("pservers in different racks: %s, %s", ps0, ps1)
	}
	for _, w := range []string{"wd-worker-0", "wd-worker-1"} {
		if rackOf(c, got[w]) != rackOf(c, ps0) {
			t.Errorf("%s on %s (%s), pservers in %s", w, got[w], rackOf(c, got[w]), rackOf(c, ps0))
		}
	}
}

// The same cluster under Volcano's stock tiers: the scenario is one where
// placement matters (stock splits the job over racks), so the test above
// can fail.
func TestPSStockSplitsRacks(t *testing.T) {
	c := psCluster()
	tiers, cfgs := stockTiers(t)
	got := allocateOnce(t, tiers, cfgs, c, nil).placed
	racks := map[string]bool{}
	for _, n := range got {
		racks[rackOf(c, n)] = true
	}
	if len(got) != 4 || len(racks) < 2 {
		t.Errorf("stock placed %v in %d racks; the scenario expects it to split the job", got, len(racks))
	}
}

// A 2 x 4-GPU collective job: on one node (its two islands) or two nodes of
// one rack, never across racks. The nodes of rack0 are busier on CPU, which
// is what makes stock spread it.
func collectiveCluster() cluster {
	var gang []*v1.Pod
	for i := 0; i < 2; i++ {
		gang = append(gang, paddlePod("resnet", "trainer", i, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "8", 4))
	}
	return oneGang(twoRacks(), "resnet", 2, gang,
		filler("busy-0", "n0", "30", 0), filler("busy-2", "n2", "30", 0), filler("busy-3", "n3", "20", 0))
}

func TestCollectivePacksIntoOneRack(t *testing.T) {
	c := collectiveCluster()
	tiers, cfgs := paddleTiers(t)
	got := allocateOnce(t, tiers, cfgs, c, nil).placed
	a, b := got["resnet-trainer-0"], got["resnet-trainer-1"]
	if a == "" || b == "" {
		t.Fatalf("placed %v", got)
	}
	if a != b && rackOf(c, a) != rackOf(c, b) {
		t.Errorf("trainers on %s (%s) and %s (%s): across racks", a, rackOf(c, a), b, rackOf(c, b))
	}
	if a != b {
		t.Errorf("trainers on %s and %s: one node's two islands were free", a, b)
	}
}

func TestCollectiveStockAcrossRacks(t *testing.T) {
	c := collectiveCluster()
	tiers, cfgs := stockTiers(t)
	got := allocateOnce(t, tiers, cfgs, c, nil).placed
	a, b := got["resnet-trainer-0"], got["resnet-trainer-1"]
	if a == "" || b == "" || rackOf(c, a) == rackOf(c, b) {
		t.Errorf("stock placed %v; the scenario expects it across racks", got)
	}
}

// A fragmented node pair: n0 runs a 4-GPU and a 2-GPU pod (free: 0 in
// island 0, 2 in island 1), n1 a 3-GPU pod (free: 1 and 4). A 2-GPU pod fits
// n0's island 1 exactly; stock prefers n1, which has more GPUs free, and
// breaks its whole free island.
func fragmentedCluster() cluster {
	return oneGang(oneRack(2), "small", 1,
		[]*v1.Pod{paddlePod("small", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 2)},
		filler("gpu-a", "n0", "1", 4), filler("gpu-b", "n0", "1", 2), filler("gpu-c", "n1", "1", 3))
}

func TestGPUIslandKeptWhole(t *testing.T) {
	tiers, cfgs := paddleTiers(t)
	if got := allocateOnce(t, tiers, cfgs, fragmentedCluster(), nil).placed["small-trainer-0"]; got != "n0" {
		t.Errorf("2-GPU pod on %q; n0's partly used island fits it exactly", got)
	}
	stockT, stockC := stockTiers(t)
	if got := allocateOnce(t, stockT, stockC, fragmentedCluster(), nil).placed["small-trainer-0"]; got != "n1" {
		t.Errorf("stock placed the pod on %q; the scenario expects stock to break n1's free island", got)
	}
}

// Nodes without the topology annotation are scored by GPU count, never
// rejected.
func TestNodesWithoutTopologyStillUsed(t *testing.T) {
	c := cluster{nodes: []*v1.Node{node("plain", "rack0", "", "64", "512Gi", 8, nil)}}
	c.pods = []*v1.Pod{paddlePod("j", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "8", 8)}
	c.groups = []*schedulingv1.PodGroup{group("j", 1, time.Now())}
	tiers, cfgs := paddleTiers(t)
	if got := allocateOnce(t, tiers, cfgs, c, nil).placed["j-trainer-0"]; got != "plain" {
		t.Errorf("pod placed on %q", got)
	}
}

// Without the job plugin's labels, roles come from Volcano task names.
func TestTaskNameFallback(t *testing.T) {
	c := psCluster()
	for _, p := range c.pods {
		delete(p.Labels, paddleapi.RoleLabel)
		delete(p.Labels, paddleapi.IndexLabel)
		delete(p.Labels, paddleapi.ModeLabel)
	}
	tiers, cfgs := paddleTiers(t)
	got := allocateOnce(t, tiers, cfgs, c, nil).placed
	for _, w := range []string{"wd-worker-0", "wd-worker-1"} {
		if rackOf(c, got[w]) != rackOf(c, got["wd-ps-0"]) {
			t.Errorf("%s on %s, pserver 0 on %s", w, got[w], got["wd-ps-0"])
		}
	}
}

// With Volcano HyperNodes and no rack labels, the lowest HyperNode tier is
// the rack: trainers go to the HyperNode of their pservers.
func TestHyperNodesAsRacks(t *testing.T) {
	c := psCluster()
	for _, n := range c.nodes {
		delete(n.Labels, paddleapi.DefaultRackLabel)
		delete(n.Labels, paddleapi.DefaultSpineLabel)
	}
	c.hyperNodesByTier = map[int]sets.Set[string]{1: sets.New("s0", "s1"), 2: sets.New("s2")}
	c.hyperNodes = map[string]sets.Set[string]{
		"s0": sets.New("n0", "n1"), "s1": sets.New("n2", "n3"), "s2": sets.New("n0", "n1", "n2", "n3"),
	}
	switchOf := map[string]string{"n0": "s0", "n1": "s0", "n2": "s1", "n3": "s1"}
	tiers, cfgs := paddleTiers(t)
	got := allocateOnce(t, tiers, cfgs, c, nil).placed
	if len(got) != 4 {
		t.Fatalf("placed %v", got)
	}
	if got["wd-ps-0"] == got["wd-ps-1"] {
		t.Errorf("pservers share node %s: the rack (HyperNode) was not seen", got["wd-ps-0"])
	}
	for name, n := range got {
		if switchOf[n] != switchOf[got["wd-ps-0"]] {
			t.Errorf("%s on %s (HyperNode %s), pserver 0 under %s", name, n, switchOf[n], switchOf[got["wd-ps-0"]])
		}
	}
}
