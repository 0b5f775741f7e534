package jobhistory

import (
	"fmt"
	"math"
	"math/bits"
	"sort"
	"time"
)

// Features are what a scheduler knows of a job when it is submitted: the
// keys the history is kept under. Never its run time.
type Features struct {
	Namespace, Queue string
	Mode             Mode
	// Pods and GPUsPerPod: the trainers' shape, 0 when unknown (a Philly
	// row); GPUs is the job's total either way.
	Pods, GPUsPerPod int
	GPUs             int
}

// FeaturesOf is what was known of r at its submission.
func FeaturesOf(r Record) Features {
	return Features{Namespace: r.Namespace, Queue: r.Queue, Mode: r.Mode, Pods: r.Pods, GPUsPerPod: r.GPUsPerPod, GPUs: r.TotalGPUs()}
}

// Levels of the history, most specific first. A prediction starts from
// the whole history (LevelAll) and moves towards each more specific
// level's mean in proportion to the weight of what that level has seen
// (predictorPrior), so a key seen once barely moves it and a key seen
// often decides it. The levels are what carries signal in a trace of
// shared clusters: who submits (queue, namespace) and how large the job
// is (Tiresias and Helios report both; design.md section 6).
const (
	// LevelShape: namespace, queue, mode and the exact pod shape.
	LevelShape = "shape"
	// LevelNamespaceSize: namespace, queue and total GPUs (who submits
	// and how large, whatever the pod shape).
	LevelNamespaceSize = "namespace-size"
	// LevelSize: total GPUs, rounded up to a power of two.
	LevelSize = "size"
	// LevelAll: every job.
	LevelAll = "all"
)

// Levels are the history's levels, most specific first.
var Levels = []string{LevelShape, LevelNamespaceSize, LevelSize, LevelAll}

func levelKey(level string, f Features) string {
	switch level {
	case LevelShape:
		return fmt.Sprintf("%s/%s/%s/%dx%d/%d", f.Namespace, f.Queue, f.Mode, f.Pods, f.GPUsPerPod, f.GPUs)
	case LevelNamespaceSize:
		return fmt.Sprintf("%s/%s/%d", f.Namespace, f.Queue, f.GPUs)
	case LevelSize:
		return fmt.Sprint(sizeBucket(f.GPUs))
	}
	return ""
}

// sizeBucket rounds GPUs up to a power of two.
func sizeBucket(gpus int) int {
	if gpus <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(gpus-1))
}

// Defaults of a Predictor.
const (
	// DefaultHalfLife: an observation weighs half as much a week later,
	// so the history follows a cluster whose jobs change.
	DefaultHalfLife = 7 * 24 * time.Hour
	// DefaultMaxKeys bounds the keys of each level; past it the key
	// observed least recently is forgotten. A key costs about 100 bytes
	// of memory and of its encoding.
	DefaultMaxKeys = 2048
	// predictorPrior is the weight, in observations, of the next less
	// specific level's estimate against a key's own mean.
	predictorPrior = 2
	// forgetAfterHalfLives: a key not observed for this many half-lives
	// (its weight below 1/256 of what it was) is forgotten.
	forgetAfterHalfLives = 8
)

// stat is what a key has seen: decayed sums of the log run times, as of
// Last.
type stat struct {
	W, SumLog, SumLog2 float64
	Last               time.Time
}

// decayTo is s's sums as of t.
func (s stat) decayTo(t time.Time, halfLife time.Duration) stat {
	if dt := t.Sub(s.Last); dt > 0 {
		f := math.Exp2(-float64(dt) / float64(halfLife))
		s.W, s.SumLog, s.SumLog2, s.Last = s.W*f, s.SumLog*f, s.SumLog2*f, t
	}
	return s
}

// Predictor predicts a job's run time from the run times of the finished
// jobs it has observed. It keeps per level and key the decayed count, sum
// and sum of squares of the logs of run times: bounded (MaxKeys per
// level), no record kept. Not safe for concurrent use.
type Predictor struct {
	HalfLife time.Duration
	MaxKeys  int
	// levels: the keys of each level it uses.
	levels map[string]map[string]*stat
}

