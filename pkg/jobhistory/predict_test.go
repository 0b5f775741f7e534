package jobhistory

import (
	"math"
	"os"
	"testing"
	"time"
)

var h0 = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

func (b *recBuilder) in(queue string) *recBuilder { b.Queue, b.Namespace = queue, queue; return b }
func (b *recBuilder) at(d time.Duration) *recBuilder {
	b.SubmitTime = h0.Add(d)
	b.Start = b.SubmitTime
	return b
}

// near: got within 1% of want.
func near(got, want time.Duration) bool {
	return math.Abs(got.Seconds()-want.Seconds()) <= 0.01*want.Seconds()
}

// With nothing seen there is no prediction, and a scheduler keeps to its
// order without history.
func TestPredictWithoutHistory(t *testing.T) {
	if pr, ok := NewPredictor().Predict(FeaturesOf(aRecord().obj()), h0); ok {
		t.Fatalf("predicted %+v from nothing", pr)
	}
}

// A key seen often decides its jobs' prediction; a key never seen gets
// the nearest level that has seen jobs like it; a key seen once is pulled
// towards the levels above it.
func TestPredictByLevel(t *testing.T) {
	p := NewPredictor()
	for i := 0; i < 50; i++ {
		a := aRecord().in("a").shape(1, 8).took(100 * time.Second).obj()
		b := aRecord().in("b").shape(1, 8).took(10000 * time.Second).obj()
		p.Observe(FeaturesOf(a), h0, a.Duration)
		p.Observe(FeaturesOf(b), h0, b.Duration)
	}
	once := aRecord().in("c").shape(4, 8).took(time.Second).obj()
	p.Observe(FeaturesOf(once), h0, once.Duration)

	for _, c := range []struct {
		name  string
		f     Features
		level string
		lo    time.Duration
		hi    time.Duration
	}{
		{"seen often", FeaturesOf(aRecord().in("a").shape(1, 8).obj()), LevelShape, 99 * time.Second, 101 * time.Second},
		// Queue b's 50 jobs of 10000 s against the prior of 2 at the size's
		// ~1000 s: exp((50 ln 10000 + 2 ln 1000) / 52), about 9150 s.
		{"same namespace, queue and size, other shape", Features{Namespace: "b", Queue: "b", GPUs: 8, Pods: 8, GPUsPerPod: 1}, LevelNamespaceSize, 9000 * time.Second, 9300 * time.Second},
		// The 8-GPU jobs' geometric mean, 1000 s, pulled a little towards
		// every job's (the 1 s job's too).
		{"unseen queue, seen size", Features{Queue: "z", GPUs: 8, Pods: 1, GPUsPerPod: 8}, LevelSize, 990 * time.Second, 1001 * time.Second},
		// 32 GPUs, seen once at 1 s: shrunk towards the 1000 s of all jobs
		// by the prior of 2 observations against 1.
		{"seen once", FeaturesOf(once), LevelShape, 2 * time.Second, 500 * time.Second},
	} {
		pr, ok := p.Predict(c.f, h0)
		if !ok || pr.Level != c.level || pr.Median < c.lo || pr.Median > c.hi {
			t.Errorf("%s: %+v (ok %v), want level %s and median in [%s, %s]", c.name, pr, ok, c.level, c.lo, c.hi)
		}
		if pr.Mean < pr.Median {
			t.Errorf("%s: mean %s below median %s", c.name, pr.Mean, pr.Median)
		}
	}
}

// Old jobs weigh less: a week-old observation weighs half a new one.
func TestPredictForgetsSlowly(t *testing.T) {
	p := NewPredictor()
	f := FeaturesOf(aRecord().obj())
	p.Observe(f, h0, 100*time.Second)
	p.Observe(f, h0.Add(DefaultHalfLife), 400*time.Second)
	pr, _ := p.Predict(f, h0.Add(DefaultHalfLife))
	// Weights 0.5 and 1 on ln 100 and ln 400: exp((0.5 ln 100 + ln 400) / 1.5).
	want := time.Duration(math.Exp((0.5*math.Log(100)+math.Log(400))/1.5) * float64(time.Second))
	if !near(pr.Median, want) || !near(time.Duration(pr.Weight*float64(time.Hour)), time.Duration(1.5*float64(time.Hour))) {
		t.Errorf("median %s weight %.3f, want %s and 1.5", pr.Median, pr.Weight, want)
	}
}

