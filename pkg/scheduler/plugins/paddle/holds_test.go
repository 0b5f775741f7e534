package paddle

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"volcano.sh/apis/pkg/apis/scheduling"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/api"

	tb "github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// withEvents makes the scheduler's plugin post its Job Events to a fake
// recorder, and returns it.
func withEvents(s *scheduler) *record.FakeRecorder {
	rec := record.NewFakeRecorder(16)
	s.store.events.rec = rec
	return rec
}

// drained are the events the recorder holds now, in order.
func drained(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// heldOf is the held condition of the session's PodGroup of job, after the
// session closed (nil: none).
func heldOf(t *testing.T, r result, job string) *scheduling.PodGroupCondition {
	t.Helper()
	r.close()
	return heldCondition(jobByName(t, r, job).PodGroup)
}

// carried is a condition as the next session reads it from the PodGroup.
func carried(c *scheduling.PodGroupCondition) schedulingv1.PodGroupCondition {
	return schedulingv1.PodGroupCondition{Type: schedulingv1.PodGroupConditionType(c.Type), Status: c.Status, Reason: c.Reason, Message: c.Message,
		TransitionID: c.TransitionID, LastTransitionTime: c.LastTransitionTime}
}

// A gang the headroom holds carries the held condition from the session
// that held it, with the headroom's reason and the same message as its
// fit errors, and its Volcano Job gets one Event. A later session that
// holds it again changes neither the condition's transition time nor posts
// an Event; once the gang starts (its bound has passed) the condition turns
// False and one more Event says so. A job never held gets no condition.
func TestHeadroomHoldIsExplained(t *testing.T) {
	t0 := time.Now().Truncate(time.Second)
	s := newScheduler()
	rec := withEvents(s)
	tiers, cfgs := paddleTiers(t)
	tiers = WithArgs(tiers, map[string]interface{}{ArgSmallJobHeadroom: 0.5})
	created := t0.Add(-3 * time.Hour)
	// 4 nodes, 32 GPUs, 20 free: an 8-GPU gang would leave 12, fewer than
	// the 16 the headroom keeps.
	sessionAt := func(at time.Time, conds ...schedulingv1.PodGroupCondition) result {
		s.at = at
		g := tb.MakePodGroup().Name("gang").Namespace("ns").MinMember(1).Created(created).OwnedByJob("gang")
		for _, c := range conds {
			g.Condition(c)
		}
		c := cluster{nodes: twoRacks(), groups: []*schedulingv1.PodGroup{g.Obj(), group("fillers", 0, created)}}
		c.pods = append(c.pods, filler("running-0", "n0", "1", 8), filler("running-1", "n1", "1", 4),
			paddlePod("gang", "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 8))
		return allocateOnce(t, tiers, cfgs, c, s)
	}

	r := sessionAt(t0)
	if _, placed := r.placed["gang-trainer-0"]; placed {
		t.Fatal("the headroom did not hold the gang")
	}
	fitErrors := jobByName(t, r, "gang").JobFitErrors
	first := heldOf(t, r, "gang")
	if first == nil || first.Status != v1.ConditionTrue || first.Reason != ReasonHeldForHeadroom || first.Message != fitErrors {
		t.Fatalf("held condition %+v, want True, %s, the fit errors %q", first, ReasonHeldForHeadroom, fitErrors)
	}
	if !first.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("transition at %s, want the session's clock %s", first.LastTransitionTime, t0)
	}
	if c := heldCondition(jobByName(t, r, "fillers").PodGroup); c != nil {
		t.Errorf("a job never held has a held condition: %+v", c)
	}
	wantEvent := "Normal " + ReasonHeldForHeadroom + " " + fitErrors
	if got := drained(rec); len(got) != 1 || got[0] != wantEvent {
		t.Errorf("events %q, want [%q]", got, wantEvent)
	}

	// Held again a minute later: same condition, same transition, no Event.
	r = sessionAt(t0.Add(time.Minute), carried(first))
	again := heldOf(t, r, "gang")
	if again == nil || again.Status != v1.ConditionTrue || again.Message != first.Message || !again.LastTransitionTime.Equal(&first.LastTransitionTime) {
		t.Errorf("held again: %+v, want %+v", again, first)
	}
	if got := drained(rec); len(got) != 0 {
		t.Errorf("events %q for a hold already explained", got)
	}

	// Held before for another reason: the hold goes on (same transition
	// time), its reason changes, and the Job hears of it.
	other := carried(again)
	other.Reason, other.Message = ReasonReservedForStarvingGang, "reserved"
	r = sessionAt(t0.Add(2*time.Minute), other)
	switched := heldOf(t, r, "gang")
	if switched == nil || switched.Reason != ReasonHeldForHeadroom || !switched.LastTransitionTime.Equal(&first.LastTransitionTime) {
		t.Errorf("held for another reason: %+v, want %s since %s", switched, ReasonHeldForHeadroom, first.LastTransitionTime)
	}
	if got := drained(rec); len(got) != 1 || !strings.HasPrefix(got[0], "Normal "+ReasonHeldForHeadroom+" ") {
		t.Errorf("events %q, want one %s for the new reason", got, ReasonHeldForHeadroom)
	}

	// Past the bound (paddle.starvationAfter, 16h): the gang starts.
	end := created.Add(17 * time.Hour)
	r = sessionAt(end, carried(again))
	if _, placed := r.placed["gang-trainer-0"]; !placed {
		t.Fatal("the starving gang did not start")
	}
	released := heldOf(t, r, "gang")
	if released == nil || released.Status != v1.ConditionFalse || released.Reason != ReasonNotHeld || !released.LastTransitionTime.Time.Equal(end) {
		t.Errorf("after the start: %+v, want False, %s, at %s", released, ReasonNotHeld, end)
	}
	if got := drained(rec); len(got) != 1 || !strings.HasPrefix(got[0], "Normal "+ReasonNotHeld+" ") {
		t.Errorf("events %q, want one %s", got, ReasonNotHeld)
	}
}

// A gang kept off the nodes a starving gang reserved, although they have
// room for it, carries the held condition naming that gang; the job that
// found room elsewhere, and the starving gang itself (it does not fit),
// carry none. In a session whose actions never try its pods (the allocate
// action skips a queue over its share, say), the hold stands while the
// reservation does: no condition flips, no Event.
func TestReservationHoldIsExplained(t *testing.T) {
	t0 := time.Now()
	s := newScheduler()
	s.at = t0
	rec := withEvents(s)
	// n0 and n1 each run a 4-GPU pod; n1's started last, so the starving
	// 8-GPU gang reserves n1. Two 4-GPU jobs: one starts on n0, the other
	// fits only on n1.
	c := wholeNodeGang(t0.Add(-starvingAge),
		startedAt(filler("a", "n0", "1", 4), t0.Add(-5*time.Hour)), startedAt(filler("b", "n1", "1", 4), t0.Add(-10*time.Minute)))
	for _, name := range []string{"small-1", "small-2"} {
		c.pods = append(c.pods, paddlePod(name, "trainer", 0, paddleapi.RoleTrainer, paddleapi.ModeCollective, "", "1", 4))
		c.groups = append(c.groups, tb.MakePodGroup().Name(name).Namespace("ns").MinMember(1).Created(t0).OwnedByJob(name).Obj())
	}
	tiers, cfgs := paddleTiers(t)
	r := allocateOnce(t, tiers, cfgs, c, s)
	r.close()
	var heldJob string
	var heldCond *scheduling.PodGroupCondition
	for _, name := range []string{"small-1", "small-2"} {
		_, placed := r.placed[name+"-trainer-0"]
		cond := heldCondition(jobByName(t, r, name).PodGroup)
		switch {
		case placed && cond != nil:
			t.Errorf("%s started and has a held condition %+v", name, cond)
		case !placed && (cond == nil || cond.Status != v1.ConditionTrue || cond.Reason != ReasonReservedForStarvingGang || !strings.Contains(cond.Message, "starving gang ns/big")):
			t.Errorf("%s waits with held condition %+v, want True, %s, naming ns/big", name, cond, ReasonReservedForStarvingGang)
		case !placed:
			heldJob, heldCond = name, cond
		}
	}
	if heldJob == "" {
		t.Fatalf("no small job was kept off the reservation: placed %v", r.placed)
	}
	if cond := heldCondition(jobByName(t, r, "big").PodGroup); cond != nil {
		t.Errorf("the starving gang, which does not fit, has a held condition %+v", cond)
	}
	if got := drained(rec); len(got) != 1 || !strings.HasPrefix(got[0], "Normal "+ReasonReservedForStarvingGang+" ") {
		t.Errorf("events %q, want one %s for %s", got, ReasonReservedForStarvingGang, heldJob)
	}

	// The next session runs no action: nothing tries the held gang's pods.
	s.at = t0.Add(time.Second)
	for k, g := range c.groups {
		if g.Name == heldJob {
			c.groups[k] = tb.MakePodGroup().Name(heldJob).Namespace("ns").MinMember(1).Created(t0).OwnedByJob(heldJob).Condition(carried(heldCond)).Obj()
		}
	}
	r = runSession(t, tiers, cfgs, c, s)
	again := heldOf(t, r, heldJob)
	if again == nil || again.Status != v1.ConditionTrue || again.Message != heldCond.Message || !again.LastTransitionTime.Equal(&heldCond.LastTransitionTime) {
		t.Errorf("in a session without actions the hold became %+v, want %+v", again, heldCond)
	}
	if got := drained(rec); len(got) != 0 {
		t.Errorf("events %q in a session that changed nothing", got)
	}
}

// Events are posted only where the scheduler's main asked for them and a
// client exists; the condition does not depend on them.
func TestJobEventsNeedAClientAndConsent(t *testing.T) {
	kube := fake.NewClientset()
	var off jobEvents
	if off.recorder(kube) != nil {
		t.Error("a recorder without PostJobEvents")
	}
	noClient := jobEvents{on: true}
	if noClient.recorder(nil) != nil {
		t.Error("a recorder without a client")
	}
	on := jobEvents{on: true}
	if on.recorder(kube) == nil {
		t.Error("no recorder with PostJobEvents and a client")
	}
	ref := volcanoJobOf(&api.PodGroup{PodGroup: scheduling.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "other", Controller: ptr.To(true)}}}}})
	if ref != nil {
		t.Errorf("a PodGroup no Volcano Job controls names one: %+v", ref)
	}
}
