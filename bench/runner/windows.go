package runner

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
)

// The window rules. Their parameters, and the rules in words, are
// bench/catalogue/catalogue.yaml's windows; the draws are here. Each reads
// the trace alone (replay.WindowDemand), never a replay's result.

// Window is a trace window to replay and its kind (catalogue.Kind*).
type Window struct {
	replay.Options
	Kind string
}

// Sets are the window sets a run replays: Windows named on their own
// (-windows), else the sets chosen.
type Sets struct {
	Windows                                    []catalogue.Window
	Tuning, HeldOut, Sensitivity, Rule1, Rule2 bool
}

// Options is a window as the replay takes it: the catalogue's shape (racks
// of nodes, load, PS share, the first seed) on the window's preset and
// span.
func Options(ws catalogue.Windows, w catalogue.Window) replay.Options {
	return replay.Options{Preset: w.Preset, NodesPerRack: ws.NodesPerRack, Start: w.Start, Jobs: w.Jobs, Load: ws.Load, PSShare: ws.PSShare, Seed: ws.Seed}
}

// Windows are the windows of the sets, in the order a run replays them.
// Windows named on their own keep the kind of the set they are in; any
// other is "seen" where it overlaps a window replayed before the held-out
// rule, else "other".
func Windows(ws catalogue.Windows, s Sets, data string) ([]Window, error) {
	if s.Windows == nil && !s.Tuning && !s.HeldOut && !s.Rule1 && !s.Rule2 && !s.Sensitivity {
		return nil, nil
	}
	trace, err := quality.LoadPhilly(filepath.Join(data, "philly.csv"))
	if err != nil {
		return nil, err
	}
	sorted := replay.SortBySubmission(trace)
	d, err := draw(ws, sorted, ws.HeldOutRule.Seed)
	if err != nil {
		return nil, err
	}
	tuning := append(tuningBefore(ws), onPresets(ws, d.tuning)...)
	held := onPresets(ws, d.heldOut)
	sat, err := rule2(ws, sorted)
	if err != nil {
		return nil, err
	}
	first, err := rule1(ws, len(trace))
	if err != nil {
		return nil, err
	}
	var out []Window
	add := func(kind string, os ...replay.Options) {
		for _, o := range os {
			out = append(out, Window{o, kind})
		}
	}
	if s.Windows != nil {
		for _, w := range s.Windows {
			o := Options(ws, w)
			kind := catalogue.KindOther
			switch {
			case has(tuning, o):
				kind = catalogue.KindTuning
			case has(held, o):
				kind = catalogue.KindHeldOut
			case has(sat, o):
				kind = catalogue.KindRule2
			case has(first, o):
				kind = catalogue.KindRule1
			case ws.OverlapsSeen(catalogue.Span{Start: o.Start, Jobs: o.Jobs}):
				kind = catalogue.KindSeen
			}
			add(kind, o)
		}
		return out, nil
	}
	if s.Tuning {
		add(catalogue.KindTuning, tuning...)
	}
	if s.HeldOut {
		add(catalogue.KindHeldOut, held...)
	}
	if s.Sensitivity {
		add(catalogue.KindHeldOut, onPresets(ws, sensitivity(d))...)
	}
	if s.Rule2 {
		add(catalogue.KindRule2, sat...)
	}
	if s.Rule1 {
		add(catalogue.KindRule1, first...)
	}
	return out, nil
}

// has: ws has window o (same preset, start and size).
func has(ws []replay.Options, o replay.Options) bool {
	return slices.ContainsFunc(ws, func(w replay.Options) bool {
		return w.Preset.Name == o.Preset.Name && w.Start == o.Start && w.Jobs == o.Jobs
	})
}

// tuningBefore are the tuning windows of every sweep before the held-out
// rule.
func tuningBefore(ws catalogue.Windows) []replay.Options {
	var out []replay.Options
	for _, w := range ws.Tuning {
		out = append(out, Options(ws, w))
	}
	return out
}

// onPresets is each drawn window on every preset of the rule, preset by
// preset.
func onPresets(ws catalogue.Windows, drawn []catalogue.Drawn) []replay.Options {
	var out []replay.Options
	for _, p := range ws.Presets {
		for _, d := range drawn {
			out = append(out, Options(ws, catalogue.Window{Preset: p, Start: d.Start, Jobs: ws.Jobs}))
		}
	}
	return out
}

// windowDraw is what the held-out rule picks from a trace: the held-out and
// the new tuning windows, in the order they were taken; how many
// candidates each stratum had and the range of their large-gang loads.
type windowDraw struct {
	heldOut, tuning []catalogue.Drawn
	strata          []stratum
}

// stratum: its candidates and their lowest and highest large-gang load.
type stratum struct {
	candidates int
	from, to   float64
}

