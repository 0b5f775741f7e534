package paddle

import (
	"fmt"
	"testing"
	"time"

	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Consecutive ranks of a collective job go next to each other: a ring
// all-reduce crosses every boundary between rank i and i+1, so a job on k
// nodes should cross k-1 node boundaries, not more.
func TestRankOrder(t *testing.T) {
	cases := []struct {
		name    string
		running map[int]string // rank -> node, already placed
		fillers map[string]int // node -> GPUs used by other workloads
		pending []int
		want    map[int]string
	}{
		{name: "the next ranks fill the previous rank's node",
			running: map[int]string{0: "n0", 1: "n0"}, pending: []int{2, 3},
			want: map[int]string{2: "n0", 3: "n0"}},
		{name: "a full node continues in the previous rank's rack",
			running: map[int]string{0: "n0", 1: "n0", 2: "n0", 3: "n0"}, pending: []int{4},
			want: map[int]string{4: "n1"}},
		{name: "no coming back to an earlier rank's node",
			// n0 is the tighter fit (2 GPUs free to n2's 4), but rank 3 is on n2.
			running: map[int]string{0: "n0", 1: "n0", 2: "n2", 3: "n2"}, fillers: map[string]int{"n0": 2}, pending: []int{4},
			want: map[int]string{4: "n2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// rack0: n0, n1; rack1: n2, n3; 8 GPUs each, trainers of 2.
			c := cluster{nodes: twoRacks()}
			for n, g := range tc.fillers {
				c.pods = append(c.pods, filler("f-"+n, n, "1", g))
			}
			for rank, n := range tc.running {
				c.pods = append(c.pods, paddlePod("ring", "trainer", rank, paddleapi.RoleTrainer, paddleapi.ModeCollective, n, "1", 2))
			}
			for _, rank := range tc.pending {
				c.pods = append(c.pods, paddlePod("ring", "trainer", rank, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 2))
			}
			min := int32(len(tc.running) + len(tc.pending))
			c.groups = []*schedulingv1.PodGroup{group("ring", min, time.Now()), group("fillers", 0, time.Now())}
			tiers, cfgs := paddleTiers(t)
			got := allocateOnce(t, tiers, cfgs, c, nil).placed
			for rank, want := range tc.want {
				if n := got[fmt.Sprintf("ring-trainer-%d", rank)]; n != want {
					t.Errorf("rank %d on %q, want %s (placed %v)", rank, n, want, got)
				}
			}
		})
	}
}

// A rolled-back allocation is forgotten: the next rank is not placed next
// to a rank that is not there.
func TestRankOrderForgetsRollback(t *testing.T) {
	js := &jobState{placed: map[paddleapi.Role]map[string]int{}, trainerAt: map[int]string{}}
	js.track(paddleapi.RoleTrainer, 3, "n1", 1)
	js.track(paddleapi.RoleTrainer, 3, "n1", -1)
	if n, ok := js.trainerAt[3]; ok {
		t.Errorf("rank 3 still recorded on %s after its rollback", n)
	}
	js.track(paddleapi.RolePServer, 0, "n2", 1)
	if len(js.trainerAt) != 0 {
		t.Errorf("a pserver recorded as a trainer rank: %v", js.trainerAt)
	}
}
