package paddle

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/actions/allocate"
	"volcano.sh/volcano/pkg/scheduler/actions/preempt"
	"volcano.sh/volcano/pkg/scheduler/actions/reclaim"
	"volcano.sh/volcano/pkg/scheduler/api"

	tb "github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// The retry count paddle reads is the one Volcano's job controller writes.
func TestRetryCountAnnotationIsVolcanos(t *testing.T) {
	if paddleapi.RetryCountAnnotation != batch.JobRetryCountKey {
		t.Errorf("paddleapi.RetryCountAnnotation = %q, Volcano writes %q", paddleapi.RetryCountAnnotation, batch.JobRetryCountKey)
	}
}

// What stopping a job costs, read from its pods: the restart cost it
// declares (the default when it declares none or nonsense), the stops left
// under both bounds, read from its newest incarnation's pods, and how long
// it has run since its last pod started.
func TestStopCostOf(t *testing.T) {
	now := time.Now()
	type pod struct {
		ran               time.Duration // 0: pending
		cost              string
		retries, maxRetry int
	}
	cases := []struct {
		name string
		pods []pod
		max  int
		want stopCost
	}{
		{name: "declared cost, restarts left under paddle's bound", max: 2,
			pods: []pod{{ran: 3 * time.Hour, cost: "20m", maxRetry: 5}, {ran: 2 * time.Hour, cost: "20m", maxRetry: 5}},
			want: stopCost{restartCost: 20 * time.Minute, restartsLeft: 2, ranFor: 2 * time.Hour}},
		{name: "the default cost for none or nonsense", max: 2,
			pods: []pod{{ran: time.Hour, cost: "soon", maxRetry: 5}},
			want: stopCost{restartCost: paddleapi.DefaultRestartCost, restartsLeft: 2, ranFor: time.Hour}},
		{name: "the job's maxRetry bounds below paddle's", max: 4,
			pods: []pod{{ran: time.Hour, retries: 1, maxRetry: 3}},
			want: stopCost{restartCost: paddleapi.DefaultRestartCost, restartsLeft: 1, ranFor: time.Hour}},
		{name: "no maxRetry written: paddle's bound alone", max: 3,
			pods: []pod{{ran: time.Hour, retries: 1, maxRetry: -1}},
			want: stopCost{restartCost: paddleapi.DefaultRestartCost, restartsLeft: 2, ranFor: time.Hour}},
		{name: "a terminating pod of the old incarnation does not count", max: 3,
			pods: []pod{{ran: 9 * time.Hour, cost: "1m", retries: 0, maxRetry: 9}, {ran: 30 * time.Minute, cost: "7m", retries: 2, maxRetry: 9}},
			want: stopCost{restartCost: 7 * time.Minute, restartsLeft: 1, ranFor: 30 * time.Minute}},
		{name: "never below zero", max: 1,
			pods: []pod{{ran: time.Hour, retries: 4, maxRetry: 3}},
			want: stopCost{restartCost: paddleapi.DefaultRestartCost, restartsLeft: 0, ranFor: time.Hour}},
		{name: "a job whose pods wait has not run", max: 2,
			pods: []pod{{maxRetry: 3}},
			want: stopCost{restartCost: paddleapi.DefaultRestartCost, restartsLeft: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var tasks []*api.TaskInfo
			for i, p := range tc.pods {
				w := tb.MakePod().Namespace("ns").Name(fmt.Sprintf("ck-%d", i)).PodGroup("ck").CPU("1").GPUs(1).Checkpointable().Retries(p.retries, p.maxRetry)
				if p.cost != "" {
					w.Annotation(paddleapi.RestartCostAnnotation, p.cost)
				}
				if p.ran > 0 {
					w.Node("n0").Started(now.Add(-p.ran))
				}
				tasks = append(tasks, api.NewTaskInfo(w.Obj()))
			}
			job := api.NewJobInfo("ns/ck", tasks...)
			if got := stopCostOf(job, tc.max, now); got != tc.want {
				t.Errorf("stopCostOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// lowCheckpointableJob is a checkpointable Paddle job of low priority with
// two running 4-GPU trainers on n0 that ran ran since its last restart.
func lowCheckpointableJob(ran, cost time.Duration, retries, maxRetry int) ([]*v1.Pod, *schedulingv1.PodGroup) {
	low := func(p *tb.PodWrapper) *tb.PodWrapper {
		return checkpointableWith(cost, retries, maxRetry)(p).Priority(coexistencePriorities[lowPriority])
	}
	return leverPods("ck", []int{4, 4}, 2, "n0", ran, low),
		tb.MakePodGroup().Name("ck").Namespace("ns").MinMember(2).PriorityClass(lowPriority).Created(time.Now().Add(-10 * time.Hour)).Obj()
}

// A checkpointable job's own guards hold against every preemption, not
// only paddle's: a higher-priority job that Volcano's priority plugin
// lets preempt it takes nothing while the job has no restart left
// (Volcano would fail it) or has run less than its restart cost, and
// takes it as without paddle otherwise.
func TestStopGuardsHoldForVolcanoPreemption(t *testing.T) {
	cases := []struct {
		name    string
		victim  func() ([]*v1.Pod, *schedulingv1.PodGroup)
		evicted bool
	}{
		{name: "restarts left, ran past its cost: preempted as without paddle", evicted: true,
			victim: func() ([]*v1.Pod, *schedulingv1.PodGroup) { return lowCheckpointableJob(time.Hour, 0, 0, 3) }},
		{name: "its next restart would reach maxRetry: kept",
			victim: func() ([]*v1.Pod, *schedulingv1.PodGroup) { return lowCheckpointableJob(time.Hour, 0, 2, 3) }},
		{name: "stopped paddle.checkpointable.maxPreemptions times: kept",
			victim: func() ([]*v1.Pod, *schedulingv1.PodGroup) { return lowCheckpointableJob(time.Hour, 0, 2, 10) }},
		{name: "ran less than its restart cost: kept",
			victim: func() ([]*v1.Pod, *schedulingv1.PodGroup) { return lowCheckpointableJob(time.Hour, 2*time.Hour, 0, 3) }},
	}
	all := []string{"ck-trainer-0", "ck-trainer-1"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vp, vg := tc.victim()
			hp, hg := plainJob("high", "default", highPriority, []int{8}, 0, "")
			c := cluster{nodes: oneRack(1), priorities: coexistencePriorities,
				pods: append(vp, hp...), groups: []*schedulingv1.PodGroup{vg, hg}}
			tiers, cfgs := paddleTiers(t)
			var want []string
			if tc.evicted {
				want = all
			}
			r := runSession(t, tiers, cfgs, c, nil, allocate.New(), preempt.New(), reclaim.New())
			if !slices.Equal(r.evicted, want) {
				t.Errorf("with paddle: evicted %v, want %v", r.evicted, want)
			}
			// Without paddle Volcano preempts it in every case.
			w := runSession(t, withoutPaddle(tiers), cfgs, c, nil, allocate.New(), preempt.New(), reclaim.New())
			if !slices.Equal(w.evicted, all) {
				t.Errorf("without paddle: evicted %v, want %v", w.evicted, all)
			}
		})
	}
}
