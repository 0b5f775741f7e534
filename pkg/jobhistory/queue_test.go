package jobhistory

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// A predictor built from the queues' encoded histories predicts what the
// predictor that observed the jobs predicts, for keys of every level.
func TestQueueHistoryRoundTrip(t *testing.T) {
	seen := NewPredictor()
	for i := 0; i < 300; i++ {
		r := aRecord().in([]string{"a", "b", "c"}[i%3]).shape(1+i%3, []int{1, 4, 8}[i%2]).took(time.Duration(60+i*17%5000) * time.Second).obj()
		if i%5 == 0 {
			r.Namespace = "other"
		}
		seen.Observe(FeaturesOf(r), h0.Add(time.Duration(i)*time.Hour), r.Duration)
	}
	now := h0.Add(301 * time.Hour)
	built := NewPredictor()
	for _, q := range []string{"a", "b", "c"} {
		data, err := seen.EncodeQueue(q, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := built.AddQueue(q, data); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []Features{
		FeaturesOf(aRecord().in("a").shape(1, 1).obj()),
		FeaturesOf(aRecord().in("b").shape(2, 8).obj()),
		{Namespace: "x", Queue: "c", Pods: 3, GPUsPerPod: 8, GPUs: 24},
		{Namespace: "x", Queue: "new", Pods: 3, GPUsPerPod: 8, GPUs: 24},
		{Namespace: "x", Queue: "new", Pods: 64, GPUsPerPod: 8, GPUs: 512},
	} {
		want, wok := seen.Predict(f, now)
		got, gok := built.Predict(f, now)
		if wok != gok || want.Level != got.Level || !near(got.Median, want.Median) || !near(got.Mean, want.Mean) {
			t.Errorf("%+v: built %+v, observed %+v", f, got, want)
		}
	}
}

// What is not a queue's history is refused whole, saying what is wrong,
// and the predictor keeps what it had.
func TestAddQueueRefusesBadHistory(t *testing.T) {
	p := NewPredictor()
	good, _ := func() ([]byte, error) {
		q := NewPredictor()
		q.Observe(FeaturesOf(aRecord().in("a").obj()), h0, time.Hour)
		return q.EncodeQueue("a", h0)
	}()
	if err := p.AddQueue("a", good); err != nil {
		t.Fatal(err)
	}
	before, _ := p.Predict(FeaturesOf(aRecord().in("a").obj()), h0)
	many := `{"format":1,"levels":{"namespace-size":{`
	for i := 0; i <= MaxQueueKeys; i++ {
		if i > 0 {
			many += ","
		}
		many += fmt.Sprintf(`"ns/%d":[1,1,1,0]`, i+1)
	}
	many += "}}}"
	for _, c := range []struct{ name, data, says string }{
		{"not JSON", "{", "unexpected end"},
		{"another format", `{"format":2}`, "format 2"},
		{"a bad key", `{"format":1,"levels":{"shape":{"ns-only":[1,1,1,0]}}}`, `key "ns-only"`},
		{"a size that is no number", `{"format":1,"levels":{"namespace-size":{"ns/eight":[1,1,1,0]}}}`, "namespace/GPUS"},
		{"an unknown level", `{"format":1,"levels":{"size":{"8":[1,1,1,0]}}}`, `level "size"`},
		{"a weight of 0", `{"format":1,"levels":{"namespace-size":{"ns/8":[0,1,1,0]}}}`, "not a history"},
		{"too many keys", many, fmt.Sprintf("at most %d", MaxQueueKeys)},
	} {
		err := p.AddQueue("a", []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "queue a") {
			t.Errorf("%s: %v, want it to say %q and name the queue", c.name, err, c.says)
		}
	}
	if after, _ := p.Predict(FeaturesOf(aRecord().in("a").obj()), h0); after != before {
		t.Errorf("a refused history changed the prediction: %+v then %+v", before, after)
	}
}

// A queue's encoding holds at most MaxQueueKeys keys, the most recent.
func TestEncodeQueueBounded(t *testing.T) {
	p := NewPredictor()
	p.MaxKeys = 4 * MaxQueueKeys
	for i := 0; i < 2*MaxQueueKeys; i++ {
		p.Observe(FeaturesOf(aRecord().in("a").shape(1+i, 1).obj()), h0.Add(time.Duration(i)*time.Second), time.Hour)
	}
	data, err := p.EncodeQueue("a", h0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	q := NewPredictor()
	if err := q.AddQueue("a", data); err != nil {
		t.Fatal(err)
	}
	if n := q.Keys()[LevelShape] + q.Keys()[LevelNamespaceSize]; n != MaxQueueKeys || len(data) > 64<<10 {
		t.Errorf("%d keys in %d bytes", n, len(data))
	}
	// Kept: the shape keys of the newest half (and their namespace-size
	// keys hold the other half of the bound); dropped: the oldest.
	for _, i := range []int{0, 1, 9, 99, MaxQueueKeys - 1} {
		if pr, _ := q.Predict(FeaturesOf(aRecord().in("a").shape(1+i, 1).obj()), h0.Add(time.Hour)); pr.Level == LevelShape {
			t.Errorf("old key %d was kept: %+v", i, pr)
		}
	}
	for _, i := range []int{3*MaxQueueKeys/2 + 1, 2*MaxQueueKeys - 10, 2*MaxQueueKeys - 1} {
		if pr, _ := q.Predict(FeaturesOf(aRecord().in("a").shape(1+i, 1).obj()), h0.Add(time.Hour)); pr.Level != LevelShape {
			t.Errorf("new key %d was dropped: %+v", i, pr)
		}
	}
}

// A history written as of another clock predicts, read on that clock,
// what it predicted on its own.
func TestAnnotationAsAnotherClock(t *testing.T) {
	h, _ := NewQueueHistory("a", "")
	for i := 0; i < 20; i++ {
		r := aRecord().in("a").shape(1, 1+i%2).took(time.Duration(1+i) * time.Hour).at(time.Duration(i) * 24 * time.Hour).obj()
		h.Record(fmt.Sprint(i), r)
	}
	simNow := h0.Add(30 * 24 * time.Hour)
	wall := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	own, _ := h.Annotation(simNow)
	other, _ := h.AnnotationAs(simNow, wall)
	p, q := NewPredictor(), NewPredictor()
	if err := p.AddQueue("a", []byte(own)); err != nil {
		t.Fatal(err)
	}
	if err := q.AddQueue("a", []byte(other)); err != nil {
		t.Fatal(err)
	}
	f := FeaturesOf(aRecord().in("a").shape(1, 2).obj())
	want, _ := p.Predict(f, simNow)
	got, _ := q.Predict(f, wall)
	if !near(got.Median, want.Median) || math.Abs(got.Weight-want.Weight) > 1e-3*want.Weight {
		t.Errorf("on the other clock %+v, on its own %+v", got, want)
	}
}

// A job is recorded once, whatever how often the controller sees it end,
// across writes and reads of the annotation; one that ended long before
// the newest is left out.
func TestQueueHistoryRecordsOnce(t *testing.T) {
	h, err := NewQueueHistory("a", "")
	if err != nil {
		t.Fatal(err)
	}
	job := aRecord().in("a").took(time.Hour).at(0).obj()
	if !h.Record("uid-1", job) || h.Record("uid-1", job) {
		t.Fatal("the first sight of a job is recorded, the second not")
	}
	later := aRecord().in("a").took(time.Hour).at(3 * time.Hour).obj()
	if !h.Record("uid-2", later) {
		t.Fatal("a later job is recorded")
	}
	ann, err := h.Annotation(later.End())
	if err != nil {
		t.Fatal(err)
	}
	back, err := NewQueueHistory("a", ann)
	if err != nil {
		t.Fatal(err)
	}
	if back.Record("uid-2", later) {
		t.Error("a job recorded before the annotation was written was recorded again")
	}
	// uid-1 ended 3 h before the newest: forgotten as recorded, and too
	// old to record again.
	if back.Record("uid-1", job) || back.Record("uid-3", job) {
		t.Error("a job that ended more than RecordSlack before the newest was recorded")
	}
	nearly := aRecord().in("a").took(time.Hour).at(3*time.Hour - RecordSlack/2).obj()
	// Takes says beforehand what Record would do.
	if back.Takes("uid-2", later.End()) || back.Takes("uid-3", job.End()) || !back.Takes("uid-4", nearly.End()) {
		t.Errorf("Takes(recorded, too old, within the slack) = %t, %t, %t; want false, false, true",
			back.Takes("uid-2", later.End()), back.Takes("uid-3", job.End()), back.Takes("uid-4", nearly.End()))
	}
	if !back.Record("uid-4", nearly) {
		t.Error("a job that ended within RecordSlack of the newest was not recorded")
	}
	p := NewPredictor()
	if err := p.AddQueue("a", []byte(ann)); err != nil {
		t.Fatal(err)
	}
	if pr, ok := p.Predict(FeaturesOf(job), later.End()); !ok || pr.Weight < 1.9 || !near(pr.Median, time.Hour) {
		t.Errorf("the queue's history predicts %+v", pr)
	}
	if _, err := NewQueueHistory("a", "{"); err == nil || !strings.Contains(err.Error(), "queue a") {
		t.Errorf("a damaged annotation: %v", err)
	}
}
