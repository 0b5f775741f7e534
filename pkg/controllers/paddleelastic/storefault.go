package paddleelastic

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// A launcher that cannot reach its job's store exits 1 within about a
// second: its watch loop asks the store for the job's status when it sees
// a change, and the etcd3 client raises when the store is gone
// (launch/controllers/controller.py: Controller.watch calls
// ETCDMaster.get_status, controllers/master.py). A store restarted in
// place (OOM, liveness probe) or re-created (pod deleted, evicted, its node
// drained) thus ends every launcher of the job at once, with an exit code
// that is also a crash's. Such exits are the store's fault, not the job's:
// their pods are replaced and none counts toward --elastic-max-failures
// (the job's other launchers exited too, so the whole world re-forms on
// the store once it is back).
//
// An exit is the store's when it falls within a store fault, widened by
// storeFaultLead before it (an unresponsive store fails its probes before
// the kubelet restarts it, and launchers exit while it hangs) and
// storeFaultGrace after it: a re-created store has a new IP, which a
// launcher that restarts soon after may still get from DNS caches
// (CoreDNS's cache and record TTL are 30 s each in Kubernetes' Corefile)
// and fail on; the kubelet's restart back-off (10 s, 20 s, ...) spaces its
// tries; and the kubelets of different nodes stamp the times. Faults are read
// from the store pod's own status, so that a restarted controller knows
// them too (restart in place: the last termination and the next Ready;
// re-created: the new pod's creation and first Ready; not Ready now: since
// the Ready condition's change), and from what the controller saw while it
// ran (the store pod deleted or failed, which leaves no pod to read).
const (
	storeFaultLead  = 30 * time.Second
	storeFaultGrace = 90 * time.Second
	// storeFaultMemory is how long the controller remembers a fault it saw;
	// an exit is judged when its pod's status arrives, seconds later.
	storeFaultMemory = 10 * time.Minute
)

// storeFault is a span in which a job's store could not serve; to is zero
// while it lasts.
type storeFault struct {
	from, to time.Time
	why      string
}

// covers: an exit at t belongs to the fault (widened, see above); now
// stands in for the end of a fault that lasts.
func (f storeFault) covers(t, now time.Time) bool {
	to := f.to
	if to.IsZero() {
		to = now
	}
	return !t.Before(f.from.Add(-storeFaultLead)) && !t.After(to.Add(storeFaultGrace))
}

// storeFaultsOf are the faults a store pod's status shows: a pod that is
// not Ready shows a fault since its Ready condition changed (or since its
// creation); a pod that was created in place of another (replacement) and
// a container that restarted show one that ended at the next Ready.
// replacement says whether the pod took the place of an earlier store of
// the job (its trainers started before it).
func storeFaultsOf(pod *v1.Pod, replacement bool) []storeFault {
	var out []storeFault
	readySince, ready := podReady(pod)
	if !ready {
		from := pod.CreationTimestamp.Time
		if !readySince.IsZero() {
			from = readySince
		}
		out = append(out, storeFault{from: from, why: fmt.Sprintf("store pod %s not ready", pod.Name)})
	}
	readyAt := func() time.Time {
		if ready {
			return readySince
		}
		return time.Time{}
	}
	if replacement {
		out = append(out, storeFault{from: pod.CreationTimestamp.Time, to: readyAt(), why: fmt.Sprintf("store pod %s re-created", pod.Name)})
	}
	for _, s := range pod.Status.ContainerStatuses {
		if t := s.LastTerminationState.Terminated; t != nil {
			out = append(out, storeFault{from: t.FinishedAt.Time, to: readyAt(),
				why: fmt.Sprintf("store container %s restarted after exit code %d %s", s.Name, t.ExitCode, t.Reason)})
		}
	}
	return out
}

// podReady is the pod's Ready condition: whether it is true, and since
// when.
func podReady(pod *v1.Pod) (time.Time, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.LastTransitionTime.Time, c.Status == v1.ConditionTrue
		}
	}
	return time.Time{}, false
}

