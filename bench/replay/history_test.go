package replay

import (
	"context"
	"fmt"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

// pastOf is a history before the window: n jobs of each GPU count, of
// their run time in seconds, all known before the window starts.
func pastOf(n int, runs map[int]float64) []PastJob {
	var out []PastJob
	for gpus, d := range runs {
		for i := 0; i < n; i++ {
			submitted := -7*86400 + float64(i)*3600
			out = append(out, PastJob{Known: submitted + d, Job: quality.TraceJob{GPUs: gpus, Duration: d, Submitted: 1.5e9 + submitted}})
		}
	}
	return out
}

// A paddle configuration ordering by predicted run time starts, when the
// node frees up, the 8-GPU gang whose like ran for minutes before the
// 4-GPU gang whose like ran for hours, which fewest-GPUs-first would
// start; and its decisions do not change when the waiting jobs' own run
// times are swapped: it never sees them before they end. With the enqueue
// action the two wait Pending, without pods, and the order decides which
// the enqueue action admits into the room the running job leaves
// (admissionOrder); without it, which allocate places.
func TestReplayPredictsFromHistory(t *testing.T) {
	models := testModels(t)
	for _, enqueue := range []bool{true, false} {
		ours := paddleConfig(t)
		if !enqueue {
			ours = withoutEnqueue(ours)
		}
		plain := WithPaddleArgs(ours, "paddle-by-gpus", "", map[string]interface{}{paddle.ArgShortestPredictedFirst: false})
		predicted := WithPaddleArgs(ours, "paddle-predicted", "", map[string]interface{}{paddle.ArgShortestPredictedFirst: true})
		if !usesHistory(predicted) || usesHistory(plain) {
			t.Fatal("only the configuration that orders by prediction keeps the history")
		}
		t.Run(fmt.Sprintf("enqueue %t", enqueue), func(t *testing.T) { predictsFromHistory(t, models, plain, predicted) })
	}
}

func predictsFromHistory(t *testing.T, models map[string]quality.Model, plain, predicted Config) {
	build := func(fourGPUs, eightGPUs float64) *Workload {
		w := testWorkload(1, imagenetJob("running", 1, 8, 1000, 0), imagenetJob("four", 1, 4, fourGPUs, 10), imagenetJob("eight", 1, 8, eightGPUs, 20))
		w.History = pastOf(10, map[int]float64{4: 36000, 8: 100})
		w.Start0 = 1.5e9
		return w
	}
	starts := func(w *Workload, c Config) map[string]float64 {
		r, err := Simulate(context.Background(), w, models, BestSteps(w, models), c)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, j := range r.Jobs {
			out[j.Name] = j.Start
		}
		return out
	}
	w := build(3000, 2000)
	if got := starts(w, plain); got["four"] != 1000 || got["eight"] <= 1000 {
		t.Errorf("fewest GPUs first: %v, want four at 1000 and eight after it", got)
	}
	got := starts(w, predicted)
	if got["eight"] != 1000 || got["four"] <= 1000 {
		t.Errorf("by prediction: %v, want eight at 1000 and four after it", got)
	}
	swapped := starts(build(2000, 3000), predicted)
	if swapped["eight"] != got["eight"] || swapped["running"] != got["running"] {
		t.Errorf("with the waiting jobs' run times swapped the decisions changed: %v, then %v", got, swapped)
	}
}

// Sized by demand, paddle's headroom holds a whole-node gang while the
// smaller jobs that arrived in the last paddle.SmallJobDemandWindow are
// predicted to need the room, and lets it start in the cycle the replay
// runs when the last such arrival leaves the window; the fixed share
// holds it until its starvation threshold.
func TestReplayHeadroomFollowsPredictedDemand(t *testing.T) {
	models := testModels(t)
	ours := paddleConfig(t)
	demand := WithPaddleArgs(ours, "paddle-demand", "", map[string]interface{}{paddle.ArgSmallJobDemand: true})
	// 40 GPUs; 32 busy until 100,000 s. The 1-GPU job leaves the last
	// node at 100 s; the history says 1-GPU jobs run 10 h: its arrival
	// keeps 1 x 10h / 4h = 2.5 GPUs busy, so the demand headroom keeps 3
	// until 4h after it arrived; the share keeps 8 (0.2 of 40).
	w := testWorkload(5, imagenetJob("running", 4, 8, 100000, 0), imagenetJob("small", 1, 1, 100, 0), imagenetJob("eight", 1, 8, 1000, 10))
	w.History = pastOf(10, map[int]float64{1: 36000})
	w.Start0 = 1.5e9
	w.Timers = DeclaredTimers([]Config{ours, demand})
	start := func(c Config) float64 {
		r, err := Simulate(context.Background(), w, models, BestSteps(w, models), c)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range r.Jobs {
			if j.Name == "eight" {
				return j.Start
			}
		}
		t.Fatal("no job eight")
		return 0
	}
	window := paddle.SmallJobDemandWindow.Seconds()
	if got := start(demand); got != window {
		t.Errorf("sized by demand, the gang started at %g s, want %g (when the 1-GPU job's arrival left the window)", got, window)
	}
	// Its pods are created when the enqueue action admits it, at 100 s,
	// when the 1-GPU job has left room for it.
	if got, after := start(ours), starvationAfter(ours.Sched).Seconds(); got != 100+after {
		t.Errorf("with the fixed share, the gang started at %g s, want %g (its starvation threshold, from its admission)", got, 100+after)
	}
}
