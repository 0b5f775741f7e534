//go:build volcano_v1_15

package paddle

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/actions/allocate"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// Volcano v1.15's gangPreempt (it evicts only jobs of lower priority)
// with deploy/paddle's tiers: paddle's guards hold there as under
// preempt: an elastic job gives only its pods above its minimum, and a
// job that is no lever's victim is left to Volcano's plugins, which evict
// as they do without paddle.
func TestGangPreemptKeepsPaddleGuards(t *testing.T) {
	cases := []struct {
		name string
		jobs func() ([]*v1.Pod, []*schedulingv1.PodGroup)
		// want: evicted with paddle; wantWithout: without (nil: the same).
		want, wantWithout []string
	}{
		{name: "a high-priority Paddle gang takes an elastic job's pods above its minimum only",
			jobs: func() ([]*v1.Pod, []*schedulingv1.PodGroup) {
				ep, eg := lowElasticJob()
				gp, gg := fixedPaddleJob("pd", highPriority, []int{4})
				return append(ep, gp...), []*schedulingv1.PodGroup{eg, gg}
			},
			// Without paddle gangPreempt takes two pods above the minimum
			// too, in its own order.
			want: []string{"el-trainer-2", "el-trainer-3"}, wantWithout: []string{"el-trainer-0", "el-trainer-1"}},
		{name: "a high-priority plain job: Volcano's plugins decide, as without paddle",
			jobs: func() ([]*v1.Pod, []*schedulingv1.PodGroup) {
				lp, lg := plainJob("low", "default", lowPriority, []int{4, 4}, 2, "n0")
				hp, hg := plainJob("high", "default", highPriority, []int{8}, 0, "")
				return append(lp, hp...), []*schedulingv1.PodGroup{lg, hg}
			},
			want: []string{"low-worker-0", "low-worker-1"}},
		{name: "a high-priority plain job that needs an elastic job's minimum takes nothing",
			jobs: func() ([]*v1.Pod, []*schedulingv1.PodGroup) {
				ep, eg := lowElasticJob()
				hp, hg := plainJob("high", "default", highPriority, []int{8}, 0, "")
				return append(ep, hp...), []*schedulingv1.PodGroup{eg, hg}
			},
			wantWithout: []string{"el-trainer-0", "el-trainer-1", "el-trainer-2", "el-trainer-3"}},
		// stopping.go: a checkpointable job out of restarts is kept from
		// every action (Volcano would fail it at its next restart).
		{name: "a high-priority plain job takes nothing from a checkpointable job with no restart left",
			jobs:        highPlainOverCheckpointable(2, 3),
			wantWithout: []string{"ck-trainer-0", "ck-trainer-1"}},
		{name: "one with restarts left goes as without paddle",
			jobs: highPlainOverCheckpointable(0, 3),
			want: []string{"ck-trainer-0", "ck-trainer-1"}},
	}
	// By its registered name: go mod tidy reads this file for the v1.14.1
	// module file too (it ignores build tags), where the action's package
	// does not exist.
	gangPreempt, ok := framework.GetAction("gangpreempt")
	if !ok {
		t.Fatal("Volcano's gangpreempt action is not registered")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods, groups := tc.jobs()
			c := cluster{nodes: oneRack(1), pods: pods, groups: groups, priorities: coexistencePriorities}
			tiers, cfgs := paddleTiers(t)
			r := runSession(t, tiers, cfgs, c, nil, allocate.New(), gangPreempt)
			if !slices.Equal(r.evicted, tc.want) {
				t.Errorf("with paddle: evicted %v, want %v", r.evicted, tc.want)
			}
			want := tc.wantWithout
			if want == nil {
				want = tc.want
			}
			w := runSession(t, withoutPaddle(tiers), cfgs, c, nil, allocate.New(), gangPreempt)
			if !slices.Equal(w.evicted, want) {
				t.Errorf("without paddle: evicted %v, want %v", w.evicted, want)
			}
		})
	}
}

// highPlainOverCheckpointable is a pending high-priority plain 8-GPU job
// and a low-priority checkpointable job on n0 that has restarted retries
// of maxRetry times.
func highPlainOverCheckpointable(retries, maxRetry int) func() ([]*v1.Pod, []*schedulingv1.PodGroup) {
	return func() ([]*v1.Pod, []*schedulingv1.PodGroup) {
		cp, cg := lowCheckpointableJob(time.Hour, 0, retries, maxRetry)
		hp, hg := plainJob("high", "default", highPriority, []int{8}, 0, "")
		return append(cp, hp...), []*schedulingv1.PodGroup{cg, hg}
	}
}
