package paddle

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/conf"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// startedAt marks a running pod as started by the kubelet at t.
func startedAt(p *v1.Pod, t time.Time) *v1.Pod {
	st := metav1.NewTime(t)
	p.Status.StartTime = &st
	return p
}

// wholeNodeGang is a starving collective gang of one 8-GPU trainer, and
// two 8-GPU nodes of one rack with the given running pods.
func wholeNodeGang(created time.Time, running ...*v1.Pod) cluster {
	c := cluster{nodes: oneRack(2)}
	c.pods = append(c.pods, running...)
	c.pods = append(c.pods, paddlePod("big", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
	c.groups = []*schedulingv1.PodGroup{group("big", 1, created), group("fillers", 0, created)}
	return c
}

// gangSessions runs sessions over wholeNodeGang clusters as one scheduler,
// its clock at t0 plus some time, the gang created starvingAge before t0.
type gangSessions struct {
	t           *testing.T
	s           *scheduler
	t0, created time.Time
	tiers       []conf.Tier
	cfgs        []conf.Configuration
}

func newGangSessions(t *testing.T) *gangSessions {
	t0 := time.Now()
	tiers, cfgs := paddleTiers(t)
	return &gangSessions{t: t, s: newScheduler(), t0: t0, created: t0.Add(-starvingAge), tiers: tiers, cfgs: cfgs}
}

// allocate runs the allocate action after the given time from t0.
func (g *gangSessions) allocate(after time.Duration, running ...*v1.Pod) result {
	g.s.at = g.t0.Add(after)
	return allocateOnce(g.t, g.tiers, g.cfgs, wholeNodeGang(g.created, running...), g.s)
}

// open only opens a session (reservations are planned), no action runs.
func (g *gangSessions) open(after time.Duration, running ...*v1.Pod) result {
	g.s.at = g.t0.Add(after)
	return runSession(g.t, g.tiers, g.cfgs, wholeNodeGang(g.created, running...), g.s)
}

// A starving gang reserves the node expected to drain first: where the
// pods it waits for have run for the shortest time (run times are
// heavy-tailed), with equal GPUs still busy.
func TestReservationPrefersYoungPods(t *testing.T) {
	t0 := time.Now()
	cases := []struct {
		name   string
		n0, n1 time.Duration // how long the 4-GPU pod on each node has run
		want   []string
	}{
		{name: "n1's pod started last", n0: 5 * time.Hour, n1: 10 * time.Minute, want: []string{"n1"}},
		{name: "n0's pod started last", n0: 10 * time.Minute, n1: 5 * time.Hour, want: []string{"n0"}},
		{name: "equal ages: by name", n0: time.Hour, n1: time.Hour, want: []string{"n0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler()
			s.at = t0
			c := wholeNodeGang(t0.Add(-starvingAge),
				startedAt(filler("a", "n0", "1", 4), t0.Add(-tc.n0)), startedAt(filler("b", "n1", "1", 4), t0.Add(-tc.n1)))
			tiers, cfgs := paddleTiers(t)
			allocateOnce(t, tiers, cfgs, c, s)
			if got := bookedNodes(s, "ns/big"); !slices.Equal(got, tc.want) {
				t.Errorf("reserved %v, want %v", got, tc.want)
			}
		})
	}
}

// The bound: a reservation moves only to plans that have room for the gang
// once the pods running when it first reserved have ended. A pod started
// later, however young, may run for days; a plan waiting for it is not
// taken. A plan waiting only for older pods that are expected to drain
// sooner is.
func TestReservationMovesOnlyWithinItsBound(t *testing.T) {
	g := newGangSessions(t)
	t0 := g.t0
	// t0: n0 waits for a pod that has run 6 h (and one of 10 min), n1 for
	// one of 3 h: the gang reserves n1.
	old := startedAt(filler("old", "n0", "1", 4), t0.Add(-6*time.Hour))
	young := startedAt(filler("young", "n0", "1", 4), t0.Add(-10*time.Minute))
	mid := startedAt(filler("mid", "n1", "1", 4), t0.Add(-3*time.Hour))
	g.allocate(0, old, young, mid)
	if got := bookedNodes(g.s, "ns/big"); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("reserved %v, want [n1]", got)
	}
	// t0+1h: n0's 6-hour pod ended and a new one started there at t0+30m.
	// n0 would wait for pods younger than n1's, but one of them started
	// after the gang reserved: the reservation stays.
	later := startedAt(filler("later", "n0", "1", 4), t0.Add(30*time.Minute))
	g.allocate(time.Hour, young, later, mid)
	if got := bookedNodes(g.s, "ns/big"); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("reservation moved to %v, waiting for a pod started after it reserved", got)
	}
	// t0+2h: the later pod ended too; n0 waits only for the 10-minute pod
	// (now 2h10m old), n1 for its 3-hour pod (now 5 h): the gang moves.
	g.allocate(2*time.Hour, young, mid)
	if got := bookedNodes(g.s, "ns/big"); !slices.Equal(got, []string{"n0"}) {
		t.Fatalf("reserved %v, want [n0] (drains sooner, within the bound)", got)
	}
	// t0+3h: n0 drained: the gang starts there.
	r := g.allocate(3*time.Hour, mid)
	if n := r.placed["big-trainer-0"]; n != "n0" {
		t.Errorf("big-trainer-0 placed on %q, want n0: %v", n, r.placed)
	}
}

