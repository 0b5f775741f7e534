package paddle

import (
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
	c := cluster{nodes: []*v1.Node{gpuNode("n0", "rack0"), gpuNode("n1", "rack0")}}
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

// A gang waiting longer than paddle.starvationAfter goes first, and while it
// does not fit, later jobs of its queue are held back, so freed resources go
// to it instead of a stream of small jobs.
func TestStarvationBoundedByAging(t *testing.T) {
	build := func(bigCreated time.Time) cluster {
		c := cluster{nodes: []*v1.Node{gpuNode("n0", "rack0"), gpuNode("n1", "rack0")}}
		c.pods = append(c.pods, filler("running", "n0", "1", 8)) // n0 busy until it finishes
		for i := 0; i < 2; i++ {
			c.pods = append(c.pods, paddlePod("big", "trainer", i, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
		}
		c.pods = append(c.pods, paddlePod("small", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 4))
		c.groups = []*schedulingv1.PodGroup{group("big", 2, bigCreated), group("small", 1, time.Now()), group("fillers", 0, time.Now())}
		return c
	}
	tiers, cfgs := paddleTiers(t)

	// Young big gang: the small job runs on the free node (no starvation yet).
	got := allocateOnce(t, tiers, cfgs, build(time.Now().Add(-time.Minute)), nil).placed
	if got["small-trainer-0"] == "" {
		t.Fatalf("small job not placed next to a young gang: %v", got)
	}

	// Starving big gang (waited 2h > 30m): the small job is held back, so
	// n1 stays free for the big gang.
	r := allocateOnce(t, tiers, cfgs, build(time.Now().Add(-2*time.Hour)), nil)
	if n, ok := r.placed["small-trainer-0"]; ok {
		t.Fatalf("small job placed on %s while a starving gang waits", n)
	}
	small := jobByName(t, r, "small")
	if !strings.Contains(small.JobFitErrors, "held back behind gang ns/big") {
		t.Errorf("held-back job does not say why: %q", small.JobFitErrors)
	}

	// Once the running pod is gone, the starving gang is placed first.
	c := build(time.Now().Add(-2 * time.Hour))
	c.pods = c.pods[1:]
	got = allocateOnce(t, tiers, cfgs, c, nil).placed
	if got["big-trainer-0"] == "" || got["big-trainer-1"] == "" {
		t.Errorf("starving gang not placed when it fits: %v", got)
	}
}

// A starving gang that could not fit even on an empty cluster must not block
// its queue forever.
func TestInfeasibleGangDoesNotBlock(t *testing.T) {
	c := cluster{nodes: []*v1.Node{gpuNode("n0", "rack0")}}
	for i := 0; i < 2; i++ {
		c.pods = append(c.pods, paddlePod("huge", "trainer", i, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
	}
	c.pods = append(c.pods, paddlePod("small", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 4))
	c.groups = []*schedulingv1.PodGroup{group("huge", 2, time.Now().Add(-2*time.Hour)), group("small", 1, time.Now())}
	tiers, cfgs := paddleTiers(t)
	if got := allocateOnce(t, tiers, cfgs, c, nil).placed; got["small-trainer-0"] == "" {
		t.Errorf("an infeasible starving gang held the queue: %v", got)
	}
}

// A gang that is rolled back leaves no placement behind in the plugin's
// state, which later scoring in the session would otherwise trust.
func TestRolledBackGangLeavesNoState(t *testing.T) {
	c := cluster{nodes: []*v1.Node{gpuNode("n0", "rack0"), gpuNode("n1", "rack0")}}
	// 3 trainers of 6 GPUs: two are placed, the third does not fit, the
	// gang is rolled back.
	for i := 0; i < 3; i++ {
		c.pods = append(c.pods, paddlePod("g", "trainer", i, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 6))
	}
	c.groups = []*schedulingv1.PodGroup{group("g", 3, time.Now())}
	tiers, cfgs := paddleTiers(t)
	p := &paddlePlugin{}
	r := allocateOnce(t, tiers, cfgs, c, p)
	if len(r.placed) != 0 {
		t.Fatalf("a gang that cannot fit was placed: %v", r.placed)
	}
	job := jobByName(t, r, "g")
	js, placed := p.state.snapshot(job.UID)
	if js == nil {
		t.Fatal("the plugin did not track the Paddle job")
	}
	for role, nodes := range placed {
		if len(nodes) != 0 {
			t.Errorf("stale %s placements after rollback: %v", role, nodes)
		}
	}
	// And the event handler did see the tentative placements.
	h := p.state.eventHandler()
	task := taskByName(t, job, "g-trainer-0")
	task.NodeName = "n0"
	h.AllocateFunc(&framework.Event{Task: task})
	if _, placed := p.state.snapshot(job.UID); placed[paddleapi.RoleTrainer]["n0"] != 1 {
		t.Errorf("allocate event not recorded: %v", placed)
	}
	h.DeallocateFunc(&framework.Event{Task: task})
	if _, placed := p.state.snapshot(job.UID); len(placed[paddleapi.RoleTrainer]) != 0 {
		t.Errorf("deallocate event not undone: %v", placed)
	}
}
