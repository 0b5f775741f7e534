package paddleelastic

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// t0 is when the trainers started in these tests.
var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// never: a time that did not happen (storeAt).
const never = -1 << 20

// queuedKind takes what the controller's work queue holds and says
// whether any of it is of kind k.
func (f *fixture) queuedKind(k workKind) bool {
	found := false
	for f.c.queue.Len() > 0 {
		w, _ := f.c.queue.Get()
		found = found || w.kind == k
		f.c.queue.Done(w)
		f.c.queue.Forget(w)
	}
	return found
}

// storeAt is the job's store pod created at created (seconds after t0),
// Ready since readyAt (or not Ready: never), its container last ended at
// lastExit (or never).
func storeAt(t *testing.T, job *batch.Job, created, readyAt, lastExit int) *v1.Pod {
	p := etcdPodOf(t, job, "etcd-uid", "10.1.0.9", readyAt != never)
	p.CreationTimestamp = metav1.NewTime(at(created))
	if readyAt != never {
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at(readyAt))
	}
	st := v1.ContainerStatus{Name: "etcd", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
	if lastExit != never {
		st.RestartCount = 1
		st.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", FinishedAt: metav1.NewTime(at(lastExit))}
	}
	p.Status.ContainerStatuses = []v1.ContainerStatus{st}
	return p
}

// A launcher's exit is the store's when it falls in a store fault the
// store pod's status shows, or one the controller saw; every other exit
// code 1 is a crash.
func TestStoreFaultAt(t *testing.T) {
	cases := []struct {
		name  string
		store func(*testing.T, *batch.Job) *v1.Pod // nil: no store pod
		seen  func(*Controller, *batch.Job)        // faults the controller saw
		exit  int                                  // seconds after t0
		now   int
		want  string // "" = a crash; else part of the fault's why
	}{
		{"store fine all along", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, -3, never) }, nil, 600, 700, ""},
		{"store restarted in place (OOM), exit as it died", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, 603, 601) }, nil, 602, 700, "restarted after exit code 137"},
		{"exit 20 s before the store's liveness kill", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, 603, 601) }, nil, 581, 700, "restarted"},
		{"exit a minute before the store restarted", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, 603, 601) }, nil, 540, 700, ""},
		{"exit a minute after the store was back (stale DNS, back-off)", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, 603, 601) }, nil, 663, 700, "restarted"},
		{"exit two minutes after the store was back", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, 603, 601) }, nil, 723, 800, ""},
		{"store re-created (data lost)", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, 603, 606, never) }, nil, 601, 700, "re-created"},
		{"store re-created, exit long before", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, 603, 606, never) }, nil, 300, 700, ""},
		{"store not ready now (stopped)", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, never, never) }, nil, 650, 700, "not ready"},
		{"no store pod", nil, nil, 650, 700, "no store pod"},
		{"store deleted, seen by the controller, back since", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, 602, 604, never) },
			func(c *Controller, j *batch.Job) {
				c.faults.begin(j.UID, at(600), "store pod deleted")
				c.faults.end(j.UID, at(604))
			}, 601, 700, "deleted"},
		{"a fault seen long ago is forgotten", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, -3, never) },
			func(c *Controller, j *batch.Job) {
				c.faults.begin(j.UID, at(10), "store pod deleted")
				c.faults.end(j.UID, at(12))
			}, 11, 1300, ""},
		{"a fault seen and remembered", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, -3, never) },
			func(c *Controller, j *batch.Job) {
				c.faults.begin(j.UID, at(10), "store pod deleted")
				c.faults.end(j.UID, at(12))
			}, 11, 100, "deleted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := elasticJob("")
			trainer := trainerPod(job, 0, "10.1.0.1")
			trainer.CreationTimestamp = metav1.NewTime(at(0))
			var pods []*v1.Pod
			if tc.store != nil {
				pods = append(pods, tc.store(t, job))
			}
			f := newFixture(t, job, pods...)
			f.c.now = func() time.Time { return at(tc.now) }
			if tc.seen != nil {
				tc.seen(f.c, job)
			}
			fault, ok := f.c.storeFaultAt(job, trainer.CreationTimestamp.Time, at(tc.exit))
			switch {
			case tc.want == "" && ok:
				t.Errorf("exit at %d s blamed on the store (%s), want a crash", tc.exit, fault.why)
			case tc.want != "" && !ok:
				t.Errorf("exit at %d s counted as a crash, want the store's (%s)", tc.exit, tc.want)
			case ok && !strings.Contains(fault.why, tc.want):
				t.Errorf("fault %q, want one that says %q", fault.why, tc.want)
			}
		})
	}
}

