package paddle

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/actions/allocate"
	"volcano.sh/volcano/pkg/scheduler/actions/preempt"
	"volcano.sh/volcano/pkg/scheduler/actions/reclaim"
	"volcano.sh/volcano/pkg/scheduler/conf"

	tb "github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// leverPods are a collective job's trainers: the first running ones on
// node (started ran ago), the rest pending; opt marks each pod (Elastic,
// Checkpointable) or is nil for a job that opted in to neither.
func leverPods(job string, gpus []int, running int, node string, ran time.Duration, opt func(*tb.PodWrapper) *tb.PodWrapper) []*v1.Pod {
	var out []*v1.Pod
	for i, g := range gpus {
		p := tb.MakePod().Namespace("ns").Name(fmt.Sprintf("%s-trainer-%d", job, i)).PodGroup(job).
			Task("trainer", i).Paddle(paddleapi.RoleTrainer, i, paddleapi.ModeCollective).CPU("1").Memory("1Gi").GPUs(g)
		if i < running {
			p.Node(node).Started(time.Now().Add(-ran))
		}
		if opt != nil {
			opt(p)
		}
		out = append(out, p.Obj())
	}
	return out
}

func elasticPod(p *tb.PodWrapper) *tb.PodWrapper        { return p.Elastic() }
func checkpointablePod(p *tb.PodWrapper) *tb.PodWrapper { return p.Checkpointable() }

// elasticCheckpointable marks an elastic job's pods checkpointable too,
// with its restart cost.
func elasticCheckpointable(cost time.Duration) func(*tb.PodWrapper) *tb.PodWrapper {
	return func(p *tb.PodWrapper) *tb.PodWrapper { return checkpointableWith(cost, 0, 3)(p.Elastic()) }
}

// checkpointableWith marks a checkpointable job's pods with its restart
// cost (0: none written) and restarts (retries of maxRetry; maxRetry < 0:
// not written).
func checkpointableWith(cost time.Duration, retries, maxRetry int) func(*tb.PodWrapper) *tb.PodWrapper {
	return func(p *tb.PodWrapper) *tb.PodWrapper {
		p.Checkpointable().Retries(retries, maxRetry)
		if cost > 0 {
			p.RestartCost(cost)
		}
		return p
	}
}

