package paddle

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// A whole-node gang that has not starved waits while starting it would
// leave less than paddle.smallJobHeadroom of the cluster's GPUs free; a
// smaller gang, a starving one, a job the guard does not cover, and any
// gang with the headroom or the starvation threshold off start at once.
func TestSmallJobHeadroom(t *testing.T) {
	// 4 nodes, 32 GPUs, 20 free: n0 full, n1 half used, n2 and n3 free.
	// An 8-GPU gang leaves 12: 0.25 keeps 8, 0.5 keeps 16.
	enough := map[string]interface{}{ArgSmallJobHeadroom: 0.25}
	tooMuch := map[string]interface{}{ArgSmallJobHeadroom: 0.5}
	cases := []struct {
		name     string
		args     map[string]interface{}
		gangGPUs int           // 1 pod
		age      time.Duration // of the gang
		plain    bool          // without the job plugin's labels, task "worker"
		held     bool
	}{
		{name: "enough left for small jobs", args: enough, gangGPUs: 8},
		{name: "too little left: held", args: tooMuch, gangGPUs: 8, age: 3 * time.Hour, held: true},
		{name: "a starving gang starts", args: tooMuch, gangGPUs: 8, age: starvingAge},
		{name: "smaller than a whole node: not held", args: tooMuch, gangGPUs: 7},
		{name: "a job the guard does not cover is not held", args: tooMuch, gangGPUs: 8, plain: true},
		{name: "off", args: map[string]interface{}{ArgSmallJobHeadroom: 0}, gangGPUs: 8},
		{name: "deploy/paddle's 0.2 keeps 7: the gang leaves 12", gangGPUs: 8},
		{name: "nothing would bound the wait without a threshold", args: map[string]interface{}{ArgSmallJobHeadroom: 0.5, ArgStarvationAfter: 0}, gangGPUs: 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resetBook(t)
			c := cluster{nodes: []*v1.Node{gpuNode("n0", "rack0"), gpuNode("n1", "rack0"), gpuNode("n2", "rack1"), gpuNode("n3", "rack1")}}
			c.pods = append(c.pods, filler("running-0", "n0", "1", 8), filler("running-1", "n1", "1", 4))
			role, task := paddleapi.RoleTrainer, "trainer"
			if tc.plain {
				role, task = "", "worker"
			}
			c.pods = append(c.pods, paddlePod("gang", task, 0, role, paddleapi.ModeCollective, "", "1", tc.gangGPUs))
			c.groups = []*schedulingv1.PodGroup{group("gang", 1, time.Now().Add(-tc.age)), group("fillers", 0, time.Now())}
			tiers, cfgs := paddleTiers(t)
			r := allocateOnce(t, WithArgs(tiers, tc.args), cfgs, c, nil)
			on, placed := r.placed["gang-"+task+"-0"]
			if placed == tc.held {
				t.Fatalf("gang placed = %t (on %q), want %t", placed, on, !tc.held)
			}
			if !tc.held {
				return
			}
			msg := jobByName(t, r, "gang").JobFitErrors
			for _, want := range []string{"gang ns/gang needs 8 GPUs", "leave 12 of the cluster's 32 GPUs free, fewer than the 16", ArgSmallJobHeadroom, "once it has waited 16h0m0s (waited 3h0m0s)"} {
				if !strings.Contains(msg, want) {
					t.Errorf("fit errors %q lack %q", msg, want)
				}
			}
		})
	}
}

func TestHeadroomPolicy(t *testing.T) {
	c := countGPUs(nil)
	if (headroomPolicy{share: 0.5, after: time.Hour}).holds(c, 8) {
		t.Error("a cluster without GPUs holds nothing")
	}
	c = clusterGPUs{total: 30, free: 11, wholeNode: 8}
	h := headroomPolicy{share: 0.1, after: time.Hour}
	if got := h.keep(c); got != 3 {
		t.Errorf("keep = %d, want 3 (10%% of 30, rounded up)", got)
	}
	if !h.holds(c, 9) || h.holds(c, 8) || h.holds(c, 7) {
		t.Errorf("holds(9, 8, 7) = %t, %t, %t; want true, false, false", h.holds(c, 9), h.holds(c, 8), h.holds(c, 7))
	}
	// On 30 GPUs, 27 would leave the 3 kept on an idle cluster, 28 only 2.
	c.free = 10
	if !h.holds(c, 27) || h.holds(c, 28) {
		t.Errorf("holds(27, 28) on 10 free = %t, %t; want true (it fits beside small jobs on an idle cluster), false (it never does)", h.holds(c, 27), h.holds(c, 28))
	}
}
