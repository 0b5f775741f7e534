package paddle

import (
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
)

// Store is what the plugin keeps from one scheduling session to the next,
// and the clock it reads. Volcano builds the plugin anew for every session
// (framework.OpenSession calls the builder registered under PluginName), so
// whoever registers the builder owns the store: the scheduler's main makes
// one for the life of the process, a benchmark one per replayed run, a test
// its own. Nothing of it is a package variable, so two stores never share a
// reservation.
type Store struct {
	// clock is the scheduler's time: how long gangs have waited and pods
	// have run are measured against it.
	clock func() time.Time

	// book is each starving gang's reservation (reservation.go).
	book reservationBook

	// history is the predictor of the queues' run-time histories
	// (history.go).
	history historyCache

	// events posts the plugin's Events on Volcano Jobs (holds.go).
	events jobEvents

	// logged holds the problem lists already logged. Volcano builds the
	// plugin for every session (about one a second), so a typo would
	// otherwise log an error each time; each distinct configuration is
	// logged once.
	logged sync.Map // joined problems -> struct{}
}

// NewStore returns an empty store reading clock (time.Now in a scheduler).
func NewStore(clock func() time.Time) *Store {
	return &Store{clock: clock, book: reservationBook{plans: map[api.JobID]*booked{}}}
}

// reservationBook keeps each starving gang's reservation from one session
// to the next.
type reservationBook struct {
	mu    sync.Mutex
	plans map[api.JobID]*booked
}

// PostJobEvents makes the plugin post an Event on a Volcano Job when it
// holds the job's gang back and when the hold ends (holds.go), through the
// sessions' Kubernetes client. The scheduler's main turns it on; a replay
// or a test that has no API server leaves it off.
func (s *Store) PostJobEvents() { s.events.on = true }

func (s *Store) logProblems(problems []string) {
	if len(problems) == 0 {
		return
	}
	if _, seen := s.logged.LoadOrStore(strings.Join(problems, "\n"), struct{}{}); seen {
		return
	}
	for _, p := range problems {
		klog.ErrorS(nil, "Bad paddle scheduler plugin argument", "problem", p)
	}
}
