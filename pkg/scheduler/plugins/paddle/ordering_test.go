package paddle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

func taskByName(t *testing.T, job *api.JobInfo, name string) *api.TaskInfo {
	t.Helper()
	for _, task := range job.Tasks {
		if task.Name == name {
			return task
		}
	}
	t.Fatalf("no task %s in job %s", name, job.Name)
	return nil
}

func jobByName(t *testing.T, r result, name string) *api.JobInfo {
	t.Helper()
	for _, j := range r.jobs {
		if j.Name == name {
			return j
		}
	}
	t.Fatalf("no job %s", name)
	return nil
}

func TestTaskOrder(t *testing.T) {
	c := psCluster()
	c.pods = append(c.pods, paddlePod("wd", "worker", 2, paddleapi.RoleTrainer, paddleapi.ModePS, "", "1", 0))
	tiers, cfgs := paddleTiers(t)
	r := openSession(t, tiers, cfgs, c)
	job := jobByName(t, r, "wd")
	order := []string{"wd-ps-0", "wd-ps-1", "wd-worker-0", "wd-worker-1", "wd-worker-2"}
	for i := 0; i+1 < len(order); i++ {
		a, b := taskByName(t, job, order[i]), taskByName(t, job, order[i+1])
		if !r.ssn.TaskOrderFn(a, b) || r.ssn.TaskOrderFn(b, a) {
			t.Errorf("%s should be allocated before %s", order[i], order[i+1])
		}
	}
}

