package paddle

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"volcano.sh/apis/pkg/apis/scheduling"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/api"

	tb "github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// historyOf is queue default's history after n jobs of each shape ran
// for their run time, ending over the last days.
func historyOf(t *testing.T, n int, runs map[[2]int]time.Duration) string {
	t.Helper()
	h, err := jobhistory.NewQueueHistory("default", "")
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(-48 * time.Hour)
	k := 0
	for shape, d := range runs {
		for i := 0; i < n; i++ {
			k++
			r := jobhistory.Record{SubmitTime: end.Add(-d - time.Minute), Start: end.Add(-d), Duration: d, Pods: shape[0], GPUsPerPod: shape[1],
				MinPods: shape[0], MaxPods: shape[0], Queue: "default", Namespace: "ns", Mode: jobhistory.ModeCollective}
			if !h.Record(fmt.Sprint(k), r) {
				t.Fatalf("job %d not recorded", k)
			}
			end = end.Add(time.Minute)
		}
	}
	ann, err := h.Annotation(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return ann
}

// With shortestPredictedFirst, two guarded gangs go in the order of the
// GPU-time their queue's history predicts (the larger gang, whose jobs
// ran for minutes, before the smaller, whose jobs ran for hours); by GPUs
// without it, without history, with a history that says nothing of
// them, or one that cannot be read.
func TestJobOrderShortestPredictedFirst(t *testing.T) {
	known := historyOf(t, 5, map[[2]int]time.Duration{{2, 8}: 10 * time.Minute, {1, 2}: 10 * time.Hour})
	on := map[string]interface{}{ArgShortestPredictedFirst: true}
	for _, tc := range []struct {
		name       string
		args       map[string]interface{}
		history    string
		smallFirst bool
	}{
		{"least predicted GPU-time first", on, known, false},
		{"off: fewest GPUs first", map[string]interface{}{ArgShortestPredictedFirst: false}, known, true},
		{"no history: fewest GPUs first", on, "", true},
		{"a history that cannot be read: fewest GPUs first", on, "{not json", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster{nodes: oneRack(3)}
			for i := 0; i < 2; i++ {
				c.pods = append(c.pods, paddlePod("big", "trainer", i, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
			}
			c.pods = append(c.pods, paddlePod("small", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 2))
			c.groups = []*schedulingv1.PodGroup{group("big", 2, time.Now().Add(-10*time.Minute)), group("small", 1, time.Now())}
			if tc.history != "" {
				c.queueAnnotations = map[string]map[string]string{"default": {paddleapi.RunTimeHistoryAnnotation: tc.history}}
			}
			tiers, cfgs := paddleTiers(t)
			r := openSession(t, WithArgs(tiers, tc.args), cfgs, c)
			small, big := jobByName(t, r, "small"), jobByName(t, r, "big")
			if got := r.ssn.JobOrderFn(small, big); got != tc.smallFirst {
				t.Errorf("small before big = %t, want %t", got, tc.smallFirst)
			}
			if got := r.ssn.JobOrderFn(big, small); got != !tc.smallFirst {
				t.Errorf("big before small = %t, want %t", got, !tc.smallFirst)
			}
		})
	}
}

// The store builds the predictor once per change of the queues'
// histories, not once per session.
func TestHistoryPredictorCached(t *testing.T) {
	ann := historyOf(t, 3, map[[2]int]time.Duration{{1, 8}: time.Hour})
	st := NewStore(time.Now)
	q := map[string]string{paddleapi.RunTimeHistoryAnnotation: ann}
	queues := queueInfos(map[string]map[string]string{"default": q, "other": nil})
	p1 := st.predictor(queues)
	if p1 == nil || st.predictor(queueInfos(map[string]map[string]string{"default": q, "other": nil})) != p1 {
		t.Fatal("the same histories built a new predictor")
	}
	changed := historyOf(t, 4, map[[2]int]time.Duration{{1, 8}: time.Hour})
	if p2 := st.predictor(queueInfos(map[string]map[string]string{"default": {paddleapi.RunTimeHistoryAnnotation: changed}})); p2 == nil || p2 == p1 {
		t.Error("a changed history kept the old predictor")
	}
	if st.predictor(queueInfos(map[string]map[string]string{"default": nil})) != nil {
		t.Error("no history, yet a predictor")
	}
}

// queueInfos are the session's queues of those names and annotations.
func queueInfos(anns map[string]map[string]string) map[api.QueueID]*api.QueueInfo {
	out := map[api.QueueID]*api.QueueInfo{}
	for name, a := range anns {
		q := &scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: a}}
		out[api.QueueID(name)] = api.NewQueueInfo(q)
	}
	return out
}

// Two Paddle gangs the enqueue action has not admitted (Pending, no pods,
// the mode label on their PodGroups) go, with shortestPredictedFirst, in
// the order of their predicted GPU-time; one that has waited
// paddle.starvationAfter first; without the label or the argument, no
// opinion: Volcano's order (creation time) decides.
func TestAdmissionOrder(t *testing.T) {
	known := historyOf(t, 5, map[[2]int]time.Duration{{2, 8}: 10 * time.Minute, {1, 2}: 10 * time.Hour})
	paddleLabel := map[string]string{paddleapi.ModeLabel: string(paddleapi.ModeCollective)}
	on := map[string]interface{}{ArgShortestPredictedFirst: true}
	for _, tc := range []struct {
		name     string
		args     map[string]interface{}
		labels   map[string]string
		smallAge time.Duration
		want     int // JobOrderFn(small, big): 1 small first, -1 big first
	}{
		// small is older than big: Volcano's order puts it first.
		{"least predicted GPU-time first", on, paddleLabel, 3 * time.Minute, -1},
		{"a starving gang first", on, paddleLabel, starvingAge, 1},
		{"off: Volcano's order", map[string]interface{}{ArgShortestPredictedFirst: false}, paddleLabel, 3 * time.Minute, 1},
		{"not labelled Paddle: Volcano's order", on, nil, 3 * time.Minute, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster{nodes: oneRack(3), queueAnnotations: map[string]map[string]string{"default": {paddleapi.RunTimeHistoryAnnotation: known}}}
			now := time.Now()
			c.groups = []*schedulingv1.PodGroup{
				tb.MakePodGroup().Name("big").Namespace("ns").MinMember(2).Created(now.Add(-2*time.Minute)).Pending(16, tc.labels).Obj(),
				tb.MakePodGroup().Name("small").Namespace("ns").MinMember(1).Created(now.Add(-tc.smallAge)).Pending(2, tc.labels).Obj(),
			}
			tiers, cfgs := paddleTiers(t)
			r := openSession(t, WithArgs(tiers, tc.args), cfgs, c)
			small, big := jobByName(t, r, "small"), jobByName(t, r, "big")
			sb, bs := r.ssn.JobOrderFn(small, big), r.ssn.JobOrderFn(big, small)
			got := 0
			switch {
			case sb && !bs:
				got = 1
			case bs && !sb:
				got = -1
			}
			if got != tc.want {
				t.Errorf("small before big %t, big before small %t; want %d", sb, bs, tc.want)
			}
		})
	}
}