// Volcano's real allocate, preempt and reclaim actions with deploy/paddle's
// tiers on one full 8-GPU node: what a gang of one 4-GPU (or 8-GPU) pod
// takes, and what it never takes.
func TestLeversWithVolcanoActions(t *testing.T) {
	cases := []struct {
		name     string
		args     map[string]interface{}
		running  []*v1.Pod
		gangGPUs int
		gangAge  time.Duration
		// podsWaited: the gang's pending pods were created this long ago
		// (zero: with its PodGroup), as after a restart, when the job
		// controller creates new pods under the old PodGroup.
		podsWaited time.Duration
		victimPG   []*schedulingv1.PodGroup
		queues     []string
		want       []string // evicted
		// wantCount: evicted this many pods of the victim, whichever
		// (set instead of want).
		wantCount int
		gangPlace bool
	}{
		{name: "a waiting gang shrinks an elastic job towards its minimum", gangGPUs: 4,
			running:  leverPods("el", []int{2, 2, 2, 2}, 4, "n0", time.Hour, elasticPod),
			victimPG: []*schedulingv1.PodGroup{group("el", 1, time.Now().Add(-time.Hour))},
			want:     []string{"el-trainer-2", "el-trainer-3"}, gangPlace: true},
		{name: "never below the elastic job's minimum", gangGPUs: 4,
			running:  leverPods("el", []int{2, 2, 2, 2}, 4, "n0", time.Hour, elasticPod),
			victimPG: []*schedulingv1.PodGroup{group("el", 3, time.Now().Add(-time.Hour))}},
		{name: "shrinking is off unless configured", gangGPUs: 4, args: map[string]interface{}{ArgShrinkElastic: false},
			running:  leverPods("el", []int{2, 2, 2, 2}, 4, "n0", time.Hour, elasticPod),
			victimPG: []*schedulingv1.PodGroup{group("el", 1, time.Now().Add(-time.Hour))}},
		// Any eviction restarts a checkpointable job whole: shrinking one
		// that is elastic too takes the stop's guards.
		{name: "a gang that has waited less than the restart cost does not shrink an elastic job that is checkpointable", gangGPUs: 4,
			gangAge:  time.Hour,
			running:  leverPods("el", []int{2, 2, 2, 2}, 4, "n0", 10*time.Hour, elasticCheckpointable(2*time.Hour)),
			victimPG: []*schedulingv1.PodGroup{group("el", 1, time.Now().Add(-10*time.Hour))}},
		{name: "a gang that has waited past the restart cost shrinks an elastic job that is checkpointable", gangGPUs: 4,
			gangAge:  3 * time.Hour,
			running:  leverPods("el", []int{2, 2, 2, 2}, 4, "n0", 10*time.Hour, elasticCheckpointable(2*time.Hour)),
			victimPG: []*schedulingv1.PodGroup{group("el", 1, time.Now().Add(-10*time.Hour))},
			want:     []string{"el-trainer-2", "el-trainer-3"}, gangPlace: true},
		{name: "a starving gang stops a checkpointable job", gangGPUs: 8, gangAge: starvingAge,
			running:  leverPods("ck", []int{4, 4}, 2, "n0", 10*time.Hour, checkpointablePod),
			victimPG: []*schedulingv1.PodGroup{group("ck", 2, time.Now().Add(-10*time.Hour))},
			want:     []string{"ck-trainer-0", "ck-trainer-1"}, gangPlace: true},
		{name: "a just-restarted gang (old PodGroup, new pods) is not starving and stops nothing", gangGPUs: 8,
			gangAge: starvingAge, podsWaited: time.Minute,
			running:  leverPods("ck", []int{4, 4}, 2, "n0", 10*time.Hour, checkpointablePod),
			victimPG: []*schedulingv1.PodGroup{group("ck", 2, time.Now().Add(-10*time.Hour))}},
		{name: "a restarted gang whose new pods have waited past the threshold stops a checkpointable job", gangGPUs: 8,
			gangAge: 3 * starvingAge, podsWaited: starvingAge,
			running:  leverPods("ck", []int{4, 4}, 2, "n0", 10*time.Hour, checkpointablePod),
			victimPG: []*schedulingv1.PodGroup{group("ck", 2, time.Now().Add(-10*time.Hour))},
			want:     []string{"ck-trainer-0", "ck-trainer-1"}, gangPlace: true},
		{name: "a gang that is not starving leaves checkpointable jobs alone", gangGPUs: 8,
			running:  leverPods("ck", []int{4, 4}, 2, "n0", 10*time.Hour, checkpointablePod),
			victimPG: []*schedulingv1.PodGroup{group("ck", 2, time.Now().Add(-10*time.Hour))}},
		{name: "not for a starving gang whose new pods have waited less than the job's restart cost", gangGPUs: 8, gangAge: starvingAge, podsWaited: time.Hour,
			running:  leverPods("ck", []int{4, 4}, 2, "n0", 10*time.Hour, checkpointableWith(2*time.Hour, 0, 3)),
			victimPG: []*schedulingv1.PodGroup{group("ck", 2, time.Now().Add(-10*time.Hour))}},
		{name: "not a job that has run less than its restart cost, even for a starving gang", gangGPUs: 8, gangAge: starvingAge,
			running:  leverPods("ck", []int{4, 4}, 2, "n0", 10*time.Hour, checkpointableWith(11*time.Hour, 0, 3)),
			victimPG: []*schedulingv1.PodGroup{group("ck", 2, time.Now().Add(-10*time.Hour))}},
		{name: "not a job stopped paddle.checkpointable.maxPreemptions times already", gangGPUs: 8, gangAge: starvingAge,
			running:  leverPods("ck", []int{4, 4}, 2, "n0", 10*time.Hour, checkpointableWith(0, 2, 10)),
			victimPG: []*schedulingv1.PodGroup{group("ck", 2, time.Now().Add(-10*time.Hour))}},
		{name: "never the restart that reaches the job's maxRetry, at which Volcano fails it", gangGPUs: 8, gangAge: starvingAge,
			args:     map[string]interface{}{ArgCheckpointMaxPreemptions: 5},
			running:  leverPods("ck", []int{4, 4}, 2, "n0", 10*time.Hour, checkpointableWith(0, 2, 3)),
			victimPG: []*schedulingv1.PodGroup{group("ck", 2, time.Now().Add(-10*time.Hour))}},
		{name: "a job with restarts left below both bounds is stopped", gangGPUs: 8, gangAge: starvingAge,
			args:     map[string]interface{}{ArgCheckpointMaxPreemptions: 5},
			running:  leverPods("ck", []int{4, 4}, 2, "n0", 10*time.Hour, checkpointableWith(0, 3, 6)),
			victimPG: []*schedulingv1.PodGroup{group("ck", 2, time.Now().Add(-10*time.Hour))},
			want:     []string{"ck-trainer-0", "ck-trainer-1"}, gangPlace: true},
		{name: "a job that opted in to nothing is never preempted", gangGPUs: 8, gangAge: starvingAge,
			running:  leverPods("plain", []int{4, 4}, 2, "n0", 10*time.Hour, nil),
			victimPG: []*schedulingv1.PodGroup{group("plain", 1, time.Now().Add(-10*time.Hour))}},
		// Across queues the first tier decides (gang's ReclaimableFn takes
		// pods above the job's minimum in its own order); paddle is asked
		// only where that tier offers none.
		{name: "reclaim shrinks an elastic job of a queue over its share", gangGPUs: 4, queues: []string{"q2"},
			running:   leverPods("el", []int{2, 2, 2, 2}, 4, "n0", time.Hour, elasticPod),
			victimPG:  []*schedulingv1.PodGroup{tb.MakePodGroup().Name("el").Namespace("ns").Queue("q2").MinMember(1).Created(time.Now().Add(-time.Hour)).Obj()},
			wantCount: 2, gangPlace: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster{nodes: oneRack(1), queues: tc.queues}
			c.pods = append(c.pods, tc.running...)
			gang := paddlePod("gang", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", tc.gangGPUs)
			if tc.podsWaited > 0 {
				gang.CreationTimestamp = metav1.NewTime(time.Now().Add(-tc.podsWaited))
			}
			c.pods = append(c.pods, gang)
			c.groups = append([]*schedulingv1.PodGroup{group("gang", 1, time.Now().Add(-tc.gangAge))}, tc.victimPG...)
			tiers, cfgs := paddleTiers(t)
			r := runSession(t, WithArgs(tiers, tc.args), cfgs, c, nil, allocate.New(), preempt.New(), reclaim.New())
			if tc.wantCount > 0 {
				if len(r.evicted) != tc.wantCount {
					t.Errorf("evicted %v, want %d pods", r.evicted, tc.wantCount)
				}
			} else if !slices.Equal(r.evicted, tc.want) {
				t.Errorf("evicted %v, want %v", r.evicted, tc.want)
			}
			if got := r.placed["gang-trainer-0"] != ""; got != tc.gangPlace {
				t.Errorf("gang placed: %t, want %t (placed %v)", got, tc.gangPlace, r.placed)
			}
		})
	}
}

