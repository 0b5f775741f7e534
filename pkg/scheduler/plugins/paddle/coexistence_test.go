package paddle

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/actions/allocate"
	"volcano.sh/volcano/pkg/scheduler/actions/preempt"
	"volcano.sh/volcano/pkg/scheduler/actions/reclaim"
	"volcano.sh/volcano/pkg/scheduler/conf"

	tb "github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// PriorityClasses of the coexistence cases.
const (
	lowPriority  = "low"
	highPriority = "high"
)

var coexistencePriorities = map[string]int32{lowPriority: 10, highPriority: 1000}

// plainJob is a Volcano job that is not a Paddle job: one pod per entry
// of gpus, the first running ones on node, in queue with priority.
func plainJob(name, queue, priority string, gpus []int, running int, node string) ([]*v1.Pod, *schedulingv1.PodGroup) {
	var pods []*v1.Pod
	for i, g := range gpus {
		p := tb.MakePod().Namespace("ns").Name(fmt.Sprintf("%s-worker-%d", name, i)).PodGroup(name).
			Task("worker", i).CPU("1").Memory("1Gi").GPUs(g).Priority(coexistencePriorities[priority])
		if i < running {
			p.Node(node).Started(time.Now().Add(-time.Hour))
		}
		pods = append(pods, p.Obj())
	}
	pg := tb.MakePodGroup().Name(name).Namespace("ns").Queue(queue).MinMember(1).PriorityClass(priority).
		Created(time.Now().Add(-time.Hour)).Obj()
	return pods, pg
}

// fixedPaddleJob is a collective Paddle job of fixed size (minimum = all
// its trainers), pending.
func fixedPaddleJob(name, priority string, gpus []int) ([]*v1.Pod, *schedulingv1.PodGroup) {
	var pods []*v1.Pod
	for i, g := range gpus {
		pods = append(pods, tb.MakePod().Namespace("ns").Name(fmt.Sprintf("%s-trainer-%d", name, i)).PodGroup(name).
			Task("trainer", i).Paddle(paddleapi.RoleTrainer, i, paddleapi.ModeCollective).CPU("1").Memory("1Gi").GPUs(g).
			Priority(coexistencePriorities[priority]).Obj())
	}
	pg := tb.MakePodGroup().Name(name).Namespace("ns").MinMember(int32(len(gpus))).PriorityClass(priority).
		Created(time.Now()).Obj()
	return pods, pg
}

// lowElasticJob is an elastic Paddle job of low priority running four
// 2-GPU trainers on n0, minimum two.
func lowElasticJob() ([]*v1.Pod, *schedulingv1.PodGroup) {
	low := func(p *tb.PodWrapper) *tb.PodWrapper { return p.Elastic().Priority(coexistencePriorities[lowPriority]) }
	return leverPods("el", []int{2, 2, 2, 2}, 4, "n0", time.Hour, low),
		tb.MakePodGroup().Name("el").Namespace("ns").MinMember(2).PriorityClass(lowPriority).Created(time.Now().Add(-time.Hour)).Obj()
}