// Among equal-priority gangs, one that fits now goes before an older one
// that does not.
func TestJobOrderGangFitsFirst(t *testing.T) {
	c := cluster{nodes: oneRack(2)}
	old := time.Now().Add(-5 * time.Minute)
	for i := 0; i < 3; i++ { // 3 x 8 GPUs on 2 nodes: does not fit
		c.pods = append(c.pods, paddlePod("big", "trainer", i, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
	}
	c.pods = append(c.pods, paddlePod("small", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 4))
	c.groups = []*schedulingv1.PodGroup{group("big", 3, old), group("small", 1, time.Now())}

	tiers, cfgs := paddleTiers(t)
	r := openSession(t, tiers, cfgs, c)
	if !r.ssn.JobOrderFn(jobByName(t, r, "small"), jobByName(t, r, "big")) {
		t.Error("the gang that fits now is not ordered first")
	}
	stockT, stockC := stockTiers(t)
	rs := openSession(t, stockT, stockC, c)
	if rs.ssn.JobOrderFn(jobByName(t, rs, "small"), jobByName(t, rs, "big")) {
		t.Error("stock tiers already order the fitting gang first; the test shows nothing")
	}
	// The gang that cannot be placed says what is missing, in the PodGroup
	// condition Volcano's gang plugin writes when the session closes.
	ra := allocateOnce(t, tiers, cfgs, c, nil)
	big := jobByName(t, ra, "big")
	ra.close()
	var cond string
	for _, c := range big.PodGroup.Status.Conditions {
		if c.Type == "Unschedulable" {
			cond = c.Message
		}
	}
	if !strings.Contains(cond, "paddle: 2 of the 3 pods the gang still needs fit") || !strings.Contains(cond, "nvidia.com/gpu 8") {
		t.Errorf("PodGroup Unschedulable condition = %q", cond)
	}
}

// starvingAge is over deploy/paddle's paddle.starvationAfter (16h).
const starvingAge = 17 * time.Hour

// Among waiting gangs the starvation guard covers, the one that still
// needs fewer GPUs goes first, whatever their ages; a gang past the
// starvation threshold still goes before both, and jobs the guard does not
// cover keep Volcano's order (nothing would bound their wait).
func TestJobOrderSmallGangsFirst(t *testing.T) {
	cases := []struct {
		name       string
		args       map[string]interface{}
		bigAge     time.Duration // the 2 x 8-GPU gang; the 1 x 2-GPU gang is new
		plainSmall bool          // small job without the job plugin's labels, task "worker"
		smallFirst bool          // JobOrderFn(small, big)
		bigFirst   bool          // JobOrderFn(big, small)
	}{
		{name: "fewer GPUs first", bigAge: 10 * time.Minute, smallFirst: true},
		{name: "a starving gang still goes first", bigAge: starvingAge, bigFirst: true},
		{name: "off: no opinion, Volcano's creation order", bigAge: 10 * time.Minute,
			args: map[string]interface{}{ArgSmallGangsFirst: false}, bigFirst: true},
		{name: "without aging nothing bounds the wait: no opinion", bigAge: 10 * time.Minute,
			args: map[string]interface{}{ArgStarvationAfter: 0}, bigFirst: true},
		{name: "a job the guard does not cover keeps its place", bigAge: 10 * time.Minute, plainSmall: true, bigFirst: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Both fit now: the fit order has no opinion.
			c := cluster{nodes: oneRack(3)}
			for i := 0; i < 2; i++ {
				c.pods = append(c.pods, paddlePod("big", "trainer", i, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
			}
			smallRole, smallTask := paddleapi.RoleTrainer, "trainer"
			if tc.plainSmall {
				smallRole, smallTask = "", "worker"
			}
			c.pods = append(c.pods, paddlePod("small", smallTask, 0, smallRole, paddleapi.ModeCollective, "", "1", 2))
			c.groups = []*schedulingv1.PodGroup{group("big", 2, time.Now().Add(-tc.bigAge)), group("small", 1, time.Now())}
			tiers, cfgs := paddleTiers(t)
			r := openSession(t, WithArgs(tiers, tc.args), cfgs, c)
			small, big := jobByName(t, r, "small"), jobByName(t, r, "big")
			if got := r.ssn.JobOrderFn(small, big); got != tc.smallFirst {
				t.Errorf("small before big = %t, want %t", got, tc.smallFirst)
			}
			if got := r.ssn.JobOrderFn(big, small); got != tc.bigFirst {
				t.Errorf("big before small = %t, want %t", got, tc.bigFirst)
			}
		})
	}
}

// A gang waiting longer than paddle.starvationAfter goes first; while it
// does not fit, the guard keeps freed resources for it. The reservation
// keeps only the nodes it will start on; only jobs the job plugin labelled
// (or, opted in, jobs known by task names) take part.
func TestStarvationGuard(t *testing.T) {
	const bigAge = starvingAge
	type want struct {
		smallOn  []string // nodes the small job may land on; nil: held
		reason   string   // in the small job's fit errors when held
		reserved []string // nodes the big gang holds in the book
	}
	cases := []struct {
		name       string
		args       map[string]interface{}
		plainBig   bool // big gang without the job plugin's labels, task "worker"
		plainSmall bool
		want       want
	}{
		{name: "reservation leaves the unreserved node to others",
			want: want{smallOn: []string{"n3"}, reserved: []string{"n1", "n2"}}},
		{name: "a plain job is not subject to the reservation", plainSmall: true,
			want: want{smallOn: []string{"n1", "n2", "n3"}, reserved: []string{"n1", "n2"}}},
		{name: "a plain gang named worker reserves nothing", plainBig: true,
			want: want{smallOn: []string{"n1", "n2", "n3"}}},
		{name: "a plain gang named worker reserves when the operator opts in", plainBig: true,
			args: map[string]interface{}{ArgStarvationTaskNameJobs: true},
			want: want{smallOn: []string{"n3"}, reserved: []string{"n1", "n2"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScheduler()
			// rack0: n0 full, n1 free, n2 half used; rack1: n3, 4 GPUs free.
			c := cluster{nodes: append(oneRack(3), node("n3", "rack1", "spine0", "64", "512Gi", 4, nil))}
			c.pods = append(c.pods, filler("running-0", "n0", "1", 8), filler("running-2", "n2", "1", 4))
			bigRole, bigTask := paddleapi.RoleTrainer, "trainer"
			if tc.plainBig {
				bigRole, bigTask = "", "worker"
			}
			for i := 0; i < 2; i++ {
				c.pods = append(c.pods, paddlePod("big", bigTask, i, bigRole, paddleapi.ModeCollective, "", "1", 8))
			}
			smallRole, smallTask := paddleapi.RoleTrainer, "trainer"
			if tc.plainSmall {
				smallRole, smallTask = "", "worker"
			}
			c.pods = append(c.pods, paddlePod("small", smallTask, 0, smallRole, paddleapi.ModeCollective, "", "1", 4))
			c.groups = []*schedulingv1.PodGroup{group("big", 2, time.Now().Add(-bigAge)), group("small", 1, time.Now()), group("fillers", 0, time.Now())}
			tiers, cfgs := paddleTiers(t)
			r := allocateOnce(t, WithArgs(tiers, tc.args), cfgs, c, s)
			if r.placed["big-"+bigTask+"-0"] != "" {
				t.Fatalf("big gang placed although it does not fit: %v", r.placed)
			}
			on, placed := r.placed["small-"+smallTask+"-0"]
			switch {
			case tc.want.smallOn == nil && placed:
				t.Errorf("small job placed on %s, want held", on)
			case tc.want.smallOn == nil:
				if small := jobByName(t, r, "small"); !strings.Contains(small.JobFitErrors, tc.want.reason) {
					t.Errorf("held job does not say why: %q", small.JobFitErrors)
				}
			case !slices.Contains(tc.want.smallOn, on):
				t.Errorf("small job placed on %q, want one of %v", on, tc.want.smallOn)
			}
			if got := bookedNodes(s, "ns/big"); !slices.Equal(got, tc.want.reserved) {
				t.Errorf("reserved %v, want %v", got, tc.want.reserved)
			}
		})
	}
}

// The reserved nodes stay the gang's from one session to the next while no
// other plan is expected to drain sooner; the gang moves to such a plan,
// and is placed once its nodes have drained. The fillers here carry no
// start time, so they count as equally old and the plan with fewer GPUs
// still busy drains sooner (reservation_test.go covers pod ages).
func TestReservationHoldsUntilPlaced(t *testing.T) {
	s := newScheduler()
	build := starvingGangCluster
	tiers, cfgs := paddleTiers(t)
	reserved := func() []string { return bookedNodes(s, "ns/big") }
	// n1 and n2 partly used, n0 full: the gang reserves n1 and n2 (6 GPUs
	// still busy). No task fits anywhere, so no predicate runs: the
	// reservation is planned when the session opens.
	allocateOnce(t, tiers, cfgs, build(filler("f0", "n0", "1", 8), filler("f1", "n1", "1", 2), filler("f2", "n2", "1", 4)), s)
	if got := reserved(); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("reserved %v, want [n1 n2]", got)
	}
	// n0 now as free as n2: a new plan (n1, n0) would also wait for 6 busy
	// GPUs; the reservation does not move.
	allocateOnce(t, tiers, cfgs, build(filler("f0", "n0", "1", 4), filler("f1", "n1", "1", 2), filler("f2", "n2", "1", 4)), s)
	if got := reserved(); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("reservation moved to %v on an equal plan", got)
	}
	// n0 nearly drained (n2's job may run for days): n0 and n1 have 3 GPUs
	// still busy against 6, and the reservation moves there.
	allocateOnce(t, tiers, cfgs, build(filler("f0", "n0", "1", 1), filler("f1", "n1", "1", 2), filler("f2", "n2", "1", 4)), s)
	if got := reserved(); !slices.Equal(got, []string{"n0", "n1"}) {
		t.Fatalf("reserved %v, want [n0 n1] (fewer GPUs still busy)", got)
	}
	// n0 and n1 drained: the gang starts there, and the book forgets it.
	r := allocateOnce(t, tiers, cfgs, build(filler("f2", "n2", "1", 4)), s)
	for i := 0; i < 2; i++ {
		if n := r.placed[fmt.Sprintf("big-trainer-%d", i)]; n != "n0" && n != "n1" {
			t.Errorf("big-trainer-%d placed on %q, want a reserved node: %v", i, n, r.placed)
		}
	}
}

// booking is a copy of a gang's entry in s's reservation book, nil when it
// has none.
func booking(s *scheduler, job api.JobID) *booked {
	book := &s.store.book
	book.mu.Lock()
	defer book.mu.Unlock()
	if b := book.plans[job]; b != nil {
		c := *b
		return &c
	}
	return nil
}

// bookedNodes are the nodes a gang holds in s's reservation book.
func bookedNodes(s *scheduler, job api.JobID) []string {
	if b := booking(s, job); b != nil {
		return b.nodes
	}
	return nil
}

// A starving gang that could not fit even on an empty cluster must not block
// its queue forever.
func TestInfeasibleGangDoesNotBlock(t *testing.T) {
	c := cluster{nodes: oneRack(1)}
	for i := 0; i < 2; i++ {
		c.pods = append(c.pods, paddlePod("huge", "trainer", i, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
	}
	c.pods = append(c.pods, paddlePod("small", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 4))
	c.groups = []*schedulingv1.PodGroup{group("huge", 2, time.Now().Add(-starvingAge)), group("small", 1, time.Now())}
	tiers, cfgs := paddleTiers(t)
	if got := allocateOnce(t, tiers, cfgs, c, nil).placed; got["small-trainer-0"] == "" {
		t.Errorf("an infeasible starving gang held the queue: %v", got)
	}
}

// A gang that is rolled back leaves no placement behind in the plugin's
// state, which later scoring in the session would otherwise trust.
func TestRolledBackGangLeavesNoState(t *testing.T) {
	c := cluster{nodes: oneRack(2)}
	// 3 trainers of 6 GPUs: two are placed, the third does not fit, the
	// gang is rolled back.
	for i := 0; i < 3; i++ {
		c.pods = append(c.pods, paddlePod("g", "trainer", i, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 6))
	}
	c.groups = []*schedulingv1.PodGroup{group("g", 3, time.Now())}
	tiers, cfgs := paddleTiers(t)
	s := newScheduler()
	r := allocateOnce(t, tiers, cfgs, c, s)
	if len(r.placed) != 0 {
		t.Fatalf("a gang that cannot fit was placed: %v", r.placed)
	}
	job := jobByName(t, r, "g")
	js, placed := s.session().snapshot(job.UID)
	if js == nil {
		t.Fatal("the plugin did not track the Paddle job")
	}
	for role, nodes := range placed {
		if len(nodes) != 0 {
			t.Errorf("stale %s placements after rollback: %v", role, nodes)
		}
	}
	// And the event handler did see the tentative placements.
	h := s.session().eventHandler()
	task := taskByName(t, job, "g-trainer-0")
	task.NodeName = "n0"
	h.AllocateFunc(&framework.Event{Task: task})
	if _, placed := s.session().snapshot(job.UID); placed[paddleapi.RoleTrainer]["n0"] != 1 {
		t.Errorf("allocate event not recorded: %v", placed)
	}
	h.DeallocateFunc(&framework.Event{Task: task})
	if _, placed := s.session().snapshot(job.UID); len(placed[paddleapi.RoleTrainer]) != 0 {
		t.Errorf("deallocate event not undone: %v", placed)
	}
}

// starvingGangCluster is one rack of three 8-GPU nodes with the fillers on
// them and the starving 2-pod gang big of 8 GPUs a pod.
func starvingGangCluster(fillers ...*v1.Pod) cluster {
	c := cluster{nodes: oneRack(3)}
	c.pods = append(c.pods, fillers...)
	for i := 0; i < 2; i++ {
		c.pods = append(c.pods, paddlePod("big", "trainer", i, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
	}
	c.groups = []*schedulingv1.PodGroup{group("big", 2, time.Now().Add(-starvingAge)), group("fillers", 0, time.Now())}
	return c
}
