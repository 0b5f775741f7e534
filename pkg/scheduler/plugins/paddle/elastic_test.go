package paddle

import (
	"slices"
	"testing"
	"time"

	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/actions/allocate"
	"volcano.sh/volcano/pkg/scheduler/actions/preempt"

	tb "github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// The starvation guard counts an elastic job's running pods above its
// minimum as releasable: a starving gang that fits once they are taken
// back reserves nothing (the preempt action takes them), one that does
// not reserves as before.
func TestGuardCountsReleasablePods(t *testing.T) {
	cases := []struct {
		name     string
		args     map[string]interface{}
		elMin    int32
		reserved []string
	}{
		{name: "fits once the elastic job shrinks: no reservation", elMin: 1},
		{name: "the elastic job is at its minimum: reserves", elMin: 2, reserved: []string{"n0"}},
		{name: "shrinking off: reserves", elMin: 1, args: map[string]interface{}{ArgShrinkElastic: false}, reserved: []string{"n0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler()
			// n0: two 2-GPU pods of an elastic job (started an hour ago),
			// 4 GPUs idle; n1: full for ten hours. The gang needs 6 GPUs
			// on one node.
			c := cluster{nodes: oneRack(2)}
			c.pods = append(c.pods, leverPods("el", []int{2, 2}, 2, "n0", time.Hour, elasticPod)...)
			c.pods = append(c.pods, startedAt(filler("full", "n1", "1", 8), time.Now().Add(-10*time.Hour)))
			c.pods = append(c.pods, paddlePod("gang", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 6))
			c.groups = []*schedulingv1.PodGroup{group("gang", 1, time.Now().Add(-starvingAge)),
				group("el", tc.elMin, time.Now().Add(-time.Hour)), group("fillers", 0, time.Now())}
			tiers, cfgs := paddleTiers(t)
			r := runSession(t, WithArgs(tiers, tc.args), cfgs, c, s)
			r.close()
			if got := bookedNodes(s, "ns/gang"); !slices.Equal(got, tc.reserved) {
				t.Errorf("reserved %v, want %v", got, tc.reserved)
			}
		})
	}
}

// Pods above an elastic job's minimum are placed like the rest when GPUs
// are free, but never onto GPUs the starvation guard keeps for a starving
// gang (whatever their queue), and not while a gang waits for the GPUs
// that shrinking elastic jobs would free.
func TestElasticGrowth(t *testing.T) {
	cases := []struct {
		name  string
		build func() cluster
		// placed: pod -> node ("" not placed); evicted as in result.
		placed  map[string]string
		evicted []string
	}{
		{name: "grows into idle GPUs", build: func() cluster {
			c := cluster{nodes: oneRack(1)}
			c.pods = leverPods("el", []int{2, 2}, 1, "n0", time.Hour, elasticPod)
			c.groups = []*schedulingv1.PodGroup{group("el", 1, time.Now().Add(-time.Hour))}
			return c
		}, placed: map[string]string{"el-trainer-1": "n0"}},
		{name: "never onto GPUs reserved for a starving gang, even from another queue", build: func() cluster {
			// n0: 4 GPUs idle, 4 draining, reserved for the 8-GPU gang;
			// n1 full. The elastic job (queue q2) runs its minimum on n2.
			// A plain job of q2 is not subject to the reservation and
			// takes n0's idle GPUs; the elastic job's growth does not.
			c := cluster{nodes: append(oneRack(2), node("n2", "rack0", "spine0", "64", "512Gi", 2, nil)), queues: []string{"q2"}}
			c.pods = append(c.pods, startedAt(filler("draining", "n0", "1", 4), time.Now().Add(-time.Minute)),
				startedAt(filler("full", "n1", "1", 8), time.Now().Add(-10*time.Hour)))
			c.pods = append(c.pods, leverPods("el", []int{2, 2}, 1, "n2", time.Hour, elasticPod)...)
			c.pods = append(c.pods, paddlePod("gang", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
			c.groups = []*schedulingv1.PodGroup{group("gang", 1, time.Now().Add(-starvingAge)), group("fillers", 0, time.Now()),
				tb.MakePodGroup().Name("el").Namespace("ns").Queue("q2").MinMember(1).Created(time.Now().Add(-time.Hour)).Obj()}
			return c
		}, placed: map[string]string{"el-trainer-1": "", "gang-trainer-0": ""}},
		{name: "a gang that fits once elastic jobs shrink goes before their growth", build: func() cluster {
			// n0: the elastic job runs 2 of its 3 pods (4 GPUs), 4 idle;
			// the gang needs 6: the growth pod waits, the gang takes one
			// pod above the minimum back and starts.
			c := cluster{nodes: oneRack(1)}
			c.pods = leverPods("el", []int{2, 2, 2}, 2, "n0", time.Hour, elasticPod)
			c.pods = append(c.pods, paddlePod("gang", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 6))
			c.groups = []*schedulingv1.PodGroup{group("el", 1, time.Now().Add(-time.Hour)), group("gang", 1, time.Now())}
			return c
		}, placed: map[string]string{"el-trainer-2": "", "gang-trainer-0": "n0"}, evicted: []string{"el-trainer-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tiers, cfgs := paddleTiers(t)
			r := runSession(t, tiers, cfgs, tc.build(), nil, allocate.New(), preempt.New())
			for pod, want := range tc.placed {
				if got := r.placed[pod]; got != want {
					t.Errorf("%s placed on %q, want %q (placed %v)", pod, got, want, r.placed)
				}
			}
			if !slices.Equal(r.evicted, tc.evicted) {
				t.Errorf("evicted %v, want %v", r.evicted, tc.evicted)
			}
		})
	}
}

// A plain job of another queue does take the idle GPUs of the reserved
// node (it is not subject to the reservation): what the growth case above
// is measured against.
func TestReservationLeavesOtherQueues(t *testing.T) {
	s := newScheduler()
	c := cluster{nodes: oneRack(2), queues: []string{"q2"}}
	c.pods = append(c.pods, startedAt(filler("draining", "n0", "1", 4), time.Now().Add(-time.Minute)),
		startedAt(filler("full", "n1", "1", 8), time.Now().Add(-10*time.Hour)))
	c.pods = append(c.pods, paddlePod("gang", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
	c.pods = append(c.pods, paddlePod("other", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 2))
	c.groups = []*schedulingv1.PodGroup{group("gang", 1, time.Now().Add(-starvingAge)), group("fillers", 0, time.Now()),
		tb.MakePodGroup().Name("other").Namespace("ns").Queue("q2").MinMember(1).Created(time.Now()).Obj()}
	tiers, cfgs := paddleTiers(t)
	r := allocateOnce(t, tiers, cfgs, c, s)
	if got := r.placed["other-trainer-0"]; got != "n0" {
		t.Errorf("plain job of q2 placed on %q, want n0", got)
	}
	if got := bookedNodes(s, "ns/gang"); !slices.Equal(got, []string{"n0"}) {
		t.Errorf("reserved %v, want [n0]", got)
	}
}

// A gang still waiting goes before an elastic job that would grow.
func TestWaitingGangBeforeGrowth(t *testing.T) {
	c := cluster{nodes: oneRack(1)}
	c.pods = leverPods("el", []int{2, 2, 2}, 2, "n0", time.Hour, elasticPod)
	c.pods = append(c.pods, paddlePod("gang", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
	c.groups = []*schedulingv1.PodGroup{group("el", 1, time.Now().Add(-time.Hour)), group("gang", 1, time.Now())}
	tiers, cfgs := paddleTiers(t)
	r := openSession(t, tiers, cfgs, c)
	gang, el := jobByName(t, r, "gang"), jobByName(t, r, "el")
	if !r.ssn.JobOrderFn(gang, el) || r.ssn.JobOrderFn(el, gang) {
		t.Error("the waiting gang is not ordered before the growing elastic job")
	}
}