// A launcher restarted in place (restartPolicy OnFailure): a crash counts
// toward --elastic-max-failures and fails the job beyond it; an exit on a
// store fault, 241 and 143 do not; restarts the controller found when it
// first saw the pod are not judged again.
func TestRestartedInPlace(t *testing.T) {
	restartedPod := func(job *batch.Job, restarts int32, code int32, finished int) *v1.Pod {
		p := trainerPod(job, 0, "10.1.0.1")
		p.CreationTimestamp = metav1.NewTime(at(0))
		st := v1.ContainerStatus{Name: "paddle", RestartCount: restarts, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
		if restarts > 0 {
			st.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(at(finished))}
		}
		p.Status.ContainerStatuses = []v1.ContainerStatus{st}
		return p
	}
	cases := []struct {
		name       string
		failures   string
		store      func(*testing.T, *batch.Job) *v1.Pod
		code       int32
		wantCount  string
		wantFailed bool
	}{
		{"crash", "", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, -3, never) }, 1, "1", false},
		{"crash beyond the bound", "1", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, -3, never) }, 1, "1", true},
		{"exit when the store restarted", "1", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, 603, 601) }, 1, "1", false},
		{"processes stopped (241)", "1", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, -3, never) }, paddleapi.ExitStopped, "1", false},
		{"SIGTERM (143)", "", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, -3, never) }, exitTerminated, "", false},
		{"Paddle's launcher on SIGTERM (15)", "", func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, -3, never) }, paddleapi.ExitSignalled, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := elasticJob(tc.failures)
			first := restartedPod(job, 0, 0, 0)
			f := newFixture(t, job, tc.store(t, job), first)
			f.c.now = func() time.Time { return at(610) }
			f.c.observe(first, false)
			again := restartedPod(job, 1, tc.code, 602)
			if _, err := f.kube.CoreV1().Pods("ml").UpdateStatus(context.Background(), again, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.waitLister(t, "ml", again.Name, again)
			f.c.observe(again, false)
			f.drain(t)
			f.checkFailures(t, tc.wantCount, tc.wantFailed)
			// The same restart seen again is not judged again.
			f.c.observe(again, false)
			if f.queuedKind(restarted) {
				t.Errorf("a restart already judged was queued again")
			}
		})
	}

	// Restarts that happened before the controller first saw the pod (a
	// controller restart) are not judged: the earlier controller did.
	job := elasticJob("")
	old := restartedPod(job, 3, 1, 500)
	f := newFixture(t, job, storeAt(t, job, -5, -3, never), old)
	f.c.observe(old, false)
	if f.queuedKind(restarted) {
		t.Errorf("restarts from before the controller saw the pod were queued")
	}
}

// A process failure Paddle's launcher reports ("failed" on the job's
// status key) counts toward --elastic-max-failures, once per burst, not
// after a pod of the job went nor in a store fault.
func TestProcessFailures(t *testing.T) {
	cases := []struct {
		name       string
		failures   string
		setup      func(*fixture)
		store      func(*testing.T, *batch.Job) *v1.Pod
		wantCount  string
		wantFailed bool
	}{
		{"counted", "", nil, nil, "1", false},
		{"beyond the bound", "1", nil, nil, "1", true},
		{"the same burst as one counted", "", func(f *fixture) { f.c.processFailedAt["ml/el"] = at(595) }, nil, "", false},
		{"after the burst", "", func(f *fixture) { f.c.processFailedAt["ml/el"] = at(580) }, nil, "1", false},
		{"a pod went just before", "", func(f *fixture) { f.c.lostAt["ml/el"] = at(590) }, nil, "", false},
		{"a pod went long before", "", func(f *fixture) { f.c.lostAt["ml/el"] = at(500) }, nil, "1", false},
		{"the store restarted", "", nil, func(t *testing.T, j *batch.Job) *v1.Pod { return storeAt(t, j, -5, 603, 601) }, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := elasticJob(tc.failures)
			var pods []*v1.Pod
			if tc.store != nil {
				pods = append(pods, tc.store(t, job))
			} else {
				pods = append(pods, storeAt(t, job, -5, -3, never))
			}
			f := newFixture(t, job, pods...)
			f.c.now = func() time.Time { return at(610) }
			if tc.setup != nil {
				tc.setup(f)
			}
			f.c.queue.Add(work{kind: paddleFailed, namespace: "ml", job: "el", at: at(600).UnixNano()})
			f.drain(t)
			f.checkFailures(t, tc.wantCount, tc.wantFailed)
		})
	}
}

// A store pod stuck terminating (its node unreachable: the kubelet never
// confirms) is deleted at once a minute past its deadline, so that a new
// store can take its name; before that, or a pod the job does not
// control, is left alone.
func TestStuckStoreUnblocked(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pastDue     time.Duration
		foreign     bool
		wantDeleted bool
	}{
		{"stuck", 2 * time.Minute, false, true},
		{"still within its minute", 30 * time.Second, false, false},
		{"not the job's", 2 * time.Minute, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := elasticJob("")
			store := storeAt(t, job, -5, -3, never)
			store.DeletionTimestamp = &metav1.Time{Time: at(600).Add(-tc.pastDue)}
			store.Finalizers = []string{"kubernetes"} // what keeps a real one there
			if tc.foreign {
				store.OwnerReferences = nil
			}
			f := newFixture(t, job, store)
			f.c.now = func() time.Time { return at(600) }
			f.c.resyncEtcd()
			_, err := f.kube.CoreV1().Pods("ml").Get(context.Background(), store.Name, metav1.GetOptions{})
			if deleted := apierrors.IsNotFound(err); deleted != tc.wantDeleted {
				t.Errorf("store pod deleted = %v (%v), want %v", deleted, err, tc.wantDeleted)
			}
			if tc.wantDeleted {
				select {
				case e := <-f.rec.Events:
					if !strings.Contains(e, EtcdForceDeletedReason) || !strings.Contains(e, store.Name) {
						t.Errorf("event %q", e)
					}
				default:
					t.Errorf("no %s event", EtcdForceDeletedReason)
				}
			}
		})
	}
}
