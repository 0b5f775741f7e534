package paddlejob

import (
	"context"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

func TestModeResolution(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		tasks    []testbuilders.PaddleTask
		mode     paddleapi.Mode
		ps, tr   string
		heterTsk string
	}{
		{"paddle-operator names", nil, []testbuilders.PaddleTask{{Name: "ps", Replicas: 2}, {Name: "worker", Replicas: 2}}, paddleapi.ModePS, "ps", "worker", ""},
		{"CTR names", nil, []testbuilders.PaddleTask{{Name: "pserver", Replicas: 2}, {Name: "trainer", Replicas: 2}}, paddleapi.ModePS, "pserver", "trainer", ""},
		{"collective", nil, []testbuilders.PaddleTask{{Name: "worker", Replicas: 4}}, paddleapi.ModeCollective, "", "worker", ""},
		{"pserver task with 0 replicas is collective", []string{"--mode=auto"}, []testbuilders.PaddleTask{{Name: "trainer", Replicas: 2}}, paddleapi.ModeCollective, "", "trainer", ""},
		{"heter", nil, []testbuilders.PaddleTask{{Name: "ps", Replicas: 1}, {Name: "worker", Replicas: 2}, {Name: "heter", Replicas: 1}}, paddleapi.ModeHeterPS, "ps", "worker", "heter"},
		{"explicit names", []string{"--ps-task=server", "--trainer-task=gpu"}, []testbuilders.PaddleTask{{Name: "server", Replicas: 1}, {Name: "gpu", Replicas: 2}, {Name: "tensorboard", Replicas: 1}}, paddleapi.ModePS, "server", "gpu", ""},
		{"forced ps", []string{"--mode=ps"}, []testbuilders.PaddleTask{{Name: "ps", Replicas: 1}, {Name: "worker", Replicas: 1}}, paddleapi.ModePS, "ps", "worker", ""},
		{"single node (seed 003)", nil, []testbuilders.PaddleTask{{Name: "trainer", Replicas: 1}}, paddleapi.ModeCollective, "", "trainer", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := newJob("ns", "j", tc.args, tc.tasks...)
			a, errs := parseArgs(tc.args)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			l, errs := ValidateJob(job, a)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if l.Mode != tc.mode {
				t.Errorf("mode %s, want %s", l.Mode, tc.mode)
			}
			name := func(r *RoleTask) string {
				if r == nil {
					return ""
				}
				return r.TaskName
			}
			if name(l.PServer) != tc.ps || name(l.Trainer) != tc.tr || name(l.Heter) != tc.heterTsk {
				t.Errorf("roles ps=%q trainer=%q heter=%q", name(l.PServer), name(l.Trainer), name(l.Heter))
			}
		})
	}
}

// Checking the template env stops when the request's context ends, with
// an error that says so, instead of running on after the client left.
func TestValidateStopsWithContext(t *testing.T) {
	j := newJob("ml", "big", nil, testbuilders.PaddleTask{Name: "trainer", Replicas: 3000,
		Env: []v1.EnvVar{{Name: EnvPort, Value: strconv.Itoa(DefaultPort)}}})
	a, _ := parseArgs(nil)
	if _, errs := ValidateJobContext(context.Background(), j, a); len(errs) > 0 {
		t.Fatalf("valid job refused: %v", errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, errs := ValidateJobContext(ctx, j, a)
	if len(errs) != 1 || errs[0].Type != field.ErrorTypeInternal || !strings.Contains(errs[0].Error(), "context canceled") {
		t.Errorf("errors with an ended context: %v", errs)
	}
}

// The list facts of TestLargeJobs (pkg/controllers/job/plugins/paddle,
// which runs the job through the plugin's hooks): a PS job whose trainer
// lists are too long for an environment variable leaves them out and its
// barrier waits for the pservers.
func TestLargeJobListFacts(t *testing.T) {
	ps := newJob("ml", "ctr", nil, testbuilders.PaddleTask{Name: "pserver", Replicas: 10}, testbuilders.PaddleTask{Name: "trainer", Replicas: 10000})
	a, _ := parseArgs(nil)
	l, errs := ValidateJob(ps, a)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// Checking is pure: the facts it returns decide a new layout, and the
	// resolved layout it was given is left as it was.
	resolved, _ := resolveLayout(ps, a)
	before := *resolved
	facts, errs := checkListSizes(resolved)
	if len(errs) > 0 || !facts.narrowBarrier || !facts.omitted[listTrainerHosts] {
		t.Errorf("list facts of a 10,000-trainer PS job: %+v %v", facts, errs)
	}
	if resolved.sizes.narrowBarrier || resolved.sizes.omitted != nil || resolved.Mode != before.Mode {
		t.Errorf("checkListSizes changed the layout it checked: %+v", resolved.sizes)
	}
	if w := sizeWarnings(l); len(w) != 2 || !strings.Contains(w[1], "python train.py") || !strings.Contains(w[0], "pservers only") {
		t.Errorf("warnings: %q", w)
	}
}
