package paddle

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// nodeInfo builds a scheduler NodeInfo with running GPU pods.
func nodeInfo(t *testing.T, n *v1.Node, gpuPods ...int) *api.NodeInfo {
	t.Helper()
	ni := api.NewNodeInfo(n)
	for i, g := range gpuPods {
		p := filler("p"+string(rune('a'+i)), n.Name, "1", g)
		if err := ni.AddTask(api.NewTaskInfo(p)); err != nil {
			t.Fatal(err)
		}
	}
	return ni
}

func TestFreePerDomainReplay(t *testing.T) {
	cases := []struct {
		pods []int
		want []int
	}{
		{nil, []int{4, 4}},
		{[]int{2}, []int{2, 4}},
		{[]int{2, 2}, []int{0, 4}}, // the second pair goes to the tighter island
		{[]int{4, 2}, []int{0, 2}}, // largest first, each into the tightest island
		{[]int{1, 3}, []int{0, 4}}, // 3 then 1 into the same island
		{[]int{6}, []int{0, 2}},    // spans: fills the fullest island first
		{[]int{1, 1, 1, 1, 1}, []int{0, 3}},
	}
	for _, tc := range cases {
		ni := nodeInfo(t, gpuNode("n", "r"), tc.pods...)
		got := layoutOf(ni.Node).freePerDomain(ni)
		if len(got) != 2 || got[0] != tc.want[0] || got[1] != tc.want[1] {
			t.Errorf("pods %v: free %v, want %v", tc.pods, got, tc.want)
		}
	}
}

func TestGPUFitScores(t *testing.T) {
	nvlink := gpuNode("n", "r")
	nvswitch := node("s", "r", "", "64", "512Gi", 8, &paddleapi.GPUTopology{Fabric: paddleapi.FabricNVSwitch, GPUs: func() []paddleapi.GPUInfo {
		var g []paddleapi.GPUInfo
		for i := 0; i < 8; i++ {
			g = append(g, paddleapi.GPUInfo{Index: i, Island: 0, NUMA: i / 4})
		}
		return g
	}()})
	plain := node("p", "r", "", "64", "512Gi", 8, nil)
	type tc struct {
		name string
		node *v1.Node
		pods []int
		g    int
	}
	score := func(c tc) float64 {
		s, _ := newGPUState().gpuFit(nodeInfo(t, c.node, c.pods...), c.g, true)
		return s
	}
	better := []struct{ hi, lo tc }{
		// exact fit in a used island beats breaking a whole island
		{tc{"exact", nvlink, []int{2}, 2}, tc{"break", nvlink, []int{4}, 2}},
		// one island beats spanning two
		{tc{"one island", nvlink, []int{4}, 4}, tc{"span", nvlink, []int{2, 2, 1}, 2}},
		// a partly used node beats a fully free node for a small pod
		{tc{"partly used", nvlink, []int{4}, 4}, tc{"whole node", nvlink, nil, 4}},
		// on NVSwitch, GPUs on one NUMA node beat GPUs split over two
		{tc{"numa", nvswitch, []int{4}, 2}, tc{"two numa", nvswitch, []int{3, 3}, 2}},
		// without topology: the tighter count fit wins
		{tc{"tight", plain, []int{6}, 2}, tc{"loose", plain, nil, 2}},
	}
	for _, b := range better {
		if hi, lo := score(b.hi), score(b.lo); hi <= lo {
			t.Errorf("%s (%.0f) should score above %s (%.0f)", b.hi.name, hi, b.lo.name, lo)
		}
	}
	if s := score(tc{"full", nvlink, []int{8}, 1}); s != 0 {
		t.Errorf("a node with no free GPU scores %.0f", s)
	}
	if s := score(tc{"plain", plain, []int{4}, 4}); s <= 0 {
		t.Errorf("a node without the annotation scores %.0f for a pod that fits", s)
	}
	if s := score(tc{"whole", nvlink, nil, 8}); s != MaxScore {
		t.Errorf("8 GPUs on an empty 2x4 node score %.0f, want %.0f", s, MaxScore)
	}
}

// A malformed annotation counts as no topology: scored by count, cached.
func TestBadAnnotationIsIgnored(t *testing.T) {
	n := gpuNode("bad", "r")
	n.Annotations[paddleapi.GPUTopologyAnnotation] = `{"fabric":"Carrier-Pigeon","gpus":[]}`
	if layoutOf(n) != nil {
		t.Fatal("an invalid annotation produced a layout")
	}
	if s, _ := newGPUState().gpuFit(nodeInfo(t, n), 2, true); s <= 0 {
		t.Errorf("node with a bad annotation scores %.0f", s)
	}
}

func newGPUState() *sessionState {
	return &sessionState{layouts: map[string]*gpuLayout{}, hasLayout: map[string]bool{}, freeByNode: map[string][]int{}}
}
