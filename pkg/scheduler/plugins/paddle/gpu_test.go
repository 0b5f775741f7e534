package paddle

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/util"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

// nodeInfo builds a scheduler NodeInfo with running GPU pods (pa, pb, ...,
// created in that order).
func nodeInfo(t *testing.T, n *v1.Node, gpuPods ...int) *api.NodeInfo {
	t.Helper()
	ni := api.NewNodeInfo(n)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, g := range gpuPods {
		p := filler("p"+string(rune('a'+i)), n.Name, "1", g)
		p.CreationTimestamp = metav1.NewTime(base.Add(time.Duration(i) * time.Minute))
		if err := ni.AddTask(api.NewTaskInfo(p)); err != nil {
			t.Fatal(err)
		}
	}
	return ni
}

// withAssignments adds the agent's report to a node.
func withAssignments(n *v1.Node, observed time.Time, pods map[string][]int) *v1.Node {
	n = n.DeepCopy()
	a := &gputopology.Assignments{Observed: observed, Pods: pods}
	n.Annotations[gputopology.AssignmentsAnnotation] = a.Encode()
	return n
}

var testNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newTestGPUState() *gpuState { return newGPUState(DefaultArgs().GPUAssignmentsMaxAge, testNow) }

// islandsOf counts the islands a set of GPUs touches on a 2x4 node.
func islandsOf(idx []int) int {
	seen := map[int]bool{}
	for _, i := range idx {
		seen[i/4] = true
	}
	return len(seen)
}

// Running pods are replayed through NVIDIA's allocator: every pod that fits
// an island gets one, and islands stay whole where they can.
func TestGPUOccupancyReplay(t *testing.T) {
	cases := []struct {
		pods      []int
		freeWhole int // islands left entirely free
	}{
		{nil, 2},
		{[]int{2}, 1},
		{[]int{2, 2}, 1}, // the second pair next to the first
		{[]int{4, 2}, 0},
		{[]int{1, 3}, 1}, // 1 then 3 into the same island
		{[]int{1, 1, 1, 1}, 1},
		{[]int{4, 4}, 0},
	}
	for _, tc := range cases {
		st := newTestGPUState()
		ni := nodeInfo(t, gpuNode("n", "r"), tc.pods...)
		ng := st.node(ni)
		if ng.model == nil || ng.occ.Source != gputopology.SourcePredicted {
			t.Fatalf("pods %v: no model or source %s", tc.pods, ng.occ.Source)
		}
		for key, set := range ng.occ.Pods {
			if idx := ng.model.Indices(set); islandsOf(idx) != 1 {
				t.Errorf("pods %v: %s got GPUs %v across islands", tc.pods, key, idx)
			}
		}
		whole := 0
		for _, d := range ng.model.DomainSets {
			if ng.occ.Free&d == d {
				whole++
			}
		}
		if whole != tc.freeWhole {
			t.Errorf("pods %v: free %v leaves %d whole islands, want %d", tc.pods, ng.model.Indices(ng.occ.Free), whole, tc.freeWhole)
		}
	}
}

