package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"text/tabwriter"
	"time"

	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

var predictCommand = command{
	name:    "predict",
	summary: "say how well a history foretells its own jobs' run times, by what a scheduler knows at submission",
	run:     runPredict,
	flags:   func() *flag.FlagSet { fs, _ := predictFlags(); return fs },
}

// defaultJudged is the span of the history predict judges by default: its
// last 30 days, each job from what was known before its submission.
const defaultJudged = 30 * 24 * time.Hour

type predictOptions struct {
	trace string
	last  time.Duration
	// nodeGPUs and holdAbove: the whole-node gangs the headroom judges, and
	// its paddle.smallJobHeadroom.predictedAbove.
	nodeGPUs  int
	holdAbove time.Duration
}

func predictFlags() (*flag.FlagSet, *predictOptions) {
	o := &predictOptions{}
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	fs.StringVar(&o.trace, "trace", "", "the history CSV (paddle-replay export's format, or the Philly trace's)")
	fs.DurationVar(&o.last, "last", defaultJudged, "judge the jobs submitted in this last part of the history; the jobs before it are what the predictor starts from")
	fs.IntVar(&o.nodeGPUs, "node-gpus", 8, "GPUs of your largest node: jobs of at least this many are the whole-node gangs the scheduler plugin's headroom judges")
	fs.DurationVar(&o.holdAbove, "headroom-above", paddle.DefaultHeadroomPredictedAbove, "the "+paddle.ArgHeadroomPredictedAbove+" to judge: whole-node gangs predicted to run less start at once, the others may be held")
	return fs, o
}

func runPredict(args []string, stdout, stderr io.Writer) error {
	fs, o := predictFlags()
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	if o.trace == "" {
		return usageError("--trace is required: give the history CSV paddle-replay export wrote")
	}
	if o.last <= 0 {
		return usageError("--last=%s: give a positive duration, such as 720h", o.last)
	}
	if o.nodeGPUs < 1 {
		return usageError("--node-gpus=%d: give the GPUs of your largest node, at least 1", o.nodeGPUs)
	}
	if o.holdAbove <= 0 {
		return usageError("--headroom-above=%s: give a positive duration, such as 4h", o.holdAbove)
	}
	records, format, err := readRecords(o.trace)
	if err != nil {
		return err
	}
	if len(records) == 0 {
		return fmt.Errorf("--trace %s: no jobs in it", o.trace)
	}
	var last time.Time
	for _, r := range records {
		if r.SubmitTime.After(last) {
			last = r.SubmitTime
		}
	}
	from, to := last.Add(-o.last), last.Add(time.Nanosecond)
	ev := jobhistory.Evaluate(records, from, to)
	fmt.Fprintf(stdout, "History: %s (%s format), %d jobs. Judged: the %d submitted from %s on, each predicted from the jobs that had ended before its submission",
		o.trace, format, len(records), ev.Jobs+ev.Unpredicted, from.UTC().Format(time.RFC3339))
	if ev.Unpredicted > 0 {
		fmt.Fprintf(stdout, " (%d with none, left out)", ev.Unpredicted)
	}
	fmt.Fprintln(stdout, ".")
	if ev.Jobs == 0 {
		fmt.Fprintln(stdout, "No job had a history before it: give a longer history or a shorter --last.")
		return nil
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "predictor\ttypical error\twithin 2x\tGPU-time rank correlation")
	row := func(name string, a jobhistory.Accuracy) {
		fmt.Fprintf(tw, "%s\t%.2fx\t%.0f%%\t%.2f\n", name, math.Exp(a.MeanAbsLog), 100*a.WithinFactor2, a.RankCorrelation)
	}
	row("history (every level)", ev.Predictor)
	row("  namespace, queue and size only", ev.ByLevels[jobhistory.LevelNamespaceSize])
	row("  size only", ev.ByLevels[jobhistory.LevelSize])
	row("  all jobs alike", ev.ByLevels[jobhistory.LevelAll])
	row("global mean (naive)", ev.Baseline)
	tw.Flush()
	fmt.Fprintf(stdout, "\nTypical error: exp of the mean |ln(predicted / actual)| of run time. Answered by level: ")
	for i, l := range jobhistory.Levels {
		if i > 0 {
			fmt.Fprint(stdout, ", ")
		}
		fmt.Fprintf(stdout, "%s %d", l, ev.Answered[l])
	}
	fmt.Fprintln(stdout, ".")
	writeSplit(stdout, ev.Split(o.nodeGPUs, o.holdAbove), o.nodeGPUs, o.holdAbove)
	return nil
}

// writeSplit says how the headroom's threshold would have sorted the
// history's whole-node gangs, and how often wrongly.
func writeSplit(w io.Writer, s jobhistory.Split, nodeGPUs int, above time.Duration) {
	fmt.Fprintf(w, "\nJobs of %d or more GPUs, split at %s %s: ", nodeGPUs, paddle.ArgHeadroomPredictedAbove, above)
	if s.Jobs == 0 {
		fmt.Fprintln(w, "none in the judged part.")
		return
	}
	fmt.Fprintf(w, "%d judged; %d predicted to run less (the headroom lets them start at once), %d of them ran %s or more; "+
		"%d predicted to run %s or more (it may hold them), %d of them ran less.\n",
		s.Jobs, s.PredictedShort, s.PredictedShortRanLong, above, s.PredictedLong, above, s.PredictedLongRanShort)
}

// readRecords reads every record of a history file.
func readRecords(path string) ([]jobhistory.Record, jobhistory.Format, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("--trace: %w (give the history CSV paddle-replay export wrote)", err)
	}
	defer f.Close()
	rd, err := jobhistory.NewReader(f)
	if err != nil {
		return nil, "", fmt.Errorf("--trace %s: %w", path, err)
	}
	records, err := rd.All()
	if err != nil {
		return nil, "", fmt.Errorf("--trace %s: %w", path, err)
	}
	return records, rd.Format(), nil
}
