package paddle

import (
	"cmp"
	"maps"
	"sort"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"volcano.sh/apis/pkg/apis/scheduling"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// This file is what the plugin learns from finished jobs: the run times
// the controller manager's paddle-history-controller records on each Queue
// (paddleapi.RunTimeHistoryAnnotation), read into one predictor
// (pkg/jobhistory) and asked about waiting gangs. Nothing here knows a
// job's own run time: only what was known of it at submission.

// historyCache keeps the predictor built from the queues' histories until
// one of them changes: the annotations change when jobs finish, while
// sessions open about once a second.
type historyCache struct {
	mu          sync.Mutex
	annotations map[string]string
	predictor   *jobhistory.Predictor
}

// predictor is the predictor of the queues' histories; nil when no queue
// has one. A history that cannot be read is left out and logged once.
func (st *Store) predictor(queues map[api.QueueID]*api.QueueInfo) *jobhistory.Predictor {
	anns := map[string]string{}
	for _, q := range queues {
		if q == nil || q.Queue == nil {
			continue
		}
		if a := q.Queue.Annotations[paddleapi.RunTimeHistoryAnnotation]; a != "" {
			anns[q.Queue.Name] = a
		}
	}
	h := &st.history
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.annotations != nil && maps.Equal(h.annotations, anns) {
		return h.predictor
	}
	h.annotations = anns
	h.predictor = nil
	if len(anns) == 0 {
		return nil
	}
	names := make([]string, 0, len(anns))
	for n := range anns {
		names = append(names, n)
	}
	sort.Strings(names)
	p := jobhistory.NewPredictor()
	for _, n := range names {
		// AddQueue takes a history whole or not at all: a bad one costs
		// only its own queue.
		if err := p.AddQueue(n, []byte(anns[n])); err != nil {
			st.logProblems([]string{"annotation " + paddleapi.RunTimeHistoryAnnotation + " of queue " + n + " ignored: " + err.Error() +
				"; delete it, and paddle-history-controller writes it anew as jobs finish"})
		}
	}
	h.predictor = p
	return p
}

// features are what the job carried at submission, as the history keys
// it (jobhistory.FromJob reads the same of a finished job): its namespace
// and queue, its Paddle mode, and the shape of the pods that request GPUs.
func (s *session) features(job *api.JobInfo) jobhistory.Features {
	f := jobhistory.Features{Namespace: job.Namespace, Queue: string(job.Queue)}
	s.mu.Lock()
	js, ok := s.jobs[job.UID]
	s.mu.Unlock()
	mode := paddleapi.Mode("")
	if ok {
		mode = js.mode
	} else if job.PodGroup != nil {
		// No pods yet: the mode label its Job's admission set.
		mode = paddleapi.Mode(job.PodGroup.Labels[paddleapi.ModeLabel])
	}
	switch mode {
	case paddleapi.ModeCollective:
		f.Mode = jobhistory.ModeCollective
	case paddleapi.ModePS, paddleapi.ModeHeterPS:
		f.Mode = jobhistory.ModePS
	}
	for _, t := range job.Tasks {
		if g := gpusOf(t.Resreq); g > 0 {
			f.Pods++
			f.GPUs += g
			if f.GPUsPerPod == 0 {
				f.GPUsPerPod = g
			}
		}
	}
	if f.GPUs == 0 && job.PodGroup != nil && job.PodGroup.Spec.MinResources != nil {
		// A PodGroup the enqueue action has not admitted has no pods yet:
		// its GPUs are those of its minMember pods (Volcano's job
		// controller, CalcPGMinResources), its shape unknown.
		q := (*job.PodGroup.Spec.MinResources)[gpuResource]
		f.GPUs = int(q.Value())
	}
	return f
}

// predictedWork is the GPU-time the gang still needs as the history
// predicts it: the GPUs it still needs times its predicted mean run time;
// false without history.
func (s *session) predictedWork(job *api.JobInfo) (float64, bool) {
	w := s.predictionOf(job)
	return w.gpuSeconds, w.ok
}

// predictedMedian is the gang's predicted median run time; false without
// history.
func (s *session) predictedMedian(job *api.JobInfo) (time.Duration, bool) {
	w := s.predictionOf(job)
	return w.median, w.ok
}

// predictionOf is what the history predicts of the gang, computed once per
// session.
func (s *session) predictionOf(job *api.JobInfo) predicted {
	p := s.predictorOf()
	if p == nil {
		return predicted{}
	}
	s.mu.Lock()
	w, ok := s.work[job.UID]
	s.mu.Unlock()
	if ok {
		return w
	}
	f := s.features(job)
	pr, found := p.Predict(f, s.now())
	w = predicted{ok: found}
	if found {
		gpus := s.estimate(job).gpus
		if gpus == 0 {
			gpus = f.GPUs
		}
		w.gpuSeconds = float64(gpus) * pr.Mean.Seconds()
		w.median = pr.Median
		klog.V(5).InfoS("Predicted a gang's run time", "job", job.UID, "mean", pr.Mean.Round(time.Second), "median", pr.Median.Round(time.Second), "level", pr.Level, "weight", pr.Weight)
	}
	s.mu.Lock()
	s.work[job.UID] = w
	s.mu.Unlock()
	return w
}

// predictorOf is the session's predictor of the queues' histories (nil
// without one), built once per session.
func (s *session) predictorOf() *jobhistory.Predictor {
	return s.history.get(func() *jobhistory.Predictor { return s.store.predictor(s.ssn.Queues) })
}

// predicted is a job's predicted work, computed once per session.
type predicted struct {
	gpuSeconds float64
	median     time.Duration
	ok         bool
}

// admissionOrder orders two Paddle gangs that Volcano's enqueue action has
// not admitted yet (unadmitted), as ShortestPredictedFirst orders waiting
// gangs: one that has waited StarvationAfter first (the older first),
// then the least predicted GPU-time, then the fewest GPUs. ok is false
// unless both are such gangs. Volcano's enqueue action admits jobs in
// JobOrderFn's order (actions/enqueue: Execute), before they have pods:
// without this only Volcano's order (priority, creation) would decide
// which waiting gang gets the cluster's next room.
func (s *session) admissionOrder(l, r *api.JobInfo) (int, bool) {
	if !unadmitted(l) || !unadmitted(r) {
		return 0, false
	}
	now := s.now()
	ls := s.starvation.waitedOut(l.CreationTimestamp.Time, now)
	rs := s.starvation.waitedOut(r.CreationTimestamp.Time, now)
	switch {
	case ls && !rs:
		return -1, true
	case rs && !ls:
		return 1, true
	case ls && rs:
		return l.CreationTimestamp.Time.Compare(r.CreationTimestamp.Time), true
	}
	lw, lok := s.predictedWork(l)
	rw, rok := s.predictedWork(r)
	if lok && rok && lw != rw {
		return cmp.Compare(lw, rw), true
	}
	return compareInts(s.features(l).GPUs, s.features(r).GPUs), true
}

// unadmitted: a Paddle gang (its PodGroup carries the mode label the
// admission sets on its Job, which Volcano's job controller copies to the
// PodGroup) that the enqueue action has not admitted: its PodGroup is
// Pending, and it has no pods yet.
func unadmitted(job *api.JobInfo) bool {
	pg := job.PodGroup
	return pg != nil && pg.Status.Phase == scheduling.PodGroupPending && len(job.Tasks) == 0 && pg.Labels[paddleapi.ModeLabel] != ""
}