func TestGPUFitScores(t *testing.T) {
	nvlink := gpuNode("n", "r")
	nvswitch := node("s", "r", "", "64", "512Gi", 8, gputopology.Uniform(gputopology.FabricNVSwitch, 8, 8))
	plain := node("p", "r", "", "64", "512Gi", 8, nil)
	// The kubelet gave pod pa GPUs 2-5 (its map order; the agent saw it).
	odd := map[string][]int{"ns/pa": {2, 3, 4, 5}}
	reported := withAssignments(nvlink, testNow.Add(-time.Minute), odd)
	stale := withAssignments(nvlink, testNow.Add(-time.Hour), odd)
	type tc struct {
		name string
		node *v1.Node
		pods []int
		g    int
	}
	score := func(c tc) float64 {
		st := newTestGPUState()
		s, _ := st.fitScore(nodeInfo(t, c.node, c.pods...), c.g, true)
		return s
	}
	better := []struct{ hi, lo tc }{
		{tc{"exact", nvlink, []int{2}, 2}, tc{"break", nvlink, []int{4}, 2}},
		{tc{"one island", nvlink, []int{4}, 4}, tc{"span", nvlink, []int{2, 2, 1}, 2}},
		{tc{"partly used", nvlink, []int{4}, 4}, tc{"whole node", nvlink, nil, 4}},
		{tc{"numa", nvswitch, []int{4}, 2}, tc{"two numa", nvswitch, []int{3, 3}, 2}},
		{tc{"tight", plain, []int{6}, 2}, tc{"loose", plain, nil, 2}},
		// The agent's report is the truth: GPUs 0-1 and 6-7 are free, so
		// a pair fits an island exactly; a stale report is not trusted
		// and the prediction (pa on 0-3) leaves island 1 whole.
		{tc{"reported", reported, []int{4}, 2}, tc{"stale report", stale, []int{4}, 2}},
	}
	for _, b := range better {
		if hi, lo := score(b.hi), score(b.lo); hi <= lo {
			t.Errorf("%s (%.0f) should score above %s (%.0f)", b.hi.name, hi, b.lo.name, lo)
		}
	}
	exact := []struct {
		tc
		want float64
	}{
		{tc{"full", nvlink, []int{8}, 1}, 0},
		{tc{"whole", nvlink, nil, 8}, MaxScore},
		{tc{"reported exact pair", reported, []int{4}, 2}, MaxScore},
		{tc{"stale: predicted pair into a whole island", stale, []int{4}, 2}, MaxScore - gpuLeftoverCost/2},
	}
	for _, e := range exact {
		if s := score(e.tc); s != e.want {
			t.Errorf("%s scores %.1f, want %.1f", e.name, s, e.want)
		}
	}
	if s := score(tc{"plain", plain, []int{4}, 4}); s <= 0 {
		t.Errorf("a node without the annotation scores %.0f for a pod that fits", s)
	}
}

// A malformed annotation, or one whose GPU count is not the node's, counts
// as no topology: scored by count, never rejected.
func TestBadAnnotationIsIgnored(t *testing.T) {
	bad := gpuNode("bad", "r")
	bad.Annotations[gputopology.Annotation] = `{"fabric":"Carrier-Pigeon","gpus":[]}`
	short := gpuNode("short", "r")
	short.Annotations[gputopology.Annotation] = gputopology.Uniform(gputopology.FabricNVLink, 4, 2).Encode()
	for _, n := range []*v1.Node{bad, short} {
		st := newTestGPUState()
		ni := nodeInfo(t, n)
		if st.node(ni).model != nil {
			t.Errorf("%s: an unusable annotation produced a model", n.Name)
		}
		if s, _ := st.fitScore(ni, 2, true); s <= 0 {
			t.Errorf("%s: scores %.0f", n.Name, s)
		}
	}
}

// A GPU pod of another workload with a preferred node affinity goes where
// its user wants: the GPU-topology score of non-Paddle pods is capped below
// Volcano nodeorder's node-affinity score.
func TestNonPaddleGPUScoreYieldsToNodeAffinity(t *testing.T) {
	tiers, cfgs := paddleTiers(t)
	preferred := gpuNode("preferred", "r0") // all free: a 2-GPU pod leaves 2 of an island
	tight := gpuNode("tight", "r0")         // a pair fits exactly next to a running pair
	pod := util.BuildPod("ns", "user-pod", "", v1.PodPending, filler("x", "", "1", 2).Spec.Containers[0].Resources.Requests, "user", map[string]string{}, nil)
	pod.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{
		Weight: 100, Preference: v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"preferred"}}}}}}}}
	c := cluster{
		nodes:  []*v1.Node{preferred, tight},
		pods:   []*v1.Pod{filler("running", "tight", "1", 2), pod},
		groups: []*schedulingv1.PodGroup{group("user", 1, time.Now()), group("fillers", 0, time.Now())},
	}
	r := allocateOnce(t, tiers, cfgs, c, nil)
	if got := r.placed["user-pod"]; got != "preferred" {
		t.Errorf("the user's pod went to %q, want its preferred node", got)
	}
}
