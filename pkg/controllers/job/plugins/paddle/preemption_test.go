package paddle

import (
	"strings"
	"testing"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Every pod the plugin creates says whether the scheduler may take it:
// volcano.sh/preemptable "true" only on an elastic job's trainers and on
// every pod of a --checkpointable job, "false" everywhere else (Volcano
// takes a pod without it as preemptable); the checkpointable label only
// with --checkpointable.
func TestPreemptionOptIn(t *testing.T) {
	cases := []struct {
		name string
		job  func() *batch.Job
		// per task: volcano.sh/preemptable, checkpointable label.
		want map[string][2]string
	}{
		{name: "a job that opted in to nothing", job: func() *batch.Job {
			return newJob("ml", "plain", nil, taskSpec{name: "worker", replicas: 2, gpus: 1})
		}, want: map[string][2]string{"worker": {"false", ""}}},
		{name: "a parameter-server job with --checkpointable: every pod", job: func() *batch.Job {
			return newJob("ml", "ps", []string{"--checkpointable"}, taskSpec{name: "ps", replicas: 1}, taskSpec{name: "worker", replicas: 2, gpus: 1})
		}, want: map[string][2]string{"ps": {"true", "true"}, "worker": {"true", "true"}}},
		{name: "an elastic job: its trainers", job: func() *batch.Job {
			return elasticJob("el", 1, 2, 4)
		}, want: map[string][2]string{"worker": {"true", ""}}},
		{name: "a checkpointable elastic job", job: func() *batch.Job {
			return elasticJob("elck", 1, 2, 4, "--checkpointable")
		}, want: map[string][2]string{"worker": {"true", "true"}}},
		{name: "a helper task of an elastic job is never taken", job: func() *batch.Job {
			j := elasticJob("elh", 1, 2, 4)
			j.Spec.Tasks = append(j.Spec.Tasks, *testbuilders.MakeTask("tensorboard", 1).Obj())
			return j
		}, want: map[string][2]string{"worker": {"true", ""}, "tensorboard": {"false", ""}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, pods := mustRun(t, tc.job())
			seen := map[string]bool{}
			for _, pod := range pods {
				task := pod.Annotations[batch.TaskSpecKey]
				want, ok := tc.want[task]
				if !ok {
					t.Fatalf("pod %s of unexpected task %q", pod.Name, task)
				}
				seen[task] = true
				if got := pod.Annotations[scheduling.PodPreemptable]; got != want[0] {
					t.Errorf("%s: %s=%q, want %q", pod.Name, scheduling.PodPreemptable, got, want[0])
				}
				if got := pod.Labels[paddleapi.CheckpointableLabel]; got != want[1] {
					t.Errorf("%s: %s=%q, want %q", pod.Name, paddleapi.CheckpointableLabel, got, want[1])
				}
			}
			for task := range tc.want {
				if !seen[task] {
					t.Errorf("no pod of task %s", task)
				}
			}
		})
	}
}

// The argument parses; anything but a boolean is refused with the flag's
// name, as the webhook reports it.
func TestCheckpointableArg(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
		bad  bool
	}{
		{args: nil},
		{args: []string{"--checkpointable"}, want: true},
		{args: []string{"--checkpointable=false"}},
		{args: []string{"--checkpointable=maybe"}, bad: true},
	} {
		a, errs := ParseArgs(tc.args)
		if tc.bad {
			if len(errs) == 0 {
				t.Errorf("%v: accepted", tc.args)
			}
			continue
		}
		if len(errs) > 0 || a.Checkpointable != tc.want {
			t.Errorf("%v: checkpointable=%v errs=%v, want %v", tc.args, a != nil && a.Checkpointable, errs, tc.want)
		}
	}
}

// A --checkpointable job restarts whole when the scheduler preempts one of
// its pods: without a PodEvicted policy of its own it gets PodEvicted ->
// RestartJob at admission, with a warning that names maxRetry.
func TestCheckpointRestartDefault(t *testing.T) {
	evicted := batch.LifecyclePolicy{Event: bus.PodEvictedEvent, Action: bus.RestartJobAction}
	failed := batch.LifecyclePolicy{Event: bus.PodFailedEvent, Action: bus.RestartJobAction}
	cases := []struct {
		name     string
		args     []string
		job      func(*batch.Job)
		wantPath string // "" no default
	}{
		{name: "no policies", args: []string{"--checkpointable"}, wantPath: "/spec/policies"},
		{name: "other policies", args: []string{"--checkpointable"}, job: func(j *batch.Job) { j.Spec.Policies = []batch.LifecyclePolicy{failed} }, wantPath: "/spec/policies/-"},
		{name: "its own PodEvicted policy", args: []string{"--checkpointable"}, job: func(j *batch.Job) { j.Spec.Policies = []batch.LifecyclePolicy{evicted} }},
		{name: "a task's PodEvicted policy", args: []string{"--checkpointable"}, job: func(j *batch.Job) { j.Spec.Tasks[0].Policies = []batch.LifecyclePolicy{evicted} }},
		{name: "an AnyEvent policy", args: []string{"--checkpointable"}, job: func(j *batch.Job) {
			j.Spec.Policies = []batch.LifecyclePolicy{{Event: bus.AnyEvent, Action: bus.RestartJobAction}}
		}},
		{name: "not checkpointable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := newJob("ml", "ck", tc.args, taskSpec{name: "worker", replicas: 2, gpus: 1})
			if tc.job != nil {
				tc.job(job)
			}
			a, errs := ParseArgs(tc.args) // every case's arguments are valid
			l, invalid := ValidateJob(job, a)
			if errs = append(errs, invalid...); len(errs) > 0 {
				t.Fatal(errs)
			}
			var got []Defaulted
			for _, d := range Defaults(job, a, l) {
				if strings.HasPrefix(d.Patch.Path, "/spec/policies") {
					got = append(got, d)
				}
			}
			switch {
			case tc.wantPath == "" && len(got) > 0:
				t.Errorf("defaulted %+v, want nothing", got)
			case tc.wantPath != "" && (len(got) != 1 || got[0].Patch.Path != tc.wantPath || !strings.Contains(got[0].Warning, "maxRetry (3)")):
				t.Errorf("defaulted %+v, want one patch at %s whose warning names maxRetry (3)", got, tc.wantPath)
			}
		})
	}
}
