package paddle

import (
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/apis/pkg/apis/scheduling"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// This file explains every hold: when the plugin keeps a gang from
// starting although it fits (the headroom holds it, or the free GPUs it
// fits on are reserved for a starving gang), its PodGroup carries the
// condition paddleapi.HeldCondition from the session that held it on, and
// an Event on its Volcano Job says the same once per hold. Volcano's own
// Unschedulable condition cannot carry it: the gang plugin rewrites that
// one for every gang that is not ready, in its OnSessionClose, and Volcano
// closes plugins in map order (framework.CloseSession), so which of the two
// writes last is chance.

// ReasonNotHeld is the held condition's reason once the plugin no longer
// holds the gang (it started, or the hold ended).
const ReasonNotHeld = "PaddleNotHeld"

// notHeldMessage is the held condition's message with ReasonNotHeld.
const notHeldMessage = "paddle no longer holds this gang back"

// eventComponent is the source of the Events the plugin posts: the
// scheduler's default name, which Volcano's own recorder reports for a
// scheduler of one name (pkg/util: GenerateComponentName).
const eventComponent = "volcano"

// hold is why the plugin keeps a gang from starting this session.
type hold struct {
	reason, message string
}

// holds are the session's holds by job, noted by the callbacks that hold
// (jobValidFn, reservationPredicate) and turned into conditions and Events
// when the session closes (explainHolds). Predicates run on many nodes at
// once, hence the lock.
type holds struct {
	mu sync.Mutex
	// byJob is the headroom's hold of a job; reservedFor the starving gangs
	// whose reservations kept a job's pods off nodes with room for them.
	byJob       map[api.JobID]hold
	reservedFor map[api.JobID]map[string]bool
}

func (h *holds) note(job api.JobID, reason, message string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byJob == nil {
		h.byJob = map[api.JobID]hold{}
	}
	h.byJob[job] = hold{reason: reason, message: message}
}

func (h *holds) keptOff(job api.JobID, gang string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reservedFor == nil {
		h.reservedFor = map[api.JobID]map[string]bool{}
	}
	if h.reservedFor[job] == nil {
		h.reservedFor[job] = map[string]bool{}
	}
	h.reservedFor[job][gang] = true
}

// of is the hold of a job this session, if any: the headroom's, else the
// reservations that kept it off nodes with room.
func (h *holds) of(job api.JobID) (hold, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if held, ok := h.byJob[job]; ok {
		return held, true
	}
	gangs := h.reservedFor[job]
	if len(gangs) == 0 {
		return hold{}, false
	}
	names := make([]string, 0, len(gangs))
	for g := range gangs {
		names = append(names, g)
	}
	return reservedHold(names), true
}

// reservedHold is the hold of a gang kept off the nodes the named
// starving gangs reserved.
func reservedHold(gangs []string) hold {
	sort.Strings(gangs)
	return hold{reason: ReasonReservedForStarvingGang, message: "paddle: this gang fits on free resources, but the nodes with room for it are reserved for starving gang " +
		strings.Join(gangs, ", ") + " (waiting longer than " + ArgStarvationAfter + "); it starts on other nodes as they free up, or on those once that gang has started"}
}

// stillReserved is the hold of a waiting gang that an earlier session
// kept off reserved nodes and that no predicate kept off this session: the
// allocate action tries only the jobs it reaches (none of a queue over its
// share, say), so a gang it skipped would otherwise lose its condition,
// and its Job get an Event, every time it is skipped. The hold stands
// while a reservation it must leave alone does and it still fits on free
// resources. The headroom needs no such thing: Volcano asks every job's
// JobValidFn when a session opens (framework.OpenSession:
// InitCycleState), so jobValidFn notes its holds every session.
func (s *session) stillReserved(job *api.JobInfo) (hold, bool) {
	var gangs []string
	for _, r := range s.reserved.list {
		if s.subjectTo(job, r) {
			gangs = append(gangs, gangName(r.job))
		}
	}
	if len(gangs) == 0 || !s.estimate(job).fitsNow() {
		return hold{}, false
	}
	return reservedHold(gangs), true
}

// explainHolds sets, on every gang the session held although it fits and
// that still waits, the held condition (True, with the hold's reason and
// message), and sets it False on gangs held before and no longer. It posts
// an Event on the gang's Volcano Job when a hold begins or changes reason,
// and when it ends: the condition, kept on the PodGroup, is what says
// whether a hold is new, so a restarted scheduler posts nothing twice.
// The session's job updater writes the PodGroups (framework: JobUpdater),
// only those whose conditions changed: a message that stays the same costs
// no API call.
func (s *session) explainHolds() {
	rec := s.store.events.recorder(s.ssn.KubeClient())
	now := metav1.NewTime(s.now())
	for _, job := range s.ssn.Jobs {
		if job.PodGroup == nil {
			continue
		}
		// A copy: UpdatePodGroupCondition overwrites the PodGroup's.
		var prev *scheduling.PodGroupCondition
		if c := heldCondition(job.PodGroup); c != nil {
			c := *c
			prev = &c
		}
		h, held := s.held.of(job.UID)
		// A gang kept off reserved nodes that would not fit without the
		// reservations either waits for room, not for paddle: its
		// Unschedulable condition says why.
		held = held && waiting(job) && (h.reason != ReasonReservedForStarvingGang || s.estimate(job).fitsNow())
		wasHeld := prev != nil && prev.Status == corev1.ConditionTrue
		if !held && wasHeld && waiting(job) && prev.Reason == ReasonReservedForStarvingGang {
			h, held = s.stillReserved(job)
		}
		if !held && !wasHeld {
			continue
		}
		cond := &scheduling.PodGroupCondition{Type: paddleapi.HeldCondition, Status: corev1.ConditionTrue, Reason: h.reason, Message: h.message,
			TransitionID: string(s.ssn.UID), LastTransitionTime: now}
		if !held {
			cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, ReasonNotHeld, notHeldMessage
		}
		if wasHeld && held {
			// Still held: the condition has not transitioned.
			cond.LastTransitionTime = prev.LastTransitionTime
		}
		if err := s.ssn.UpdatePodGroupCondition(job, cond); err != nil {
			klog.ErrorS(err, "Cannot set the paddle hold condition", "podGroup", klog.KRef(job.Namespace, job.Name))
			continue
		}
		if wasHeld && held && prev.Reason == h.reason {
			continue
		}
		klog.V(3).InfoS("Paddle hold", "podGroup", klog.KRef(job.Namespace, job.Name), "reason", cond.Reason, "message", cond.Message)
		if ref := volcanoJobOf(job.PodGroup); rec != nil && ref != nil {
			rec.Event(ref, corev1.EventTypeNormal, cond.Reason, cond.Message)
		}
	}
}

// heldCondition is the PodGroup's held condition, nil if it has none.
func heldCondition(pg *api.PodGroup) *scheduling.PodGroupCondition {
	for i := range pg.Status.Conditions {
		if pg.Status.Conditions[i].Type == paddleapi.HeldCondition {
			return &pg.Status.Conditions[i]
		}
	}
	return nil
}

// volcanoJobOf is the Volcano Job that owns the PodGroup (the job
// controller creates it with the Job as its controller: pkg/controllers/
// job: createOrUpdatePodGroup), nil for a PodGroup of anything else.
func volcanoJobOf(pg *api.PodGroup) *corev1.ObjectReference {
	for _, o := range pg.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "Job" && o.APIVersion == batch.SchemeGroupVersion.String() {
			return &corev1.ObjectReference{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: pg.Namespace, Name: o.Name, UID: o.UID}
		}
	}
	return nil
}

// jobEvents posts the plugin's Events on Volcano Jobs: off unless the
// scheduler's main turns it on (Store.PostJobEvents); the recorder is
// built on the first session, from the session's Kubernetes client.
type jobEvents struct {
	on   bool
	once sync.Once
	rec  record.EventRecorder
}

func (e *jobEvents) recorder(kube kubernetes.Interface) record.EventRecorder {
	e.once.Do(func() {
		if e.rec != nil || !e.on || kube == nil {
			return
		}
		b := record.NewBroadcaster()
		b.StartStructuredLogging(4)
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
		e.rec = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: eventComponent})
	})
	return e.rec
}