// Paddle must not take Volcano's preemption and reclaim away from other
// jobs: with paddle in the tiers, Volcano's real allocate, preempt and
// reclaim actions evict exactly what they evict with the same tiers less
// paddle, both for deploy/paddle's configuration and for Volcano's own CI
// configuration with paddle added at the end of its first tier (where an
// operator would add it). One full 8-GPU node.
func TestVolcanoPreemptionAndReclaimUnchanged(t *testing.T) {
	type job struct {
		pods []*v1.Pod
		pg   *schedulingv1.PodGroup
	}
	cases := []struct {
		name   string
		queues []string
		jobs   func() []job
		want   []string // evicted, with and without paddle
		placed string   // the preemptor's pod that must be placed
	}{
		{name: "a high-priority plain job preempts a low-priority plain job",
			jobs: func() []job {
				lp, lg := plainJob("low", "default", lowPriority, []int{4, 4}, 2, "n0")
				hp, hg := plainJob("high", "default", highPriority, []int{8}, 0, "")
				return []job{{lp, lg}, {hp, hg}}
			},
			want: []string{"low-worker-0", "low-worker-1"}, placed: "high-worker-0"},
		{name: "a job of one queue reclaims from a queue that took everything", queues: []string{"q1", "q2"},
			jobs: func() []job {
				hp, hg := plainJob("hog", "q1", lowPriority, []int{8}, 1, "n0")
				cp, cg := plainJob("claim", "q2", lowPriority, []int{4}, 0, "")
				return []job{{hp, hg}, {cp, cg}}
			},
			want: []string{"hog-worker-0"}, placed: "claim-worker-0"},
		{name: "a high-priority fixed-size Paddle job preempts a low-priority plain job",
			jobs: func() []job {
				lp, lg := plainJob("low", "default", lowPriority, []int{4, 4}, 2, "n0")
				pp, pg := fixedPaddleJob("pd", highPriority, []int{4, 4})
				return []job{{lp, lg}, {pp, pg}}
			},
			want: []string{"low-worker-0", "low-worker-1"}, placed: "pd-trainer-1"},
		{name: "equal priority: no preemption, with or without paddle",
			jobs: func() []job {
				lp, lg := plainJob("first", "default", lowPriority, []int{4, 4}, 2, "n0")
				pp, pg := fixedPaddleJob("pd", lowPriority, []int{4, 4})
				return []job{{lp, lg}, {pp, pg}}
			}},
	}
	configurations := []struct {
		name  string
		tiers func(t testing.TB) ([]conf.Tier, []conf.Configuration)
	}{
		{name: "deploy/paddle", tiers: paddleTiers},
		{name: "Volcano CI with paddle last in the first tier", tiers: func(t testing.TB) ([]conf.Tier, []conf.Configuration) {
			tiers, cfgs := ciTiers(t)
			return paddleLastInFirstTier(tiers), cfgs
		}},
	}
	for _, cf := range configurations {
		for _, tc := range cases {
			t.Run(cf.name+"/"+tc.name, func(t *testing.T) {
				with, cfgs := cf.tiers(t)
				evicted := map[string][]string{}
				for variant, tiers := range map[string][]conf.Tier{"with paddle": with, "without paddle": withoutPaddle(with)} {
					c := cluster{nodes: oneRack(1), queues: tc.queues, priorities: coexistencePriorities}
					for _, j := range tc.jobs() {
						c.pods = append(c.pods, j.pods...)
						c.groups = append(c.groups, j.pg)
					}
					r := runSession(t, tiers, cfgs, c, nil, allocate.New(), preempt.New(), reclaim.New())
					evicted[variant] = r.evicted
					if !slices.Equal(r.evicted, tc.want) {
						t.Errorf("%s: evicted %v, want %v", variant, r.evicted, tc.want)
					}
					if tc.placed != "" && r.placed[tc.placed] == "" {
						t.Errorf("%s: %s not placed (placed %v)", variant, tc.placed, r.placed)
					}
				}
				if !slices.Equal(evicted["with paddle"], evicted["without paddle"]) {
					t.Errorf("with paddle evicted %v, without %v", evicted["with paddle"], evicted["without paddle"])
				}
			})
		}
	}
}

// The one guard paddle adds to Volcano's priority preemption: as Volcano
// ships it (gang's PreemptableFn off) a higher-priority job could take an
// elastic job's pods below its minimum; with paddle it takes only those
// above, highest index first, and where those are not enough it takes
// nothing.
func TestPriorityPreemptionKeepsElasticMinimum(t *testing.T) {
	cases := []struct {
		name     string
		highGPUs int
		want     []string
	}{
		{name: "the pods above the minimum make room", highGPUs: 4, want: []string{"el-trainer-2", "el-trainer-3"}},
		{name: "they do not: nothing is taken", highGPUs: 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep, eg := lowElasticJob()
			hp, hg := plainJob("high", "default", highPriority, []int{tc.highGPUs}, 0, "")
			c := cluster{nodes: oneRack(1), priorities: coexistencePriorities,
				pods: append(ep, hp...), groups: []*schedulingv1.PodGroup{eg, hg}}
			tiers, cfgs := paddleTiers(t)
			r := runSession(t, tiers, cfgs, c, nil, allocate.New(), preempt.New(), reclaim.New())
			if !slices.Equal(r.evicted, tc.want) {
				t.Errorf("evicted %v, want %v", r.evicted, tc.want)
			}
			// Without paddle the same tiers take pods below the minimum
			// where that is what makes room.
			if tc.highGPUs == 8 {
				r := runSession(t, withoutPaddle(tiers), cfgs, c, nil, allocate.New(), preempt.New(), reclaim.New())
				if len(r.evicted) != 4 {
					t.Errorf("without paddle: evicted %v, want all 4 pods", r.evicted)
				}
			}
		})
	}
}
