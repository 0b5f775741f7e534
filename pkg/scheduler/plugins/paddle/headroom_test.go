package paddle

import (
	"fmt"
	"strings"
	"testing"
	"time"

	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/actions/allocate"
	"volcano.sh/volcano/pkg/scheduler/actions/preempt"

	tb "github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
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
			c := cluster{nodes: twoRacks()}
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
			for _, want := range []string{"gang ns/gang needs 8 GPUs", "leave 12 of the cluster's 32 GPUs free, fewer than the 16 ", ArgSmallJobHeadroom, "once it has waited 16h0m0s (" + ArgStarvationAfter + ")"} {
				if !strings.Contains(msg, want) {
					t.Errorf("fit errors %q lack %q", msg, want)
				}
			}
			if strings.Contains(msg, "while") {
				t.Errorf("fit errors %q: want no condition on smaller jobs", msg)
			}
		})
	}
}

// With paddle.smallJobHeadroom.predictedAbove the headroom holds only the
// whole-node gangs whose queue's history predicts a median run time at
// least that long: a gang predicted short starts at once, one predicted
// long, or one the history says nothing of, is held as before and its
// message says why. The cluster is TestSmallJobHeadroom's: an 8-GPU gang
// would leave 12 of 32 GPUs free, the share 0.5 keeps 16.
func TestHeadroomLetsShortGangsGo(t *testing.T) {
	short := historyOf(t, 5, map[[2]int]time.Duration{{1, 8}: 20 * time.Minute})
	long := historyOf(t, 5, map[[2]int]time.Duration{{1, 8}: 10 * time.Hour})
	above := map[string]interface{}{ArgSmallJobHeadroom: 0.5, ArgHeadroomPredictedAbove: "2h"}
	cases := []struct {
		name    string
		args    map[string]interface{}
		history string
		held    bool
		says    string // in the held gang's fit errors
	}{
		{name: "predicted short: starts", args: above, history: short},
		{name: "predicted long: held", args: above, history: long, held: true,
			says: "its queue's history predicts it runs 10h0m0s (median), at least 2h0m0s (" + ArgHeadroomPredictedAbove + ")"},
		{name: "no history: held", args: above, held: true, says: "has no run time to predict it from"},
		{name: "a history that says nothing of 8-GPU pods still predicts from the queue", args: above,
			history: historyOf(t, 5, map[[2]int]time.Duration{{1, 1}: 20 * time.Minute})},
		{name: "off: predicted short is held", args: map[string]interface{}{ArgSmallJobHeadroom: 0.5, ArgHeadroomPredictedAbove: 0}, history: short, held: true},
		{name: "deploy/paddle's 4h lets a gang predicted to run 20m go", args: map[string]interface{}{ArgSmallJobHeadroom: 0.5}, history: short},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster{nodes: twoRacks()}
			c.pods = append(c.pods, filler("running-0", "n0", "1", 8), filler("running-1", "n1", "1", 4),
				paddlePod("gang", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
			c.groups = []*schedulingv1.PodGroup{group("gang", 1, time.Now().Add(-3*time.Hour)), group("fillers", 0, time.Now())}
			if tc.history != "" {
				c.queueAnnotations = map[string]map[string]string{"default": {paddleapi.RunTimeHistoryAnnotation: tc.history}}
			}
			tiers, cfgs := paddleTiers(t)
			r := allocateOnce(t, WithArgs(tiers, tc.args), cfgs, c, nil)
			on, placed := r.placed["gang-trainer-0"]
			if placed == tc.held {
				t.Fatalf("gang placed = %t (on %q), want %t", placed, on, !tc.held)
			}
			if msg := jobByName(t, r, "gang").JobFitErrors; tc.held && !strings.Contains(msg, tc.says) {
				t.Errorf("fit errors %q lack %q", msg, tc.says)
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

// GPUs that elastic jobs hold above their minimum count as free for the
// headroom: growth into the headroom does not turn a held gang into one
// that shrinks the elastic job, fits again and is held again, every
// session. With Volcano's real allocate and preempt actions on 4 nodes
// (32 GPUs): n0 full, n1 two 4-GPU pods of an elastic job (minimum 1), n2
// half used; n3 free, or holding a third, growth pod.
func TestHeadroomCountsElasticGrowth(t *testing.T) {
	cases := []struct {
		name   string
		share  float64
		grown  bool // the elastic job's third pod runs on n3
		placed bool // the gang
		shrunk bool // pods of the elastic job evicted
	}{
		// 12 free + 4 elastic: the gang leaves 8.
		{name: "held: 8 left, 16 kept", share: 0.5},
		{name: "starts: 8 left, 8 kept", share: 0.25, placed: true},
		// 8 free + 8 elastic: the gang fits only once growth pods go.
		{name: "held after growth: the elastic job is not shrunk for it", share: 0.5, grown: true},
		{name: "not held after growth: the elastic job shrinks", share: 0.25, grown: true, placed: true, shrunk: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster{nodes: twoRacks()}
			c.pods = append(c.pods, filler("full", "n0", "1", 8), filler("half", "n2", "1", 4))
			nodes := []string{"n1", "n1", ""}
			if tc.grown {
				nodes[2] = "n3"
			}
			for i, n := range nodes {
				p := tb.MakePod().Namespace("ns").Name(fmt.Sprintf("el-trainer-%d", i)).PodGroup("el").Task("trainer", i).
					Paddle(paddleapi.RoleTrainer, i, paddleapi.ModeCollective).CPU("1").Memory("1Gi").GPUs(4).Elastic()
				if n != "" {
					p.Node(n).Started(time.Now().Add(-time.Hour))
				}
				c.pods = append(c.pods, p.Obj())
			}
			c.pods = append(c.pods, paddlePod("gang", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
			c.groups = []*schedulingv1.PodGroup{group("gang", 1, time.Now().Add(-time.Hour)),
				group("el", 1, time.Now().Add(-2*time.Hour)), group("fillers", 0, time.Now())}
			tiers, cfgs := paddleTiers(t)
			r := runSession(t, WithArgs(tiers, map[string]interface{}{ArgSmallJobHeadroom: tc.share}), cfgs, c, nil, allocate.New(), preempt.New())
			if _, placed := r.placed["gang-trainer-0"]; placed != tc.placed {
				t.Errorf("gang placed = %t, want %t (placed %v)", placed, tc.placed, r.placed)
			}
			// Volcano's preempt action picks the node; paddle only lets it
			// take pods above the minimum (one of the three stays).
			if shrunk := len(r.evicted) > 0; shrunk != tc.shrunk || len(r.evicted) > 2 {
				t.Errorf("evicted %v, want shrunk = %t and at most the 2 pods above the minimum", r.evicted, tc.shrunk)
			}
			if !tc.placed && !strings.Contains(jobByName(t, r, "gang").JobFitErrors, "counting the 4") && !strings.Contains(jobByName(t, r, "gang").JobFitErrors, "counting the 8") {
				t.Errorf("held gang's fit errors do not count the elastic GPUs: %q", jobByName(t, r, "gang").JobFitErrors)
			}
		})
	}
}
