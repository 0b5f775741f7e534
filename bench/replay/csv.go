package replay

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
)

// JobsCSVHeader names the per-job CSV's columns: the window (preset and
// first trace job), the configuration, run and workload seed, the job, its GPUs, PS or
// collective, arrival, start and end (s after the window's first
// submission; -1: never started), the slowdown its placement cost, and
// for collective jobs of 2+ trainers the nodes and racks they span and the
// rank boundaries that cross a node or a rack; with Flex, its restarts from
// a checkpoint and its resizes (the slowdown and crossings are those of its
// last placement).
var JobsCSVHeader = []string{"preset", "window_start", "window_jobs", "config", "run", "seed", "job", "gpus", "mode",
	"arrival_s", "start_s", "end_s", "slowdown", "nodes", "racks", "node_crossings", "rack_crossings", "restarts", "resizes"}

// WriteJobsCSV writes every job of every configuration and run of the
// report, one row each, without a header (JobsCSVHeader): any figure of
// the report can be recomputed from these rows.
func (r *Report) WriteJobsCSV(out io.Writer) error {
	w := csv.NewWriter(out)
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
	for _, rj := range r.Jobs {
		for _, j := range rj.Jobs {
			mode := "collective"
			if j.PS {
				mode = "ps"
			}
			row := []string{r.Options.Preset.Name, strconv.Itoa(r.Options.Start), strconv.Itoa(r.Options.Jobs), rj.Config, strconv.Itoa(rj.Run),
				strconv.FormatInt(rj.Seed, 10), j.Name, strconv.Itoa(j.GPUs), mode, f(j.Arrival), f(j.Start), f(j.End), strconv.FormatFloat(j.Slowdown, 'f', 4, 64),
				strconv.Itoa(j.Nodes), strconv.Itoa(j.Racks), strconv.Itoa(j.NodeCrossings), strconv.Itoa(j.RackCrossings),
				strconv.Itoa(j.Restarts), strconv.Itoa(j.Resizes)}
			if err := w.Write(row); err != nil {
				return err
			}
		}
	}
	w.Flush()
	return w.Error()
}

// JobsCSVLine is the header as one CSV line.
func JobsCSVLine() string { return strings.Join(JobsCSVHeader, ",") + "\n" }