// A gang keeps its reservation, and its bound's start, in a session where
// it is not its queue's blocker because it fits on free resources by the
// estimate (the allocate action may still not place it, e.g. when its
// queue is over its share).
func TestReservationKeptWhileGangStarves(t *testing.T) {
	g := newGangSessions(t)
	t0 := g.t0
	g.allocate(0, startedAt(filler("a", "n0", "1", 8), t0.Add(-time.Hour)), startedAt(filler("b", "n1", "1", 4), t0.Add(-time.Hour)))
	if got := bookedNodes(g.s, "ns/big"); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("reserved %v, want [n1]", got)
	}
	// An hour later n1 has drained: the gang fits now. The session opens
	// (reservations are planned) but no action runs.
	g.open(time.Hour, startedAt(filler("a", "n0", "1", 8), t0.Add(-time.Hour)))
	b := booking(g.s, "ns/big")
	if b == nil {
		t.Fatal("the reservation was dropped while the gang still starves")
	}
	if !slices.Equal(b.nodes, []string{"n1"}) || b.waited != starvingAge {
		t.Errorf("booked %v after waiting %s, want [n1] after %s (the bound's start kept)", b.nodes, b.waited, starvingAge)
	}
}

// A plan waits for every resource the gang needs, not only GPUs; and the
// reservation keeps only what the gang needs: on a node still draining
// for it, a pod asking for none of the GPUs (a pserver) is placed, one
// asking for a GPU is not.
func TestReservationPassesOtherResources(t *testing.T) {
	cases := []struct {
		name   string
		gpus   int
		placed bool
	}{
		{name: "CPU-only pserver", gpus: 0, placed: true},
		{name: "1-GPU trainer", gpus: 1, placed: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// n0: every CPU taken for 5 h (all its GPUs idle, yet the gang
			// waits for that pod there too); n1: 4 of 8 GPUs busy for 10
			// minutes, CPU to spare. The gang reserves n1.
			t0 := time.Now()
			s := newScheduler()
			s.at = t0
			c := wholeNodeGang(t0.Add(-starvingAge), startedAt(filler("cpu-hog", "n0", "64", 0), t0.Add(-5*time.Hour)),
				startedAt(filler("b", "n1", "1", 4), t0.Add(-10*time.Minute)))
			mode, role := paddleapi.ModePS, paddleapi.RolePServer
			if tc.gpus > 0 {
				mode, role = paddleapi.ModeCollective, paddleapi.RoleTrainer
			}
			c.pods = append(c.pods, paddlePod("small", string(role), 0, role, mode, "", "4", tc.gpus))
			c.groups = append(c.groups, group("small", 1, time.Now()))
			tiers, cfgs := paddleTiers(t)
			r := allocateOnce(t, tiers, cfgs, c, s)
			if got := bookedNodes(s, "ns/big"); !slices.Equal(got, []string{"n1"}) {
				t.Fatalf("reserved %v, want [n1]", got)
			}
			on := r.placed["small-"+string(role)+"-0"]
			if placed := on != ""; placed != tc.placed {
				t.Errorf("small placed on %q, want placed=%t: %v", on, tc.placed, r.placed)
			}
		})
	}
}
