package paddle

import (
	"sync"
	"time"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// sessionState is what the plugin knows during one scheduling session. A
// plugin value lives for one session only (Volcano builds it anew), so
// nothing here outlives the session; the GPU models of pkg/gputopology
// (per distinct topology annotation) are what is shared across sessions.
type sessionState struct {
	args   Args
	places map[string]place

	// mu guards jobs and fits: the allocate action calls event handlers and
	// scoring from one goroutine today, but the framework does not promise it.
	mu        sync.Mutex
	jobs      map[api.JobID]*jobState
	estimates map[api.JobID]*gangEstimate
	// attained is each job's attained GPU time (victims.go), computed
	// once per session.
	attained map[api.JobID]time.Duration
	// waitStart is when each gang began to wait (waitingSince), computed
	// once per session.
	waitStart map[api.JobID]time.Time

	// gpu is each node's GPUs (gpu.go).
	gpu *gpuState
}

// jobState is a Paddle job: its mode and where its pods are, by role and
// node, including pods this session allocated and not rolled back.
type jobState struct {
	mode   paddleapi.Mode
	placed map[paddleapi.Role]map[string]int
	// trainerAt: the node of each placed trainer, by index (rank), so a
	// trainer can be placed next to the rank before it.
	trainerAt map[int]string
}

// track records (delta 1) or forgets (-1, a rolled-back allocation) where a
// pod of the job sits.
func (j *jobState) track(role paddleapi.Role, idx int, node string, delta int) {
	j.add(role, node, delta)
	if role != paddleapi.RoleTrainer || idx < 0 {
		return
	}
	if delta > 0 {
		j.trainerAt[idx] = node
	} else if j.trainerAt[idx] == node {
		delete(j.trainerAt, idx)
	}
}

func (j *jobState) add(role paddleapi.Role, node string, delta int) {
	m := j.placed[role]
	if m == nil {
		m = map[string]int{}
		j.placed[role] = m
	}
	m[node] += delta
	if m[node] <= 0 {
		delete(m, node)
	}
}

func placedStatus(s api.TaskStatus) bool {
	return api.AllocatedStatus(s) || s == api.Pipelined
}

func newSessionState(ssn *framework.Session, a Args) *sessionState {
	s := &sessionState{args: a, places: buildPlaces(ssn, a), jobs: map[api.JobID]*jobState{}, estimates: map[api.JobID]*gangEstimate{},
		attained: map[api.JobID]time.Duration{}, waitStart: map[api.JobID]time.Time{}, gpu: newGPUState(a.GPUAssignmentsMaxAge, now())}
	for id, job := range ssn.Jobs {
		mode, ok := jobMode(job, a.TaskNameFallback)
		if !ok {
			continue
		}
		js := &jobState{mode: mode, placed: map[paddleapi.Role]map[string]int{}, trainerAt: map[int]string{}}
		for _, t := range job.Tasks {
			if t.NodeName == "" || !placedStatus(t.Status) {
				continue
			}
			if r, idx, ok := roleOf(t, a.TaskNameFallback); ok {
				js.track(r, idx, t.NodeName, 1)
			}
		}
		s.jobs[id] = js
	}
	return s
}

// eventHandler keeps placements in step with the session: Allocate (and
// Pipeline) add a pod to its node, Deallocate removes it again when a gang
// that did not reach minAvailable is rolled back, so no score is ever based
// on a placement that did not happen.
func (s *sessionState) eventHandler() *framework.EventHandler {
	update := func(delta int) func(*framework.Event) {
		return func(e *framework.Event) {
			if e == nil || e.Task == nil || e.Task.NodeName == "" {
				return
			}
			s.gpu.forget(e.Task.NodeName)
			s.mu.Lock()
			defer s.mu.Unlock()
			js, ok := s.jobs[e.Task.Job]
			if !ok {
				return
			}
			if r, idx, ok := roleOf(e.Task, s.args.TaskNameFallback); ok {
				js.track(r, idx, e.Task.NodeName, delta)
			}
		}
	}
	return &framework.EventHandler{AllocateFunc: update(1), DeallocateFunc: update(-1)}
}

// trainerNode is where the job's trainer of rank idx is placed, "" if it
// is not.
func (s *sessionState) trainerNode(id api.JobID, idx int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if js, ok := s.jobs[id]; ok {
		return js.trainerAt[idx]
	}
	return ""
}

// snapshot copies a job's placements for one scoring pass.
func (s *sessionState) snapshot(id api.JobID) (*jobState, map[paddleapi.Role]map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	js, ok := s.jobs[id]
	if !ok {
		return nil, nil
	}
	cp := make(map[paddleapi.Role]map[string]int, len(js.placed))
	for r, m := range js.placed {
		cm := make(map[string]int, len(m))
		for n, c := range m {
			cm[n] = c
		}
		cp[r] = cm
	}
	return js, cp
}

// waitingSince is waitingSince(job), computed once per session.
func (s *sessionState) waitingSince(job *api.JobInfo) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.waitStart[job.UID]
	if !ok {
		t = waitingSince(job)
		s.waitStart[job.UID] = t
	}
	return t
}