// eligible: the demand of a candidate window passes the rules' bounds on
// load and racks.
func eligible(ws catalogue.Windows, d replay.Demand) bool {
	return d.OfferedLoad >= ws.MinLoad && d.Racks >= ws.MinRacks && d.Racks <= ws.MaxRacks
}

// largeGangShare is a window's large-gang load: the share of its offered
// GPU-seconds from jobs of at least LargeGangGPUs GPUs (that fit the
// cluster the replay sizes), replay.Demand's LargeLoad over OfferedLoad.
// The rule needs it the same on every preset; it is, since both have 8
// GPUs per node and the demand depends on the preset through that alone.
func largeGangShare(ws catalogue.Windows, sorted []quality.TraceJob, start int) (share float64, ok bool, err error) {
	large := ws.HeldOutRule.LargeGangGPUs
	for i, p := range ws.Presets {
		if p.GPUsPerNode != large {
			return 0, false, fmt.Errorf("held-out rule: preset %s has %d GPUs per node, the rule is for %d", p.Name, p.GPUsPerNode, large)
		}
		d, err := replay.WindowDemand(sorted, Options(ws, catalogue.Window{Preset: p, Start: start, Jobs: ws.Jobs}))
		if err != nil {
			return 0, false, err
		}
		s := 0.0
		if d.OfferedLoad > 0 {
			s = d.LargeLoad / d.OfferedLoad
		}
		e := eligible(ws, d)
		if i > 0 && (s != share || e != ok) {
			return 0, false, fmt.Errorf("held-out rule: window %d differs between presets", start)
		}
		share, ok = s, e
	}
	return share, ok, nil
}

// draw is the held-out rule over a trace in submission order, with a seed
// (the catalogue's; tests show another matters).
func draw(ws catalogue.Windows, sorted []quality.TraceJob, seed uint64) (*windowDraw, error) {
	type candidate struct {
		catalogue.Drawn
		key uint64
	}
	rule := ws.HeldOutRule
	n := len(rule.Strata)
	rng := rand.New(rand.NewPCG(seed, seed))
	var cands []candidate
	for start := 0; start+ws.Jobs <= len(sorted); start += ws.Step {
		if ws.OverlapsSeen(catalogue.Span{Start: start, Jobs: ws.Jobs}) {
			continue
		}
		share, ok, err := largeGangShare(ws, sorted, start)
		if err != nil {
			return nil, err
		}
		if ok {
			cands = append(cands, candidate{Drawn: catalogue.Drawn{Start: start, Load: share}, key: rng.Uint64()})
		}
	}
	// Strata: those with no large-gang load, then the others ranked by
	// load (the earlier start on a tie) cut into n-1 groups of equal size.
	slices.SortStableFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.Load, b.Load), cmp.Compare(a.Start, b.Start))
	})
	zero := 0
	for zero < len(cands) && cands[zero].Load == 0 {
		zero++
	}
	positive := len(cands) - zero
	strata := make([][]candidate, n)
	for r, c := range cands {
		if r >= zero {
			c.Stratum = 1 + (r-zero)*(n-1)/positive
		}
		strata[c.Stratum] = append(strata[c.Stratum], c)
	}
	d := &windowDraw{}
	for i, s := range strata {
		if len(s) == 0 {
			return nil, fmt.Errorf("held-out rule: stratum %d of large-gang load has no eligible window", i)
		}
		d.strata = append(d.strata, stratum{candidates: len(s), from: s[0].Load, to: s[len(s)-1].Load})
		slices.SortStableFunc(s, func(a, b candidate) int { return cmp.Compare(a.key, b.key) })
	}
	var taken []catalogue.Drawn
	span := func(start int) catalogue.Span { return catalogue.Span{Start: start, Jobs: ws.Jobs} }
	take := func(s int) (catalogue.Drawn, bool) {
		for len(strata[s]) > 0 {
			c := strata[s][0]
			strata[s] = strata[s][1:]
			if !slices.ContainsFunc(taken, func(t catalogue.Drawn) bool { return span(c.Start).Overlaps(span(t.Start)) }) {
				taken = append(taken, c.Drawn)
				return c.Drawn, true
			}
		}
		return catalogue.Drawn{}, false
	}
	for _, set := range []struct {
		out    *[]catalogue.Drawn
		rounds int
		name   string
	}{{&d.heldOut, rule.HeldOutPerStratum, "held-out"}, {&d.tuning, rule.TuningPerStratum, "tuning"}} {
		for k := 0; k < set.rounds; k++ {
			for s := range strata {
				w, ok := take(s)
				if !ok {
					return nil, fmt.Errorf("held-out rule: stratum %d has no %s window left for round %d", s, set.name, k+1)
				}
				*set.out = append(*set.out, w)
			}
		}
	}
	return d, nil
}

