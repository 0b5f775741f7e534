package replay

import (
	"os"
	"runtime/debug"
)

// gcPercent is the garbage collector's target for a process that replays:
// a replay allocates a scheduler cache and a session per cycle and keeps
// little, so collecting at 8x the live heap instead of 2x trades about
// 320 MB of peak memory (160 MB at the default) for less time: one window,
// four configurations, three runs each on our 2-core machine (2026-11-28):
// 21.4 s wall and 26.4 s CPU at GOGC=100, 17.9 s and 18.9 s at 800.
const gcPercent = 800

// TuneGC sets the collector for a replaying process, unless the user set
// GOGC.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}
