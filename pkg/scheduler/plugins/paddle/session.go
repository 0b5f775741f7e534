package paddle

import (
	"sync"
	"time"

	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// session is the plugin's state for one scheduling session, built when it
// opens (OnSessionOpen): the arguments and the policies they make, where
// every node sits, every Paddle job's placements, and what the callbacks
// ask for repeatedly, each computed once per session. Every callback the
// plugin registers is a method of it; what outlives the session is in the
// store.
type session struct {
	ssn   *framework.Session
	args  Args
	store *Store

	// starvation and headroom are the policies the arguments make,
	// built once.
	starvation starvationPolicy
	headroom   headroomPolicy

	places map[string]place

	// mu guards jobs, estimates, attainedTime and waitStart: the allocate
	// action calls event handlers and scoring from one goroutine today, but
	// the framework does not promise it, and it runs predicates on many
	// nodes at once.
	mu        sync.Mutex
	jobs      map[api.JobID]*jobState
	estimates map[api.JobID]*gangEstimate
	// attainedTime is each job's attained GPU time (victims.go), computed
	// once per session.
	attainedTime map[api.JobID]time.Duration
	// stopCosts is what stopping each checkpointable job costs it
	// (stopping.go), read when the session opens (keepStopGuards) and only
	// read after.
	stopCosts map[api.JobID]stopCost
	// waitStart is when each gang began to wait (waitingSince), computed
	// once per session.
	waitStart map[api.JobID]time.Time
	// work is each job's predicted GPU-time (history.go), computed once
	// per session.
	work map[api.JobID]predicted

	// gpu is each node's GPUs (gpu.go).
	gpu *gpuState

	// reserved are the session's reservations, planned when it opens
	// (reservation.go).
	reserved *sessionReservations
	// held are the gangs the session kept from starting although they fit,
	// and why (holds.go).
	held holds
	// Computed once per session, on first use rather than at open: what
	// they read (jobs' pods, nodes' idle resources) changes as the actions
	// place and evict pods, and each is what the first callback to ask
	// sees.
	candidates    lazy[*victimJobs]                  // victimJobs
	growthWaiters lazy[map[api.QueueID]*api.JobInfo] // shrinkWaiters (predicates.go)
	gpuCount      lazy[clusterGPUs]                  // headroomGPUs (ordering.go)
	history       lazy[*jobhistory.Predictor]        // predictedWork (history.go)
}

// lazy is a value of the session computed on its first use, once; the
// callbacks that ask for it may run at the same time (predicates).
type lazy[T any] struct {
	once sync.Once
	v    T
}

func (l *lazy[T]) get(compute func() T) T {
	l.once.Do(func() { l.v = compute() })
	return l.v
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

func newSession(ssn *framework.Session, a Args, store *Store) *session {
	s := &session{ssn: ssn, args: a, store: store, places: buildPlaces(ssn, a), jobs: map[api.JobID]*jobState{}, estimates: map[api.JobID]*gangEstimate{},
		attainedTime: map[api.JobID]time.Duration{}, stopCosts: map[api.JobID]stopCost{}, waitStart: map[api.JobID]time.Time{}, work: map[api.JobID]predicted{}, gpu: newGPUState(a.GPUAssignmentsMaxAge, store.clock())}
	s.starvation = starvationPolicy{after: a.StarvationAfter, taskNameJobs: a.StarvationTaskNameJobs, isPaddle: s.isPaddle, since: s.waitingSince}
	s.headroom = headroomPolicy{share: a.SmallJobHeadroom, after: s.starvation.after, predictedAbove: a.HeadroomPredictedAbove}
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

// now reads the store's clock.
func (s *session) now() time.Time { return s.store.clock() }

// eventHandler keeps placements in step with the session: Allocate (and
// Pipeline) add a pod to its node, Deallocate removes it again when a gang
// that did not reach minAvailable is rolled back, so no score is ever based
// on a placement that did not happen.
func (s *session) eventHandler() *framework.EventHandler {
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
func (s *session) trainerNode(id api.JobID, idx int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if js, ok := s.jobs[id]; ok {
		return js.trainerAt[idx]
	}
	return ""
}

// snapshot copies a job's placements for one scoring pass.
func (s *session) snapshot(id api.JobID) (*jobState, map[paddleapi.Role]map[string]int) {
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
func (s *session) waitingSince(job *api.JobInfo) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.waitStart[job.UID]
	if !ok {
		t = waitingSince(job)
		s.waitStart[job.UID] = t
	}
	return t
}

// estimate returns the session's estimate for a job, computing it once.
func (s *session) estimate(job *api.JobInfo) *gangEstimate {
	s.mu.Lock()
	f, ok := s.estimates[job.UID]
	s.mu.Unlock()
	if ok {
		return f
	}
	var release func() map[string]*api.Resource
	if s.args.ShrinkElastic {
		release = func() map[string]*api.Resource { return releasableFor(job, s.victimJobs().elastic) }
	}
	f = estimateGang(job, s.ssn.NodeList, s.args.TaskNameFallback, release)
	s.mu.Lock()
	s.estimates[job.UID] = f
	s.mu.Unlock()
	return f
}

// starving: see starvationPolicy.starving.
func (s *session) starving(job *api.JobInfo) bool {
	return s.starvation.starving(job, s.now())
}

// guarded: see starvationPolicy.guarded.
func (s *session) guarded(job *api.JobInfo) bool {
	return s.starvation.guarded(job)
}

// isPaddle: the session recognised the job as a Paddle job.
func (s *session) isPaddle(job *api.JobInfo) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.jobs[job.UID]
	return ok
}

// victimJobs are the jobs a lever could take from, computed once per
// session, on first use.
func (s *session) victimJobs() *victimJobs {
	return s.candidates.get(func() *victimJobs { return findVictimJobs(s.ssn.Jobs) })
}

// attained is a job's attained GPU time at the session's clock, computed
// once per session.
func (s *session) attained(job *api.JobInfo) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.attainedTime[job.UID]; ok {
		return d
	}
	d := attainedGPUTime(job, s.now())
	s.attainedTime[job.UID] = d
	return d
}
