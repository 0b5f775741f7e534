package paddle

import (
	"sync"
	"time"

	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
)

// This file is the smaller jobs' predicted demand (Args.SmallJobDemand):
// how many GPUs the jobs smaller than a whole node keep busy on average,
// from their arrivals of the last SmallJobDemandWindow and the run time
// the queues' history predicts for each. The headroom keeps that many GPUs
// free, at most its share (headroom.go: keep): where smaller jobs stop
// coming, whole-node gangs stop waiting for them. By Little's law the
// average number of GPUs a stream of jobs keeps busy is its arrival rate
// times the mean GPU-time of a job; the log measures the first, the
// history predicts the second, and nothing uses a job's own run time.

// SmallJobDemandWindow is how far back arrivals count: long enough to hold
// many arrivals on a busy cluster (tens of jobs in the Philly trace's
// busy hours), short enough to follow a day's swings. When an arrival
// leaves the window the demand drops, and a held gang may start: the
// replay runs a cycle then (bench/replay: DeclaredTimers).
const SmallJobDemandWindow = 4 * time.Hour

// maxArrivals bounds the arrival log; past it the oldest are dropped
// (their share of the demand is then missing: the headroom holds less).
const maxArrivals = 16384

// arrival is one job as the log keeps it: when it was created, its GPUs
// and its predicted GPU-time (0 when the history could not predict it).
type arrival struct {
	job        api.JobID
	created    time.Time
	gpus       int
	gpuSeconds float64
}

// arrivalLog is every GPU job created in the last SmallJobDemandWindow
// that a session has seen, each logged once, when first seen, with what
// the history predicted for it then. It lives in the Store: a job that
// arrives and ends between two sessions that judge gangs still counts.
// A restarted scheduler starts with the jobs still in the cluster.
type arrivalLog struct {
	mu   sync.Mutex
	seen map[api.JobID]bool
	list []arrival
}

// observe logs the session's jobs not logged yet that arrived within the
// window (after its start: an arrival exactly one window ago has left
// it), and forgets those that left it.
func (l *arrivalLog) observe(now time.Time, jobs map[api.JobID]*api.JobInfo, predict func(*api.JobInfo) (gpus int, gpuSeconds float64)) {
	since := now.Add(-SmallJobDemandWindow)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[api.JobID]bool{}
	}
	kept := l.list[:0]
	for _, a := range l.list {
		if !a.created.After(since) {
			delete(l.seen, a.job)
			continue
		}
		kept = append(kept, a)
	}
	l.list = kept
	for id, job := range jobs {
		if l.seen[id] || !job.CreationTimestamp.Time.After(since) {
			continue
		}
		gpus, work := predict(job)
		if gpus == 0 {
			continue
		}
		l.seen[id] = true
		l.list = append(l.list, arrival{job: id, created: job.CreationTimestamp.Time, gpus: gpus, gpuSeconds: work})
	}
	if over := len(l.list) - maxArrivals; over > 0 {
		for _, a := range l.list[:over] {
			delete(l.seen, a.job)
		}
		l.list = append(l.list[:0], l.list[over:]...)
	}
}

// demand is how many GPUs the jobs of fewer than below GPUs that arrived
// within the window keep busy on average: their predicted GPU-time per
// second of the window.
func (l *arrivalLog) demand(now time.Time, below int) float64 {
	since := now.Add(-SmallJobDemandWindow)
	l.mu.Lock()
	defer l.mu.Unlock()
	var work float64
	for _, a := range l.list {
		if a.gpus < below && a.created.After(since) && !a.created.After(now) {
			work += a.gpuSeconds
		}
	}
	return work / SmallJobDemandWindow.Seconds()
}

// observeArrivals logs the session's new arrivals with their predicted
// GPU-time, when the headroom is sized by demand and there is a history
// to predict from.
func (s *session) observeArrivals() {
	if !s.headroom.predicted {
		return
	}
	p := s.predictorOf()
	if p == nil {
		return
	}
	now := s.now()
	s.store.arrivals.observe(now, s.ssn.Jobs, func(job *api.JobInfo) (int, float64) {
		f := s.features(job)
		if f.GPUs == 0 {
			return 0, 0
		}
		pr, ok := p.Predict(f, now)
		if !ok {
			return f.GPUs, 0
		}
		return f.GPUs, float64(f.GPUs) * pr.Mean.Seconds()
	})
}

// smallJobDemand is the smaller jobs' predicted demand in GPUs (see
// arrivalLog.demand); false without a history, where the headroom keeps
// its share.
func (s *session) smallJobDemand(wholeNode int) (float64, bool) {
	if s.predictorOf() == nil {
		return 0, false
	}
	return s.store.arrivals.demand(s.now(), wholeNode), true
}

// predictorOf is the session's predictor of the queues' histories (nil
// without one), built once per session.
func (s *session) predictorOf() *jobhistory.Predictor {
	return s.history.get(func() *jobhistory.Predictor { return s.store.predictor(s.ssn.Queues) })
}