// storeFaultLog remembers, per job, the store faults the controller saw
// that the store pod's status cannot show any more (the pod deleted,
// failed): a bounded, short memory.
type storeFaultLog struct {
	mu     sync.Mutex
	faults map[types.UID][]storeFault
}

// maxStoreFaults bounds the faults remembered per job.
const maxStoreFaults = 8

// begin records that the store of job went at t (a second call while one
// lasts changes nothing).
func (l *storeFaultLog) begin(job types.UID, t time.Time, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.faults == nil {
		l.faults = map[types.UID][]storeFault{}
	}
	fs := l.faults[job]
	if n := len(fs); n > 0 && fs[n-1].to.IsZero() {
		return
	}
	fs = append(fs, storeFault{from: t, why: why})
	if len(fs) > maxStoreFaults {
		fs = fs[len(fs)-maxStoreFaults:]
	}
	l.faults[job] = fs
}

// end records that the store of job serves again at t.
func (l *storeFaultLog) end(job types.UID, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if fs := l.faults[job]; len(fs) > 0 && fs[len(fs)-1].to.IsZero() {
		fs[len(fs)-1].to = t
	}
}

// of is the faults remembered for job, forgetting those that ended more
// than storeFaultMemory before now (and jobs left with none).
func (l *storeFaultLog) of(job types.UID, now time.Time) []storeFault {
	l.mu.Lock()
	defer l.mu.Unlock()
	var keep []storeFault
	for _, f := range l.faults[job] {
		if f.to.IsZero() || now.Sub(f.to) < storeFaultMemory {
			keep = append(keep, f)
		}
	}
	if len(keep) == 0 {
		delete(l.faults, job)
		return nil
	}
	l.faults[job] = keep
	return append([]storeFault(nil), keep...)
}

// exitTime is when the pod's containers ended: the latest finish of a
// terminated container, or zero.
func exitTime(pod *v1.Pod) time.Time {
	var t time.Time
	for _, s := range pod.Status.ContainerStatuses {
		if term := s.State.Terminated; term != nil && term.FinishedAt.Time.After(t) {
			t = term.FinishedAt.Time
		}
	}
	return t
}

// observeStore records the faults that the store pod's status will not
// show: its deletion and its failure (an eviction), and their end when a
// store pod of the job is Ready again.
func (c *Controller) observeStore(pod *v1.Pod, deleted bool) {
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return
	}
	switch {
	case deleted:
		c.faults.begin(owner.UID, c.now(), fmt.Sprintf("store pod %s deleted", pod.Name))
	case pod.Status.Phase == v1.PodFailed:
		c.faults.begin(owner.UID, c.now(), fmt.Sprintf("store pod %s failed (%s)", pod.Name, pod.Status.Reason))
	case pod.DeletionTimestamp != nil:
		c.faults.begin(owner.UID, pod.DeletionTimestamp.Time, fmt.Sprintf("store pod %s terminating", pod.Name))
	default:
		if since, ready := podReady(pod); ready {
			c.faults.end(owner.UID, since)
		}
	}
}

// storeFaultAt is the store fault that covers a failure at t of a
// launcher of the job that ran since since (its pod's creation), if any.
func (c *Controller) storeFaultAt(job *batch.Job, since, t time.Time) (storeFault, bool) {
	now := c.now()
	faults := c.faults.of(job.UID, now)
	store, err := c.pods.Pods(job.Namespace).Get(paddlejob.EtcdName(job.Name))
	switch {
	case err != nil || !metav1.IsControlledBy(store, job):
		// No store of the job: it is down until one is Ready.
		faults = append(faults, storeFault{from: since, why: "the job has no store pod"})
	case store.DeletionTimestamp != nil || store.Status.Phase == v1.PodFailed:
		faults = append(faults, storeFault{from: since, why: fmt.Sprintf("store pod %s going", store.Name)})
	default:
		faults = append(faults, storeFaultsOf(store, store.CreationTimestamp.After(since))...)
	}
	if t.IsZero() {
		return storeFault{}, false
	}
	for _, f := range faults {
		if f.covers(t, now) {
			return f, true
		}
	}
	return storeFault{}, false
}