// NewPredictor is a Predictor that has seen nothing, using every level
// or, given levels, only those (to measure what a level adds; LevelAll is
// always used).
func NewPredictor(levels ...string) *Predictor {
	if len(levels) == 0 {
		levels = Levels
	}
	p := &Predictor{HalfLife: DefaultHalfLife, MaxKeys: DefaultMaxKeys, levels: map[string]map[string]*stat{LevelAll: {}}}
	for _, l := range levels {
		p.levels[l] = map[string]*stat{}
	}
	return p
}

// Observe records a job of features f that ran for d and ended at end.
// Observations should come in order of end; one that comes late counts as
// if it ended at the latest end its keys have seen.
func (p *Predictor) Observe(f Features, end time.Time, d time.Duration) {
	if d <= 0 {
		return
	}
	x := math.Log(d.Seconds())
	for _, l := range Levels {
		if p.levels[l] == nil {
			continue
		}
		k := levelKey(l, f)
		s, ok := p.levels[l][k]
		if !ok {
			p.makeRoom(l, end)
			s = &stat{Last: end}
			p.levels[l][k] = s
		}
		*s = s.decayTo(end, p.HalfLife)
		s.W++
		s.SumLog += x
		s.SumLog2 += x * x
	}
}

// makeRoom forgets, before a new key of level l comes in at now, the keys
// not observed for forgetAfterHalfLives and, if the level is still full,
// the least recently observed eighth of it (so forgetting is rare).
func (p *Predictor) makeRoom(l string, now time.Time) {
	keys := p.levels[l]
	if len(keys) < p.MaxKeys {
		return
	}
	horizon := now.Add(-forgetAfterHalfLives * p.HalfLife)
	for k, s := range keys {
		if s.Last.Before(horizon) {
			delete(keys, k)
		}
	}
	if len(keys) < p.MaxKeys {
		return
	}
	type aged struct {
		key  string
		last time.Time
	}
	all := make([]aged, 0, len(keys))
	for k, s := range keys {
		all = append(all, aged{k, s.Last})
	}
	sortByLast(all, func(a aged) (time.Time, string) { return a.last, a.key })
	for _, a := range all[:len(all)/8+1] {
		delete(keys, a.key)
	}
}

// sortByLast sorts xs by when each was last observed, oldest first, ties
// by name, so that what is forgotten does not depend on map order.
func sortByLast[T any](xs []T, by func(T) (time.Time, string)) {
	sort.Slice(xs, func(i, j int) bool {
		ti, ni := by(xs[i])
		tj, nj := by(xs[j])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return ni < nj
	})
}

// Keys is how many keys each level holds.
func (p *Predictor) Keys() map[string]int {
	n := map[string]int{}
	for l, keys := range p.levels {
		n[l] = len(keys)
	}
	return n
}

// Prediction is what the history says of a job's run time.
type Prediction struct {
	// Median is the predicted median run time; Mean the mean, assuming
	// run times are log-normal about it (a job's GPU-time in expectation
	// is Mean x its GPUs).
	Median, Mean time.Duration
	// Level is the most specific level that has seen jobs like it.
	Level string
	// Weight is the decayed number of jobs that level's key has seen.
	Weight float64
}

// Predict is the run time of a job of features f submitted at now. ok is
// false while the predictor has seen no job: a scheduler then keeps to
// the order it would use without history.
func (p *Predictor) Predict(f Features, now time.Time) (pr Prediction, ok bool) {
	var mu, v float64
	have := false
	for i := len(Levels) - 1; i >= 0; i-- {
		l := Levels[i]
		s, found := p.levels[l][levelKey(l, f)]
		if !found {
			continue
		}
		d := s.decayTo(now, p.HalfLife)
		if d.W <= 0 {
			continue
		}
		m := d.SumLog / d.W
		variance := math.Max(d.SumLog2/d.W-m*m, 0)
		if !have {
			mu, v, have = m, variance, true
		} else {
			// Shrink the key's mean towards the estimate so far; its
			// spread likewise.
			mu = (d.W*m + predictorPrior*mu) / (d.W + predictorPrior)
			v = (d.W*variance + predictorPrior*v) / (d.W + predictorPrior)
		}
		pr.Level, pr.Weight = l, d.W
	}
	if !have {
		return Prediction{}, false
	}
	pr.Median = seconds(math.Exp(mu))
	pr.Mean = seconds(math.Exp(mu + v/2))
	return pr, true
}

// seconds is s seconds as a Duration, capped at the longest a record holds.
func seconds(s float64) time.Duration {
	return time.Duration(math.Min(s, maxDurationSec) * float64(time.Second))
}