// sensitivity is the held-out subset the sensitivity passes replay (issue
// 35 point 5), fixed by rule before any pass ran: the first window the
// held-out rule drew in each stratum.
func sensitivity(d *windowDraw) []catalogue.Drawn {
	var first []catalogue.Drawn
	seen := map[int]bool{}
	for _, w := range d.heldOut {
		if !seen[w.Stratum] {
			seen[w.Stratum] = true
			first = append(first, w)
		}
	}
	return first
}

// rule1Move: a rule-1 window that overlaps an avoided one moves this many
// jobs later until it does not.
const rule1Move = 1000

// rule1Starts is the first rule for preset i of a trace of n jobs: for
// k = 1 .. PerPreset the window starts at floor(n * (2k - 1 + i) / 8),
// rounded down to a multiple of 100: the windows alternate between the
// presets at every eighth of the trace after the first. For the 82,247
// jobs of philly.csv: A100 10200, 30800, 51400; PCIe 20500, 41100, 61600.
func rule1Starts(ws catalogue.Windows, n, i int) []int {
	var out []int
	for k := 1; k <= ws.PerPreset; k++ {
		start := n * (2*k - 1 + i) / 8 / 100 * 100
		for ws.OverlapsAvoided(catalogue.Span{Start: start, Jobs: ws.Jobs}) {
			start += rule1Move
		}
		out = append(out, start)
	}
	return out
}

// rule1 are the first rule's windows of a trace of n jobs, preset by
// preset.
func rule1(ws catalogue.Windows, n int) ([]replay.Options, error) {
	var out []replay.Options
	for i, p := range ws.Presets {
		for _, start := range rule1Starts(ws, n, i) {
			if start+ws.Jobs > n {
				return nil, fmt.Errorf("rule-1 window %d+%d outside the trace's %d jobs", start, ws.Jobs, n)
			}
			out = append(out, Options(ws, catalogue.Window{Preset: p, Start: start, Jobs: ws.Jobs}))
		}
	}
	return out, nil
}

// rule2Starts is the second rule. Every eligible candidate that overlaps
// none of the avoided windows, no window of the first rule and no window
// picked before it scores its large gangs' offered load (replay.Demand's
// LargeLoad), highest first, the earlier start on a tie. The presets pick
// in turn, the first preset first, each its best candidate, until each has
// PerPreset. For philly.csv: A100 71200, 4900, 11900; PCIe 7400, 68700,
// 68100.
func rule2Starts(ws catalogue.Windows, sorted []quality.TraceJob) (map[string][]int, error) {
	type candidate struct {
		start int
		score float64
	}
	ranked := make([][]candidate, len(ws.Presets))
	for i, p := range ws.Presets {
		for start := 0; start+ws.Jobs <= len(sorted); start += ws.Step {
			d, err := replay.WindowDemand(sorted, Options(ws, catalogue.Window{Preset: p, Start: start, Jobs: ws.Jobs}))
			if err != nil {
				return nil, err
			}
			if eligible(ws, d) {
				ranked[i] = append(ranked[i], candidate{start, d.LargeLoad})
			}
		}
		sort.SliceStable(ranked[i], func(a, b int) bool { return ranked[i][a].score > ranked[i][b].score })
	}
	taken := map[int]bool{}
	for i := range ws.Presets {
		for _, s := range rule1Starts(ws, len(sorted), i) {
			taken[s] = true
		}
	}
	span := func(start int) catalogue.Span { return catalogue.Span{Start: start, Jobs: ws.Jobs} }
	overlapsTaken := func(start int) bool {
		for s := range taken {
			if span(start).Overlaps(span(s)) {
				return true
			}
		}
		return ws.OverlapsAvoided(span(start))
	}
	out := map[string][]int{}
	for k := 0; k < ws.PerPreset; k++ {
		for i, p := range ws.Presets {
			for _, c := range ranked[i] {
				if !overlapsTaken(c.start) {
					taken[c.start] = true
					out[p.Name] = append(out[p.Name], c.start)
					break
				}
			}
			if len(out[p.Name]) != k+1 {
				return nil, fmt.Errorf("second rule: fewer than %d eligible windows for %s", k+1, p.Name)
			}
		}
	}
	return out, nil
}

// rule2 are the second rule's windows, preset by preset.
func rule2(ws catalogue.Windows, sorted []quality.TraceJob) ([]replay.Options, error) {
	starts, err := rule2Starts(ws, sorted)
	if err != nil {
		return nil, err
	}
	var out []replay.Options
	for _, p := range ws.Presets {
		for _, s := range starts[p.Name] {
			out = append(out, Options(ws, catalogue.Window{Preset: p, Start: s, Jobs: ws.Jobs}))
		}
	}
	return out, nil
}
