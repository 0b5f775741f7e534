package jobhistory

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Known is when a finished job's run time became known: its end, or, for
// a record whose start is unknown (a Philly row), its submission plus its
// run time (the wait it had is not in the trace).
func Known(r Record) time.Time {
	if end := r.End(); !end.IsZero() {
		return end
	}
	return r.SubmitTime.Add(r.Duration)
}

// Accuracy is how well one predictor foretold the run times of a set of
// jobs, each predicted at its submission from the jobs known by then.
type Accuracy struct {
	// MeanAbsLog is the mean of |ln(predicted median / actual)|: 0.69 is
	// off by a factor of 2 on average (in the geometric sense).
	MeanAbsLog float64
	// WithinFactor2 is the share of jobs predicted within a factor of 2.
	WithinFactor2 float64
	// RankCorrelation is Spearman's correlation between the predicted and
	// the actual GPU-time (run time x GPUs) over the jobs: what ordering
	// by predicted GPU-time relies on.
	RankCorrelation float64
}

// Evaluation compares predictors over the jobs submitted in a span.
type Evaluation struct {
	// Jobs: the jobs submitted in the span that had history to be
	// predicted from; Unpredicted: those submitted before any job was
	// known (scored by no one).
	Jobs, Unpredicted int
	// Predictor: NewPredictor's, every level; ByLevels: with one level
	// only (LevelAll and that level; LevelAll alone: every job's
	// geometric mean), to say which keys carry signal.
	Predictor Accuracy
	ByLevels  map[string]Accuracy
	// Baseline predicts every job the mean run time of all jobs known so
	// far (the naive predictor; its GPU-time ranks jobs by GPUs alone).
	Baseline Accuracy
	// Answered counts the jobs by the most specific level that had seen
	// jobs like them.
	Answered map[string]int

	// judged: each predicted job's GPUs, predicted median and run time
	// (Split reads them).
	judged []judgedJob
}

type judgedJob struct {
	gpus              int
	predicted, actual time.Duration
}

// Split is how the predictor sorts the jobs of some size at a threshold
// of predicted run time, against how long they ran: what a rule that
// treats jobs predicted short differently (the paddle scheduler plugin's
// smallJobHeadroom.predictedAbove) would have got right and wrong.
type Split struct {
	// Jobs: the judged jobs of at least the size asked.
	Jobs int
	// PredictedShort: predicted below the threshold; RanLong of those ran
	// at least as long. PredictedLong and RanShort likewise.
	PredictedShort, PredictedShortRanLong int
	PredictedLong, PredictedLongRanShort  int
}

// Split sorts the judged jobs of at least minGPUs GPUs by whether their
// predicted median run time is below threshold.
func (ev Evaluation) Split(minGPUs int, threshold time.Duration) Split {
	var s Split
	for _, j := range ev.judged {
		if j.gpus < minGPUs {
			continue
		}
		s.Jobs++
		long := j.actual >= threshold
		if j.predicted < threshold {
			s.PredictedShort++
			if long {
				s.PredictedShortRanLong++
			}
			continue
		}
		s.PredictedLong++
		if !long {
			s.PredictedLongRanShort++
		}
	}
	return s
}

// Evaluate predicts every job submitted in [from, to) at its submission,
// from the records known by then (Known): those that ended before the
// span, then the span's own as they end; never a job's own run time.
func Evaluate(records []Record, from, to time.Time) Evaluation {
	guesses, unpredicted := predictAll(records, from, to)
	ev := Evaluation{Jobs: len(guesses), Unpredicted: unpredicted, Answered: map[string]int{}, ByLevels: map[string]Accuracy{}}
	jobs := make([]Record, len(guesses))
	for i, g := range guesses {
		jobs[i] = records[g.record]
		ev.Answered[g.level]++
		ev.judged = append(ev.judged, judgedJob{gpus: jobs[i].TotalGPUs(), predicted: g.model, actual: jobs[i].Duration})
	}
	ev.Predictor = accuracyOf(jobs, func(i int) time.Duration { return guesses[i].model })
	ev.Baseline = accuracyOf(jobs, func(i int) time.Duration { return guesses[i].baseline })
	for _, l := range Levels {
		ev.ByLevels[l] = accuracyOf(jobs, func(i int) time.Duration { return guesses[i].byLevel[l] })
	}
	return ev
}

// guess is what the predictors said of one job at its submission.
type guess struct {
	record          int
	model, baseline time.Duration
	level           string
	byLevel         map[string]time.Duration
}

// predictAll predicts, in order of submission, every record submitted in
// [from, to) that had history; unpredicted counts the others.
func predictAll(records []Record, from, to time.Time) (guesses []guess, unpredicted int) {
	type event struct {
		at     time.Time
		known  bool // a record becomes known, else one is submitted
		record int
	}
	var events []event
	for i, r := range records {
		events = append(events, event{Known(r), true, i})
		if !r.SubmitTime.Before(from) && r.SubmitTime.Before(to) {
			events = append(events, event{r.SubmitTime, false, i})
		}
	}
	// At equal times a job known then counts for one submitted then.
	slices.SortStableFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		if a.known != b.known {
			if a.known {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.record, b.record)
	})
	full := NewPredictor()
	levelOnly := map[string]*Predictor{}
	for _, l := range Levels {
		levelOnly[l] = NewPredictor(l)
	}
	var sum, n float64 // the baseline's mean run time
	for _, e := range events {
		r := records[e.record]
		f := FeaturesOf(r)
		if e.known {
			full.Observe(f, e.at, r.Duration)
			for _, p := range levelOnly {
				p.Observe(f, e.at, r.Duration)
			}
			sum += r.Duration.Seconds()
			n++
			continue
		}
		if n == 0 {
			unpredicted++
			continue
		}
		pr, _ := full.Predict(f, e.at)
		g := guess{record: e.record, model: pr.Median, baseline: seconds(sum / n), level: pr.Level, byLevel: map[string]time.Duration{}}
		for l, p := range levelOnly {
			lp, _ := p.Predict(f, e.at)
			g.byLevel[l] = lp.Median
		}
		guesses = append(guesses, g)
	}
	return guesses, unpredicted
}

// accuracyOf scores the predicted run times get(i) of jobs.
func accuracyOf(jobs []Record, get func(int) time.Duration) Accuracy {
	if len(jobs) == 0 {
		return Accuracy{}
	}
	var a Accuracy
	pred := make([]float64, len(jobs))
	act := make([]float64, len(jobs))
	for i, r := range jobs {
		p := get(i)
		e := math.Abs(math.Log(p.Seconds() / r.Duration.Seconds()))
		a.MeanAbsLog += e
		if e <= math.Ln2 {
			a.WithinFactor2++
		}
		pred[i] = p.Seconds() * float64(r.TotalGPUs())
		act[i] = r.Duration.Seconds() * float64(r.TotalGPUs())
	}
	a.MeanAbsLog /= float64(len(jobs))
	a.WithinFactor2 /= float64(len(jobs))
	a.RankCorrelation = spearman(pred, act)
	return a
}

// spearman is Spearman's rank correlation of x and y (ties get their mean
// rank); 0 when either is constant.
func spearman(x, y []float64) float64 {
	rx, ry := ranks(x), ranks(y)
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	mx /= float64(len(rx))
	my /= float64(len(ry))
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// ranks are the 1-based ranks of v, ties sharing their mean rank.
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = mean
		}
		i = j + 1
	}
	return r
}
