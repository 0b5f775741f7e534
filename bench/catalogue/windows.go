package catalogue

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
)

// Kinds of window: the set a replayed window belongs to, kept in every
// report (replay.Report.Kind). The windows of rules 1 and 2 were held out
// until issue 35's rule; they are seen windows now and say so.
const (
	KindTuning  = "tuning"
	KindHeldOut = "held-out"
	KindRule1   = "rule 1, held out before issue 35, seen"
	KindRule2   = "rule 2: saturated, held out before issue 35, seen"
	KindSeen    = "seen"
	KindOther   = "other"
)

// Window is a span of trace jobs replayed on one preset.
type Window struct {
	Preset      quality.Preset
	Start, Jobs int
}

// Span is a span of trace jobs, whatever the preset; From says where it
// was replayed.
type Span struct {
	Start int    `json:"start"`
	Jobs  int    `json:"jobs"`
	From  string `json:"from,omitempty"`
}

// Overlaps: the spans share a trace job.
func (s Span) Overlaps(o Span) bool {
	return s.Start < o.Start+o.Jobs && o.Start < s.Start+s.Jobs
}

// Drawn is a window the held-out rule picks: its start, its large-gang
// load and its stratum (an index into HeldOutRule.Strata).
type Drawn struct {
	Start   int     `json:"start"`
	Load    float64 `json:"load"`
	Stratum int     `json:"stratum"`
}

// HeldOutRule are the held-out rule's parameters (catalogue.yaml says the
// rule in words; bench/runner draws it).
type HeldOutRule struct {
	Seed              uint64   `json:"seed"`
	LargeGangGPUs     int      `json:"largeGangGPUs"`
	Strata            []string `json:"strata"`
	HeldOutPerStratum int      `json:"heldOutPerStratum"`
	TuningPerStratum  int      `json:"tuningPerStratum"`
}

// Windows are the trace windows' parameters: catalogue.yaml's windows.
type Windows struct {
	// Every window's shape.
	Jobs, NodesPerRack int
	Load, PSShare      float64
	Seed               int64
	// Presets every drawn window is replayed on.
	Presets []quality.Preset
	// Tuning: the fixed tuning windows.
	Tuning []Window
	// Eligibility of the drawn rules' candidates.
	Step               int
	MinLoad            float64
	MinRacks, MaxRacks int
	HeldOutRule        HeldOutRule
	// PhillyHeldOut and PhillyTuning: what the held-out rule draws from
	// philly.csv, in order.
	PhillyHeldOut, PhillyTuning []Drawn
	// Seen: every window replayed before the held-out rule.
	Seen []Span
	// Avoided: the windows rules 1 and 2 avoided; PerPreset: the windows
	// each took per preset.
	Avoided   []Span
	PerPreset int
}

// rawWindows is catalogue.yaml's windows as written.
type rawWindows struct {
	Jobs         int         `json:"jobs"`
	NodesPerRack int         `json:"nodesPerRack"`
	Load         float64     `json:"load"`
	PSShare      float64     `json:"psShare"`
	Seed         int64       `json:"seed"`
	Presets      []string    `json:"presets"`
	Tuning       []string    `json:"tuning"`
	Step         int         `json:"step"`
	MinLoad      float64     `json:"minLoad"`
	MinRacks     int         `json:"minRacks"`
	MaxRacks     int         `json:"maxRacks"`
	HeldOutRule  HeldOutRule `json:"heldOutRule"`
	Philly       struct {
		HeldOut []Drawn `json:"heldOut"`
		Tuning  []Drawn `json:"tuning"`
	} `json:"philly"`
	Seen         []Span `json:"seen"`
	EarlierRules struct {
		Avoided   []Span `json:"avoided"`
		PerPreset int    `json:"perPreset"`
	} `json:"earlierRules"`
}

