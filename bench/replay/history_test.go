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

// A gang the enqueue action admits after it arrived waits from its
// admission, when its pods are created (paddle's waitingSince), and the
// replay runs a cycle when it has waited paddle's starvation threshold
// from then: the headroom, which holds it while nothing else frees GPUs,
// lets it start exactly at its bound.
func TestReplayStarvationTimerFromAdmission(t *testing.T) {
	models := testModels(t)
	// Holding every whole-node gang: once the 100 s job has ended the
	// history would predict the gang short, and deploy/paddle's
	// predictedAbove would let it go.
	ours := WithPaddleArgs(paddleConfig(t), "paddle-holdall", "paddle holding every whole-node gang", map[string]interface{}{paddle.ArgHeadroomPredictedAbove: 0})
	// 40 GPUs; 32 busy until 100,000 s. The 1-GPU job leaves the last
	// node at 100 s, when the enqueue action admits the 8-GPU gang; the
	// headroom (0.2 of 40: 8 GPUs) holds it from then.
	w := testWorkload(5, imagenetJob("running", 4, 8, 100000, 0), imagenetJob("small", 1, 1, 100, 0), imagenetJob("eight", 1, 8, 1000, 10))
	w.Timers = DeclaredTimers([]Config{ours})
	r, err := Simulate(context.Background(), w, models, BestSteps(w, models), ours)
	if err != nil {
		t.Fatal(err)
	}
	after := starvationAfter(ours.Sched).Seconds()
	for _, j := range r.Jobs {
		if j.Name == "eight" && (j.Admitted != 100 || j.Start != 100+after) {
			t.Errorf("the gang was admitted at %g s and started at %g s, want 100 and %g (its threshold from its admission)", j.Admitted, j.Start, 100+after)
		}
	}
}