// Its memory is bounded whatever it sees: past MaxKeys a level forgets
// its least recently observed keys, and still predicts.
func TestPredictorBounded(t *testing.T) {
	p := NewPredictor()
	p.MaxKeys = 16
	for i := 0; i < 1000; i++ {
		r := aRecord().in("q"+string(rune('a'+i%26))).shape(1+i, 1).obj()
		p.Observe(FeaturesOf(r), h0.Add(time.Duration(i)*time.Minute), time.Hour)
	}
	for l, n := range p.Keys() {
		if n > 16 {
			t.Errorf("level %s holds %d keys, bound 16", l, n)
		}
	}
	last := aRecord().in("q"+string(rune('a'+999%26))).shape(1000, 1).obj()
	if pr, ok := p.Predict(FeaturesOf(last), h0.Add(1000*time.Minute)); !ok || pr.Level != LevelShape || !near(pr.Median, time.Hour) {
		t.Errorf("the newest key: %+v %v", pr, ok)
	}
}

// Run times set by the queue: the predictor learns them after the first
// jobs of each queue end, the global mean cannot, and ordering by the
// predicted GPU-time ranks the jobs as they ran.
func TestEvaluateKnownAnswer(t *testing.T) {
	var rs []Record
	for i := 0; i < 200; i++ {
		q, d := "short", 100*time.Second
		if i%2 == 1 {
			q, d = "long", 10000*time.Second
		}
		rs = append(rs, aRecord().in(q).shape(1, 1).took(d).at(time.Duration(i)*time.Hour).obj())
	}
	ev := Evaluate(rs, h0.Add(100*time.Hour), h0.Add(200*time.Hour))
	if ev.Jobs != 100 || ev.Unpredicted != 0 {
		t.Fatalf("jobs %d unpredicted %d", ev.Jobs, ev.Unpredicted)
	}
	// Two groups of tied GPU-times, each predicted below every job of
	// the other group: Spearman's correlation of a half-and-half split
	// with a ranking that separates it is sqrt(3)/2, its most.
	if ev.Predictor.MeanAbsLog > 0.01 || ev.Predictor.WithinFactor2 != 1 || ev.Predictor.RankCorrelation < math.Sqrt(3)/2-1e-3 {
		t.Errorf("predictor %+v", ev.Predictor)
	}
	// The baseline's mean of 100 s and 10000 s jobs, ~5050 s, is a factor
	// of 50 off the short jobs and 2 off the long: ln 50.5/2 + ln 1.98/2.
	if ev.Baseline.MeanAbsLog < 2 || ev.Baseline.RankCorrelation > 0.5 {
		t.Errorf("baseline %+v", ev.Baseline)
	}
	if ev.Answered[LevelShape] != 100 {
		t.Errorf("answered %v", ev.Answered)
	}
	if a := ev.ByLevels[LevelSize]; a.MeanAbsLog < 2 {
		t.Errorf("size alone cannot tell the queues apart, yet %+v", a)
	}
}