func (r rawWindows) parse() (Windows, error) {
	w := Windows{Jobs: r.Jobs, NodesPerRack: r.NodesPerRack, Load: r.Load, PSShare: r.PSShare, Seed: r.Seed,
		Step: r.Step, MinLoad: r.MinLoad, MinRacks: r.MinRacks, MaxRacks: r.MaxRacks, HeldOutRule: r.HeldOutRule,
		PhillyHeldOut: r.Philly.HeldOut, PhillyTuning: r.Philly.Tuning, Seen: r.Seen,
		Avoided: r.EarlierRules.Avoided, PerPreset: r.EarlierRules.PerPreset}
	if w.Jobs < 2 || w.NodesPerRack < 1 || w.Load <= 0 || w.Step < 1 || w.MinRacks < 1 || w.MaxRacks < w.MinRacks || w.PerPreset < 1 {
		return w, fmt.Errorf("windows: jobs, nodesPerRack, load, step, minRacks, maxRacks and perPreset must be positive (maxRacks at least minRacks)")
	}
	for _, name := range r.Presets {
		p, ok := presetNamed(name)
		if !ok {
			return w, fmt.Errorf("windows: no preset %q (presets: %s)", name, PresetNames())
		}
		w.Presets = append(w.Presets, p)
	}
	var err error
	if w.Tuning, err = ParseWindows(strings.Join(r.Tuning, ",")); err != nil {
		return w, fmt.Errorf("windows: tuning: %w", err)
	}
	h := w.HeldOutRule
	if len(h.Strata) < 2 || h.HeldOutPerStratum < 1 || h.TuningPerStratum < 0 || h.LargeGangGPUs < 1 {
		return w, fmt.Errorf("windows: heldOutRule: at least 2 strata, a held-out window per stratum and largeGangGPUs")
	}
	for _, d := range append(append([]Drawn(nil), w.PhillyHeldOut...), w.PhillyTuning...) {
		if d.Stratum < 0 || d.Stratum >= len(h.Strata) {
			return w, fmt.Errorf("windows: philly: window %d in stratum %d of %d", d.Start, d.Stratum, len(h.Strata))
		}
	}
	return w, nil
}

// ParseWindows reads windows written PRESET:START+JOBS, comma-separated
// (-windows, and the tuning windows of catalogue.yaml).
func ParseWindows(s string) ([]Window, error) {
	var out []Window
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		name, span, ok := strings.Cut(w, ":")
		startS, jobsS, ok2 := strings.Cut(span, "+")
		if !ok || !ok2 {
			return nil, fmt.Errorf("%q: want PRESET:START+JOBS, e.g. 8xA100-NVSwitch:40000+300", w)
		}
		preset, ok := presetNamed(name)
		if !ok {
			return nil, fmt.Errorf("%q: no preset %q (presets: %s)", w, name, PresetNames())
		}
		start, err1 := strconv.Atoi(startS)
		jobs, err2 := strconv.Atoi(jobsS)
		if err1 != nil || err2 != nil || start < 0 || jobs < 2 {
			return nil, fmt.Errorf("%q: START must be a trace index (0 or more) and JOBS at least 2", w)
		}
		out = append(out, Window{Preset: preset, Start: start, Jobs: jobs})
	}
	return out, nil
}

func presetNamed(name string) (quality.Preset, bool) {
	for _, p := range quality.Presets {
		if p.Name == name {
			return p, true
		}
	}
	return quality.Preset{}, false
}

// PresetNames lists the presets a window may name.
func PresetNames() string {
	names := make([]string, len(quality.Presets))
	for i, p := range quality.Presets {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// OverlapsSeen: the span overlaps a window replayed before the held-out
// rule.
func (w Windows) OverlapsSeen(s Span) bool {
	for _, x := range w.Seen {
		if s.Overlaps(x) {
			return true
		}
	}
	return false
}

// OverlapsAvoided: the span overlaps a window rules 1 and 2 avoided.
func (w Windows) OverlapsAvoided(s Span) bool {
	for _, x := range w.Avoided {
		if s.Overlaps(x) {
			return true
		}
	}
	return false
}