// Volcano's preempt and reclaim actions take a job as a preemptor only
// while every JobStarvingFn of the first tier that has one agrees. Paddle
// leaves that question to Volcano's plugins: with deploy/paddle's tiers,
// and with paddle added at the end of Volcano's CI configuration's first
// tier, JobStarving answers as it does without paddle, whatever jobs run
// beside the gang. Paddle's own answer is true for every job but an
// elastic job that would only grow.
func TestJobStarvingLeftToVolcano(t *testing.T) {
	cases := []struct {
		name     string
		running  []*v1.Pod
		min      int32
		gangAge  time.Duration
		gangGPUs int // 4 unless set
	}{
		{name: "only jobs that opted in to nothing", running: leverPods("plain", []int{4, 4}, 2, "n0", time.Hour, nil), min: 1},
		{name: "an elastic job above its minimum", running: leverPods("other", []int{4, 4}, 2, "n0", time.Hour, elasticPod), min: 1},
		{name: "an elastic job above its minimum that could not make room", running: leverPods("other", []int{4, 4}, 2, "n0", time.Hour, elasticPod), min: 1,
			gangGPUs: 8, gangAge: starvingAge},
		{name: "an elastic job at its minimum", running: leverPods("other", []int{4, 4}, 2, "n0", time.Hour, elasticPod), min: 2},
		{name: "a checkpointable job, the gang starving", running: leverPods("other", []int{4, 4}, 2, "n0", time.Hour, checkpointablePod), min: 2,
			gangAge: starvingAge},
	}
	configurations := map[string]func(t testing.TB) ([]conf.Tier, []conf.Configuration){
		"deploy/paddle": paddleTiers,
		"Volcano CI with paddle last in the first tier": func(t testing.TB) ([]conf.Tier, []conf.Configuration) {
			tiers, cfgs := ciTiers(t)
			return paddleLastInFirstTier(tiers), cfgs
		},
	}
	for cname, configuration := range configurations {
		for _, tc := range cases {
			t.Run(cname+"/"+tc.name, func(t *testing.T) {
				c := cluster{nodes: oneRack(1), pods: tc.running}
				if tc.gangGPUs == 0 {
					tc.gangGPUs = 4
				}
				c.pods = append(c.pods, paddlePod("gang", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", tc.gangGPUs))
				c.groups = []*schedulingv1.PodGroup{group("gang", 1, time.Now().Add(-tc.gangAge)),
					group(tc.running[0].Annotations[schedulingv1.KubeGroupNameAnnotationKey], tc.min, time.Now().Add(-time.Hour))}
				tiers, cfgs := configuration(t)
				with := openSession(t, tiers, cfgs, c)
				without := openSession(t, withoutPaddle(tiers), cfgs, c)
				got, want := with.ssn.JobStarving(jobByName(t, with, "gang")), without.ssn.JobStarving(jobByName(t, without, "gang"))
				if got != want || !got {
					t.Errorf("JobStarving(gang) = %t with paddle, %t without; want both true", got, want)
				}
			})
		}
	}
}

// Paddle's JobStarvingFn: an elastic job at its minimum with pods still
// pending would only grow, and growth takes idle GPUs, never a victim;
// every other job, Paddle's or not, gets the neutral true.
func TestJobStarvingFnVetoesOnlyGrowth(t *testing.T) {
	el := leverPods("el", []int{2, 2, 2}, 2, "n0", time.Hour, elasticPod)
	plain := leverPods("plain", []int{2, 2}, 0, "", 0, nil)
	c := cluster{nodes: oneRack(1), pods: append(el, plain...),
		groups: []*schedulingv1.PodGroup{group("el", 2, time.Now().Add(-time.Hour)), group("plain", 2, time.Now())}}
	tiers, cfgs := paddleTiers(t)
	s := newScheduler()
	r := runSession(t, tiers, cfgs, c, s)
	for name, want := range map[string]bool{"el": false, "plain": true} {
		if got := s.session().jobStarvingFn(jobByName(t, r, name)); got != want {
			t.Errorf("jobStarvingFn(%s) = %t, want %t", name, got, want)
		}
	}
}
