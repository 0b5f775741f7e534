package paddle

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"volcano.sh/apis/pkg/apis/scheduling"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// arrivedAt is a session job created at t.
func arrivedAt(id string, t time.Time) *api.JobInfo {
	return &api.JobInfo{UID: api.JobID(id), PodGroup: &api.PodGroup{PodGroup: scheduling.PodGroup{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t)}}},
		CreationTimestamp: metav1.NewTime(t)}
}

// The log counts each job once, from its first sighting, also after it
// has left the cluster, until its arrival leaves the window; only jobs of
// fewer GPUs than asked count.
func TestArrivalLog(t *testing.T) {
	t0 := time.Now()
	var l arrivalLog
	// 2 GPUs for 1h each: 2 GPU-hours per job.
	predict := func(j *api.JobInfo) (int, float64) {
		if j.UID == "big" {
			return 8, 8 * 3600
		}
		return 2, 2 * 3600
	}
	jobs := map[api.JobID]*api.JobInfo{"a": arrivedAt("a", t0.Add(-time.Hour)), "b": arrivedAt("b", t0.Add(-3*time.Hour)),
		"old": arrivedAt("old", t0.Add(-5*time.Hour)), "big": arrivedAt("big", t0.Add(-time.Hour))}
	l.observe(t0, jobs, predict)
	l.observe(t0, jobs, predict) // seen again: not counted twice
	window := SmallJobDemandWindow.Seconds()
	if got, want := l.demand(t0, 8), 2*2*3600/window; got != want {
		t.Errorf("demand %g GPUs, want %g (a and b; not old, outside the window, nor big)", got, want)
	}
	if got, want := l.demand(t0, 9), (2*2+8)*3600/window; got != want {
		t.Errorf("demand below 9 GPUs %g, want %g (big too)", got, want)
	}
	// a and b finished and are gone: they still count while they are
	// within the window.
	l.observe(t0.Add(time.Minute), map[api.JobID]*api.JobInfo{}, predict)
	if got, want := l.demand(t0.Add(time.Minute), 8), 2*2*3600/window; got != want {
		t.Errorf("after they left, demand %g, want %g", got, want)
	}
	// b's arrival leaves the window.
	later := t0.Add(SmallJobDemandWindow - 2*time.Hour)
	l.observe(later, nil, predict)
	if got, want := l.demand(later, 8), 2*3600/window; got != want {
		t.Errorf("once b left the window, demand %g, want %g", got, want)
	}
	if l.seen["b"] || len(l.list) != 2 {
		t.Errorf("b still logged: %v", l.list)
	}
}

// The log keeps the newest maxArrivals jobs.
func TestArrivalLogBounded(t *testing.T) {
	t0 := time.Now()
	var l arrivalLog
	jobs := map[api.JobID]*api.JobInfo{}
	for i := 0; i < maxArrivals+10; i++ {
		id := fmt.Sprint(i)
		jobs[api.JobID(id)] = arrivedAt(id, t0.Add(-time.Minute))
	}
	l.observe(t0, jobs, func(*api.JobInfo) (int, float64) { return 1, 1 })
	if len(l.list) != maxArrivals || len(l.seen) != maxArrivals {
		t.Errorf("%d logged, %d seen, want %d", len(l.list), len(l.seen), maxArrivals)
	}
}

// Sized by demand, the headroom keeps what the smaller jobs that arrived
// in the last SmallJobDemandWindow are predicted to keep busy (their GPUs
// x the run time their queue's history predicts, per second of the
// window), at most its share; with no history, its share.
func TestHeadroomSizedByPredictedDemand(t *testing.T) {
	// Jobs of one 2-GPU pod ran 10h: each arrival of the last 4h keeps
	// 2 x 10h / 4h = 5 GPUs busy.
	history := historyOf(t, 5, map[[2]int]time.Duration{{1, 2}: 10 * time.Hour})
	predicted := map[string]interface{}{ArgSmallJobHeadroom: 0.5, ArgSmallJobDemand: true}
	shareOnly := map[string]interface{}{ArgSmallJobHeadroom: 0.5}
	cases := []struct {
		name    string
		args    map[string]interface{}
		smalls  int           // running 2-GPU jobs, on n1
		arrived time.Duration // how long ago they arrived
		history string
		held    bool
		want    string // in the held gang's message
	}{
		// 32 GPUs, n0 full, 2 small jobs: 20 free, the gang leaves 12.
		{name: "smaller jobs arrived long ago: no demand, not held", args: predicted, smalls: 2, arrived: 5 * time.Hour, history: history},
		{name: "the share alone holds it", args: shareOnly, smalls: 2, arrived: 5 * time.Hour, history: history, held: true, want: "fewer than the 16 (paddle.smallJobHeadroom 0.5) kept"},
		{name: "demand 10 below the 12 it leaves: not held", args: predicted, smalls: 2, arrived: time.Hour, history: history},
		// 3 small jobs: 18 free, the gang leaves 10; demand 15.
		{name: "demand 15 above the 10 it leaves: held", args: predicted, smalls: 3, arrived: time.Hour, history: history, held: true,
			want: "fewer than the 15 kept for smaller jobs (what those that arrived in the last 4h0m0s are predicted to keep busy, at most paddle.smallJobHeadroom 0.5)"},
		{name: "no history: the share", args: predicted, smalls: 2, arrived: time.Hour, held: true, want: "fewer than the 16 (paddle.smallJobHeadroom 0.5) kept"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			c := cluster{nodes: twoRacks()}
			c.pods = append(c.pods, filler("running-0", "n0", "1", 8),
				paddlePod("gang", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
			c.groups = []*schedulingv1.PodGroup{group("gang", 1, now.Add(-3*time.Hour)), group("fillers", 0, now.Add(-24*time.Hour))}
			for i := 0; i < tc.smalls; i++ {
				name := fmt.Sprintf("small%d", i)
				c.pods = append(c.pods, paddlePod(name, "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "n1", "1", 2))
				c.groups = append(c.groups, group(name, 1, now.Add(-tc.arrived)))
			}
			if tc.history != "" {
				c.queueAnnotations = map[string]map[string]string{"default": {paddleapi.RunTimeHistoryAnnotation: tc.history}}
			}
			tiers, cfgs := paddleTiers(t)
			r := allocateOnce(t, WithArgs(tiers, tc.args), cfgs, c, nil)
			_, placed := r.placed["gang-trainer-0"]
			if placed == tc.held {
				t.Fatalf("gang placed = %t, want %t", placed, !tc.held)
			}
			if msg := jobByName(t, r, "gang").JobFitErrors; tc.held && !strings.Contains(msg, tc.want) {
				t.Errorf("fit errors %q lack %q", msg, tc.want)
			}
		})
	}
}