// Split sorts the jobs of a size by predicted run time at a threshold,
// against how long they ran: 8-GPU jobs of queue short run 100 s, of queue
// long 10,000 s, 1-GPU jobs are left out; with a queue whose 8-GPU jobs
// alternate between the two, half of them are predicted wrongly.
func TestEvaluateSplit(t *testing.T) {
	var rs []Record
	for i := 0; i < 300; i++ {
		q, d, gpus := "short", 100*time.Second, 8
		switch i % 3 {
		case 1:
			q, d = "long", 10000*time.Second
		case 2:
			q, gpus = "mixed", 1
		}
		rs = append(rs, aRecord().in(q).shape(1, gpus).took(d).at(time.Duration(i)*time.Hour).obj())
	}
	ev := Evaluate(rs, h0.Add(150*time.Hour), h0.Add(300*time.Hour))
	got := ev.Split(8, time.Hour)
	want := Split{Jobs: 100, PredictedShort: 50, PredictedLong: 50}
	if got != want {
		t.Errorf("split %+v, want %+v", got, want)
	}
	// A threshold above every run time: all predicted short, the long
	// half did not run that long either.
	if got := ev.Split(8, 100*time.Hour); got.PredictedShort != 100 || got.PredictedShortRanLong != 0 {
		t.Errorf("split at 100 h %+v", got)
	}
	// Queue mixed: its 8-GPU jobs alternate 100 s and 10,000 s; the
	// predicted median is near their geometric mean, 1,000 s, so at
	// 2,000 s every job is predicted short and the long half wrongly.
	var mixed []Record
	for i := 0; i < 200; i++ {
		d := 100 * time.Second
		if i%2 == 1 {
			d = 10000 * time.Second
		}
		mixed = append(mixed, aRecord().in("mixed").shape(1, 8).took(d).at(time.Duration(i)*time.Hour).obj())
	}
	m := Evaluate(mixed, h0.Add(100*time.Hour), h0.Add(200*time.Hour)).Split(8, 2000*time.Second)
	if want := (Split{Jobs: 100, PredictedShort: 100, PredictedShortRanLong: 50}); m != want {
		t.Errorf("mixed split %+v, want %+v", m, want)
	}
}

// A job is predicted only from jobs known before it was submitted: its
// own run time, and the run time of any job that ends after its
// submission, change nothing of what was predicted for it.
func TestEvaluateNeverSeesTheFuture(t *testing.T) {
	var rs []Record
	for i := 0; i < 60; i++ {
		rs = append(rs, aRecord().in([]string{"a", "b", "c"}[i%3]).shape(1+i%4, 2).took(time.Duration(30+i*i)*time.Minute).at(time.Duration(i)*time.Hour).obj())
	}
	from, to := h0.Add(20*time.Hour), h0.Add(60*time.Hour)
	base, _ := predictAll(rs, from, to)
	for k, g := range base {
		changed := append([]Record(nil), rs...)
		sub := rs[g.record].SubmitTime
		// Every job still running at k's submission takes another run
		// time, still ending after it.
		for i := range changed {
			if changed[i].SubmitTime.Before(sub.Add(time.Second)) && Known(changed[i]).After(sub) {
				changed[i].Duration += time.Duration(7+i) * time.Hour
			}
		}
		got, _ := predictAll(changed, from, to)
		if got[k].model != g.model || got[k].baseline != g.baseline {
			t.Fatalf("job %d: predicted %s and %s, then %s and %s with the future changed", g.record, g.model, g.baseline, got[k].model, got[k].baseline)
		}
	}
}

// The Philly trace: the predictor beats the global mean on the trace's
// last month (what a scheduler could know of each job at its submission).
func TestEvaluatePhilly(t *testing.T) {
	f, err := os.Open(phillyTrace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd, err := NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rd.All()
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, r := range rs {
		if r.SubmitTime.After(last) {
			last = r.SubmitTime
		}
	}
	ev := Evaluate(rs, last.Add(-30*24*time.Hour), last.Add(time.Second))
	t.Logf("Philly, last 30 days: %d jobs; predictor %+v; global mean %+v; by level %+v; answered %v", ev.Jobs, ev.Predictor, ev.Baseline, ev.ByLevels, ev.Answered)
	if ev.Jobs < 1000 || ev.Predictor.MeanAbsLog >= ev.Baseline.MeanAbsLog || ev.Predictor.RankCorrelation <= ev.Baseline.RankCorrelation {
		t.Errorf("the predictor does not beat the global mean: %+v against %+v", ev.Predictor, ev.Baseline)
	}
}
