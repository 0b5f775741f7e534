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
		mean, perSeed := r.earlierPaddle(before, rep)
		if perSeed == nil {
			missing = append(missing, fmt.Sprintf("%s %d+%d: not in %s with paddle (or under other options or seeds)", rep.Options.Preset.Name, rep.Options.Start, rep.Options.Jobs, from))
			continue
		}
		rep.Metrics = append(rep.Metrics, asBefore(mean))
		for k := range rep.PerSeed {
			rep.PerSeed[k].Metrics = append(rep.PerSeed[k].Metrics, asBefore(perSeed[k]))
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

// earlierPaddle is paddle's figures in before's replay of rep's window
// (same window set, options and seeds): averaged, and per seed in the
// order of rep's seeds; perSeed is nil where before has no such window
// with paddle under every seed.
func (r *Report) earlierPaddle(before *Report, rep *replay.Report) (mean replay.Metrics, perSeed []replay.Metrics) {
	for _, old := range before.Replay {
		if before.kindOf(old) != r.kindOf(rep) || !reflect.DeepEqual(old.Options, rep.Options) || len(old.PerSeed) != len(rep.PerSeed) {
			continue
		}
		mean, ok := old.Get(replay.Paddle)
		perSeed = make([]replay.Metrics, 0, len(rep.PerSeed))
		for _, s := range rep.PerSeed {
			i := slices.IndexFunc(old.PerSeed, func(o replay.SeedResult) bool { return o.Seed == s.Seed })
			if i < 0 {
				ok = false
				break
			}
			j := slices.IndexFunc(old.PerSeed[i].Metrics, func(m replay.Metrics) bool { return m.Config == replay.Paddle })
			if j < 0 {
				ok = false
				break
			}
			perSeed = append(perSeed, old.PerSeed[i].Metrics[j])
		}
		if ok {
			return mean, perSeed
		}
	}
	return replay.Metrics{}, nil
}

func asBefore(m replay.Metrics) replay.Metrics {
	m.Config, m.Role = PaddleBefore, replay.RolePaddle
	return m
}
