package replay

import (
	"strconv"
	"time"

	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

// This file is the simulated cluster's run-time history, kept as the
// product keeps it: paddle-history-controller records every finished job
// on its Queue (jobhistory.QueueHistory) and the scheduler plugin reads
// the Queues' annotations. The history is the trace's jobs before the
// window (Workload.History) as their run times become known, then the
// window's own as they finish in the replay; never a job's recorded
// duration before it ends.

// historyRefresh: a queue's annotation is written again when a job of it
// finishes, or when this much simulated time has passed since (the
// history's weights decay with time).
const historyRefresh = 3600.0

// simHistory is the replay's run-time history, per queue.
type simHistory struct {
	queues map[string]*jobhistory.QueueHistory
	// ann: each queue's annotation as last written, at (simulated) time
	// at; dirty: a job was recorded since.
	ann   map[string]string
	at    map[string]float64
	dirty map[string]bool
	// past: the trace's jobs before the window; next: the first not yet
	// known.
	past []PastJob
	next int
	// epoch is the window's start on the trace's clock.
	epoch time.Time
	seq   int
}

// usesHistory: the configuration's paddle plugin orders by predicted
// run time, so its replay keeps the history the plugin reads.
func usesHistory(cfg Config) bool {
	if cfg.Role != RolePaddle || cfg.Sched == nil {
		return false
	}
	a, _, ok := paddle.ArgsIn(cfg.Sched.Tiers)
	return ok && a.ShortestPredictedFirst
}

func newSimHistory(w *Workload) *simHistory {
	return &simHistory{queues: map[string]*jobhistory.QueueHistory{}, ann: map[string]string{}, at: map[string]float64{}, dirty: map[string]bool{},
		past: w.History, epoch: time.Unix(int64(w.Start0), 0).UTC()}
}

// clock is simulated time t on the trace's clock.
func (h *simHistory) clock(t float64) time.Time {
	return h.epoch.Add(time.Duration(t * float64(time.Second)))
}

// record adds a finished job to its queue's history.
func (h *simHistory) record(r jobhistory.Record) {
	q := h.queues[r.Queue]
	if q == nil {
		q, _ = jobhistory.NewQueueHistory(r.Queue, "")
		h.queues[r.Queue] = q
	}
	h.seq++
	if q.Record(strconv.Itoa(h.seq), r) {
		h.dirty[r.Queue] = true
	}
}

// learn records the trace's jobs before the window whose run times are
// known at t, as the configuration would have queued them: every job in
// queue default, or, with Queues, in its virtual cluster's.
func (h *simHistory) learn(t float64, queues bool) {
	for ; h.next < len(h.past) && h.past[h.next].Known <= t; h.next++ {
		tj := h.past[h.next].Job
		q := "default"
		if queues && tj.Queue != "" {
			q = queueName(tj.Queue)
		}
		h.record(jobhistory.Record{SubmitTime: time.Unix(int64(tj.Submitted), 0).UTC(), Duration: time.Duration(tj.Duration * float64(time.Second)),
			GPUs: tj.GPUs, Queue: q, Namespace: namespaceName(tj.Namespace), Mode: tj.Mode,
			Pods: tj.Pods, GPUsPerPod: tj.PodGPUs})
	}
}

// annotations are the queues' annotations for a cycle at t whose
// scheduler's clock reads wall.
func (h *simHistory) annotations(t float64, wall time.Time) map[string]map[string]string {
	out := map[string]map[string]string{}
	for name, q := range h.queues {
		if h.dirty[name] || t-h.at[name] >= historyRefresh || h.ann[name] == "" {
			a, err := q.AnnotationAs(h.clock(t), wall)
			if err != nil {
				continue
			}
			h.ann[name], h.at[name], h.dirty[name] = a, t, false
		}
		out[name] = map[string]string{paddleapi.RunTimeHistoryAnnotation: h.ann[name]}
	}
	return out
}

// recordFinished records job i, which ended at end, in its queue's
// history as paddle-history-controller would read it from the job and its
// pods (jobhistory.FromJob): its trainers' shape and the run that ended,
// from the earliest start of the trainers running at its end. Called
// before the job's pods are released.
func (s *sim) recordFinished(i int, end float64) {
	if s.hist == nil {
		return
	}
	j := s.w.Jobs[i]
	start := -1.0
	for k := j.PServers; k < len(s.started[i]); k++ {
		if s.on[i][k] && (start < 0 || s.started[i][k] < start) {
			start = s.started[i][k]
		}
	}
	if start < 0 || end <= start {
		return
	}
	pods := s.pods[i]
	mode := jobhistory.ModeCollective
	if j.PS {
		mode = jobhistory.ModePS
	}
	r := jobhistory.Record{SubmitTime: s.hist.clock(j.Arrival), Start: s.hist.clock(start), Duration: time.Duration((end - start) * float64(time.Second)),
		Pods: len(pods) - j.PServers, GPUsPerPod: j.PodGPUs, Mode: mode, Queue: s.groups[i].Spec.Queue, Namespace: pods[0].Namespace}
	s.hist.record(r)
}
