package historyexport

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"

	tb "github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// job is a collective Paddle job of 2 one-GPU trainers in namespace ns,
// created at t0, in phase since s (Running from 5 s).
func job(ns, name string, phase batch.JobPhase, s int) *batch.Job {
	j := tb.MakeJob(ns, name).Queue("q").Plugin("paddle").Task(tb.MakeTask("trainer", 2).GPUs(1)).Obj()
	j.CreationTimestamp = metav1.NewTime(t0)
	// Conditions as Volcano v1.14 writes them, one per status change.
	created, run, end := metav1.NewTime(t0), metav1.NewTime(at(5)), metav1.NewTime(at(s))
	j.Status.Conditions = []batch.JobCondition{{Status: batch.Pending, LastTransitionTime: &created}, {Status: batch.Pending, LastTransitionTime: &created},
		{Status: batch.Running, LastTransitionTime: &run}, {Status: phase, LastTransitionTime: &end}}
	j.Status.State = batch.JobState{Phase: phase, LastTransitionTime: end}
	return j
}

// trainer is replica i of j's trainers, started at from, Succeeded at to.
func trainer(j *batch.Job, i, from, to int) *corev1.Pod {
	p := tb.MakePod().Name(j.Name+"-trainer-"+strconv.Itoa(i)).Namespace(j.Namespace).Task("trainer", i).
		Label(batch.JobNameKey, j.Name).Started(at(from)).Phase(corev1.PodSucceeded)
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(j, batch.SchemeGroupVersion.WithKind("Job"))}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "paddle", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at(to))}}}}
	return p.Obj()
}

// pagedJobs makes the fake Volcano client list jobs in pages of Limit
// with continue tokens, as the API server does (the fake returns all).
func pagedJobs(vc *vcfake.Clientset, all []*batch.Job, calls *int) {
	vc.PrependReactor("list", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
		*calls++
		opts := a.(k8stesting.ListActionImpl).ListOptions
		from, _ := strconv.Atoi(opts.Continue)
		to := min(len(all), from+int(opts.Limit))
		out := &batch.JobList{}
		for _, j := range all[from:to] {
			out.Items = append(out.Items, *j)
		}
		if to < len(all) {
			out.Continue = strconv.Itoa(to)
		}
		return true, out, nil
	})
}

func TestExport(t *testing.T) {
	done := job("ml", "done", batch.Completed, 60)
	gone := job("ml", "gone", batch.Failed, 50) // its pods are gone
	old := job("ml", "old", batch.Completed, 20)
	running := job("ml", "running", batch.Running, 5)
	cpu := job("ml", "cpu", batch.Completed, 60)
	cpu.Spec.Tasks[0] = *tb.MakeTask("trainer", 2).Obj()
	elsewhere := job("other", "done", batch.Completed, 60)
	jobs := []*batch.Job{done, gone, old, running, cpu, elsewhere}
	pods := []runtime.Object{
		trainer(done, 0, 6, 55), trainer(done, 1, 7, 58),
		trainer(old, 0, 6, 19), trainer(old, 1, 6, 19),
		trainer(elsewhere, 0, 1, 59), trainer(elsewhere, 1, 1, 59),
	}

	for _, tc := range []struct {
		name      string
		opts      Options
		wantNames []string
		wantSkips map[jobhistory.SkipReason]int
		wantCalls int
	}{
		{
			name:      "everything, two jobs a page",
			opts:      Options{PageSize: 2},
			wantNames: []string{"done", "gone", "old", "done"},
			wantSkips: map[jobhistory.SkipReason]int{jobhistory.SkipUnfinished: 1, jobhistory.SkipNoGPUs: 1},
			wantCalls: 3, // 6 jobs
		},
		{
			name:      "one namespace, ended in the last 35 s",
			opts:      Options{Namespace: "ml", Since: 35 * time.Second, Now: at(60)},
			wantNames: []string{"done", "gone"},
			wantSkips: map[jobhistory.SkipReason]int{jobhistory.SkipUnfinished: 1, jobhistory.SkipNoGPUs: 1, SkipBeforeSince: 1},
			wantCalls: 1,
		},
		{
			name:      "names left out",
			opts:      Options{Namespace: "other", OmitNames: true},
			wantNames: []string{""},
			wantSkips: map[jobhistory.SkipReason]int{},
			wantCalls: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vc := vcfake.NewSimpleClientset()
			var listed []*batch.Job
			for _, j := range jobs {
				if tc.opts.Namespace == "" || j.Namespace == tc.opts.Namespace {
					listed = append(listed, j)
				}
			}
			calls := 0
			pagedJobs(vc, listed, &calls)
			var buf bytes.Buffer
			w := jobhistory.NewWriter(&buf)
			sum, err := Export(context.Background(), k8sfake.NewSimpleClientset(pods...), vc, w, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			recs, err := jobhistory.Read(&buf)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range recs {
				names = append(names, r.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.wantNames, ",") || sum.Exported != len(recs) {
				t.Errorf("exported %v (summary %d), want %v", names, sum.Exported, tc.wantNames)
			}
			if len(sum.Skipped) != len(tc.wantSkips) {
				t.Errorf("skipped %v, want %v", sum.Skipped, tc.wantSkips)
			}
			for r, n := range tc.wantSkips {
				if sum.Skipped[r] != n {
					t.Errorf("skipped %v, want %v", sum.Skipped, tc.wantSkips)
				}
			}
			if calls != tc.wantCalls {
				t.Errorf("%d list calls of jobs, want %d", calls, tc.wantCalls)
			}
			for _, r := range recs {
				if r.Namespace == "ml" && r.Name == "done" && (r.Start != at(6) || r.Duration != 52*time.Second || r.TimesFrom != jobhistory.TimesFromPods) {
					t.Errorf("ml/done: %+v, want 6 s to 58 s from its pods", r)
				}
				if r.Name == "gone" && (r.Start != at(5) || r.Duration != 45*time.Second || r.TimesFrom != jobhistory.TimesFromStatus) {
					t.Errorf("gone: %+v, want 5 s to 50 s from its status", r)
				}
			}
		})
	}
}

func TestSummaryString(t *testing.T) {
	s := Summary{Exported: 3,
		TimesFrom: map[jobhistory.TimesFrom]int{jobhistory.TimesFromPods: 2, jobhistory.TimesFromStatus: 1},
		Skipped:   map[jobhistory.SkipReason]int{jobhistory.SkipUnfinished: 4, jobhistory.SkipNoGPUs: 1}}
	want := "exported 3 jobs (times from their pods: 2, from the job status: 1, start from pods and end from status: 0); skipped 5 (no-gpus 1, unfinished 4)"
	if got := s.String(); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
