package paddlejob

import (
	"strings"
	"testing"
	"time"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

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
		a, errs := parseArgs(tc.args)
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

// --restart-cost belongs to --checkpointable jobs, within (0, 24h]; the
// error names the flag and what to do.
func TestRestartCostArg(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    time.Duration
		wantErr string
	}{
		{args: []string{"--checkpointable"}, want: paddleapi.DefaultRestartCost},
		{args: []string{"--checkpointable", "--restart-cost=12m"}, want: 12 * time.Minute},
		{args: []string{"--checkpointable", "--restart-cost=24h"}, want: 24 * time.Hour},
		{args: []string{"--restart-cost=12m"}, wantErr: "add --checkpointable or drop --restart-cost"},
		{args: []string{"--checkpointable", "--restart-cost=-1m"}, wantErr: "must be a duration above 0 and at most 24h0m0s"},
		{args: []string{"--checkpointable", "--restart-cost=25h"}, wantErr: "must be a duration above 0 and at most 24h0m0s"},
		{args: []string{"--checkpointable", "--restart-cost=soon"}, wantErr: "invalid value"},
	} {
		a, errs := parseArgs(tc.args)
		if tc.wantErr != "" {
			if !strings.Contains(errs.ToAggregate().Error(), tc.wantErr) || !strings.Contains(errs.ToAggregate().Error(), "restart-cost") {
				t.Errorf("%v: errors %v, want one about --restart-cost saying %q", tc.args, errs, tc.wantErr)
			}
			continue
		}
		if len(errs) > 0 || a.restartCost() != tc.want {
			t.Errorf("%v: restart cost %v, errors %v; want %v", tc.args, a.restartCost(), errs, tc.want)
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
			job := newJob("ml", "ck", tc.args, testbuilders.PaddleTask{Name: "worker", Replicas: 2, GPUs: 1})
			if tc.job != nil {
				tc.job(job)
			}
			a, errs := parseArgs(tc.args) // every case's arguments are valid
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
