// Package historyexport lists a cluster's Volcano Jobs and their pods and
// writes the finished ones as a history (pkg/jobhistory): what
// `paddle-replay export` runs, and what the end-to-end test calls against
// its local cluster.
package historyexport

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
)

// SkipBeforeSince counts the finished jobs that ended before Options.Since.
const SkipBeforeSince jobhistory.SkipReason = "ended-before-since"

// DefaultPageSize is how many jobs (and pods of one job) one list call
// returns: the page size kubectl uses (--chunk-size 500).
const DefaultPageSize = 500

// Options select the jobs to export.
type Options struct {
	// Namespace limits the export to one namespace ("" for all).
	Namespace string
	// Since keeps the jobs that ended within this long before Now (0 for
	// all).
	Since time.Duration
	// Now is the end of the Since window (zero: the current time).
	Now time.Time
	// PageSize is the Limit of each list call (0: DefaultPageSize).
	PageSize int64
	// OmitNames leaves the name column empty.
	OmitNames bool
	// Skipped, when set, is told of each job left out and why.
	Skipped func(job *batch.Job, why *jobhistory.Skip)
}

// Summary is what an export did.
type Summary struct {
	Exported int
	// TimesFrom counts the exported jobs by where their times came from.
	TimesFrom map[jobhistory.TimesFrom]int
	// Skipped counts the jobs left out, by reason.
	Skipped map[jobhistory.SkipReason]int
}

// String is the summary in one line, as the command prints it.
func (s Summary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exported %d jobs", s.Exported)
	if s.Exported > 0 {
		fmt.Fprintf(&b, " (times from their pods: %d, from the job status: %d, start from pods and end from status: %d)",
			s.TimesFrom[jobhistory.TimesFromPods], s.TimesFrom[jobhistory.TimesFromStatus], s.TimesFrom[jobhistory.TimesFromMixed])
	}
	skipped := 0
	reasons := make([]string, 0, len(s.Skipped))
	for r, n := range s.Skipped {
		skipped += n
		reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(reasons)
	fmt.Fprintf(&b, "; skipped %d", skipped)
	if skipped > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(reasons, ", "))
	}
	return b.String()
}

// Export lists the Volcano Jobs page by page, reads the pods of each
// finished one, and writes a record per exportable job to w as it goes,
// so that memory holds one page of jobs and one job's pods. w is not
// flushed.
func Export(ctx context.Context, kube kubernetes.Interface, vc vcclient.Interface, w *jobhistory.Writer, o Options) (Summary, error) {
	sum := Summary{TimesFrom: map[jobhistory.TimesFrom]int{}, Skipped: map[jobhistory.SkipReason]int{}}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	var cutoff time.Time
	if o.Since > 0 {
		now := o.Now
		if now.IsZero() {
			now = time.Now()
		}
		cutoff = now.Add(-o.Since)
	}
	opts := metav1.ListOptions{Limit: o.PageSize}
	for {
		page, err := vc.BatchV1alpha1().Jobs(o.Namespace).List(ctx, opts)
		if err != nil {
			return sum, listError("Volcano Jobs", o.Namespace, err)
		}
		for i := range page.Items {
			job := &page.Items[i]
			rec, err := exportJob(ctx, kube, job, cutoff)
			var skip *jobhistory.Skip
			switch {
			case errors.As(err, &skip):
				sum.Skipped[skip.Reason]++
				if o.Skipped != nil {
					o.Skipped(job, skip)
				}
				continue
			case err != nil:
				return sum, err
			}
			if o.OmitNames {
				rec.Name = ""
			}
			if err := w.Write(rec); err != nil {
				return sum, fmt.Errorf("job %s/%s: %w", job.Namespace, job.Name, err)
			}
			sum.Exported++
			sum.TimesFrom[rec.TimesFrom]++
		}
		if page.Continue == "" {
			return sum, nil
		}
		opts.Continue = page.Continue
	}
}

// exportJob is one job's record, or a *jobhistory.Skip.
func exportJob(ctx context.Context, kube kubernetes.Interface, job *batch.Job, cutoff time.Time) (jobhistory.Record, error) {
	if !jobhistory.Finished(job) {
		return jobhistory.FromJob(job, nil) // the reason, without reading pods
	}
	// A job's pods end before Volcano records its end, so a job whose
	// last transition is before the cutoff ended before it: no need to
	// read its pods.
	if !cutoff.IsZero() && job.Status.State.LastTransitionTime.Time.Before(cutoff) {
		return jobhistory.Record{}, &jobhistory.Skip{Reason: SkipBeforeSince, Detail: "last transition " + job.Status.State.LastTransitionTime.UTC().Format(time.RFC3339)}
	}
	pods, err := jobPods(ctx, kube, job)
	if err != nil {
		return jobhistory.Record{}, err
	}
	rec, err := jobhistory.FromJob(job, pods)
	if err != nil {
		return rec, err
	}
	if !cutoff.IsZero() && rec.End().Before(cutoff) {
		return jobhistory.Record{}, &jobhistory.Skip{Reason: SkipBeforeSince, Detail: "ended " + rec.End().Format(time.RFC3339)}
	}
	return rec, nil
}

// jobPods are the pods Volcano created for the job: those with its name
// in the volcano.sh/job-name label (Volcano's createJobPod,
// pkg/controllers/job/job_controller_util.go), which FromJob narrows to
// the job's own by owner UID.
func jobPods(ctx context.Context, kube kubernetes.Interface, job *batch.Job) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	opts := metav1.ListOptions{LabelSelector: batch.JobNameKey + "=" + job.Name, Limit: DefaultPageSize}
	for {
		page, err := kube.CoreV1().Pods(job.Namespace).List(ctx, opts)
		if err != nil {
			return nil, listError("pods of job "+job.Name, job.Namespace, err)
		}
		for i := range page.Items {
			out = append(out, &page.Items[i])
		}
		if page.Continue == "" {
			return out, nil
		}
		opts.Continue = page.Continue
	}
}

func listError(what, ns string, err error) error {
	where := "all namespaces"
	if ns != "" {
		where = "namespace " + ns
	}
	if apierrors.IsResourceExpired(err) {
		// The API server keeps a list's continue token only while etcd
		// keeps its revision (compaction, 5 minutes by default).
		return fmt.Errorf("listing %s in %s: %w (the export took longer than the API server keeps a list open: run it again with --namespace or --since to export less at once)", what, where, err)
	}
	return fmt.Errorf("listing %s in %s: %w (the export needs list on jobs.batch.volcano.sh and pods there)", what, where, err)
}
