package report

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/volcano-paddle/volcano-paddle/bench/replay"
)

// PaddleBefore names, in a run given -before, paddle as an earlier run
// replayed it (another commit, or another Volcano release) on the same
// windows and seeds: the verdicts then give paddle / paddle before, paired
// by seed, as for any variant.
const PaddleBefore = "paddle-before"

// AddBefore adds to every window of r that the earlier run before also
// replayed (same window set, options and seeds) its paddle, as
// PaddleBefore, in the window's figures and in each seed's. It returns
// how many windows got it and why the others did not.
func (r *Report) AddBefore(before *Report, from string) (added int, missing []string) {
	for _, rep := range r.Replay {
		if _, done := rep.Get(PaddleBefore); done {
			// Saved with it (a page rendered again with -before).
			missing = append(missing, fmt.Sprintf("%s %d+%d: has %s already", rep.Options.Preset.Name, rep.Options.Start, rep.Options.Jobs, PaddleBefore))
			continue
		}
		old := r.earlierWindow(before, rep)
		if old == nil {
			missing = append(missing, fmt.Sprintf("%s %d+%d: not in %s (or under other options or seeds)", rep.Options.Preset.Name, rep.Options.Start, rep.Options.Jobs, from))
			continue
		}
		mean, _ := old.Get(replay.Paddle)
		if mean.Config == "" {
			missing = append(missing, fmt.Sprintf("%s %d+%d: %s has no paddle there", rep.Options.Preset.Name, rep.Options.Start, rep.Options.Jobs, from))
			continue
		}
		rep.Metrics = append(rep.Metrics, asBefore(mean))
		for k := range rep.PerSeed {
			i := slices.IndexFunc(old.PerSeed, func(s replay.SeedResult) bool { return s.Seed == rep.PerSeed[k].Seed })
			j := slices.IndexFunc(old.PerSeed[i].Metrics, func(m replay.Metrics) bool { return m.Config == replay.Paddle })
			rep.PerSeed[k].Metrics = append(rep.PerSeed[k].Metrics, asBefore(old.PerSeed[i].Metrics[j]))
		}
		if rep.Notes == nil {
			rep.Notes = map[string]string{}
		}
		rep.Notes[PaddleBefore] = "paddle as " + from + " replayed it (same windows, options and seeds)"
		added++
	}
	if added > 0 {
		r.Before = from
	}
	return added, missing
}

// earlierWindow is before's replay of rep's window: same window set,
// options and seeds, with paddle under every seed; nil if none.
func (r *Report) earlierWindow(before *Report, rep *replay.Report) *replay.Report {
	for _, old := range before.Replay {
		if before.kindOf(old) != r.kindOf(rep) || !reflect.DeepEqual(old.Options, rep.Options) || len(old.PerSeed) != len(rep.PerSeed) {
			continue
		}
		ok := true
		for _, s := range rep.PerSeed {
			i := slices.IndexFunc(old.PerSeed, func(o replay.SeedResult) bool { return o.Seed == s.Seed })
			ok = ok && i >= 0 && slices.ContainsFunc(old.PerSeed[i].Metrics, func(m replay.Metrics) bool { return m.Config == replay.Paddle })
		}
		if ok {
			return old
		}
	}
	return nil
}

func asBefore(m replay.Metrics) replay.Metrics {
	m.Config, m.Role = PaddleBefore, replay.RolePaddle
	return m
}
