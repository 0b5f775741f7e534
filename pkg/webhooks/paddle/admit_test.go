package paddle

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/admissiontest"
	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// job is a job "wd" with the plugins given and tasks ps and worker of the
// replicas given (testbuilders).
func job(plugins map[string][]string, tasks map[string]int32) *batch.Job {
	w := testbuilders.MakeJob("", "wd")
	for name, args := range plugins {
		w.Plugin(name, args...)
	}
	for _, name := range []string{"ps", "worker"} {
		if n, ok := tasks[name]; ok {
			w.Task(testbuilders.MakeTask(name, n))
		}
	}
	return w.Obj()
}

func TestAdmit(t *testing.T) {
	ok := job(map[string][]string{"paddle": {"--gloo=1"}}, map[string]int32{"ps": 2, "worker": 2})
	invalid := job(map[string][]string{"paddle": {"--gloo=1"}}, map[string]int32{"worker": 2}) // gloo in a collective job
	labelled := invalid.DeepCopy()
	labelled.Labels = map[string]string{"team": "ads"}
	deleting := invalid.DeepCopy()
	deleting.Finalizers = []string{metav1.FinalizerDeleteDependents}
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	withGPUs := func(q string) *batch.Job {
		j := ok.DeepCopy()
		r := v1.ResourceList{"nvidia.com/gpu": resource.MustParse(q)}
		j.Spec.Tasks[1].Template.Spec.Containers[0].Resources = v1.ResourceRequirements{Limits: r, Requests: r}
		return j
	}
	named := func(name string) *batch.Job { j := ok.DeepCopy(); j.Name = name; return j }
	borrowing := job(map[string][]string{"svc": nil}, map[string]int32{"worker": 1})
	borrowing.Spec.Tasks[0].Template.Labels = map[string]string{paddleapi.ModeLabel: "collective"}
	cases := []struct {
		name    string
		ar      admissionv1.AdmissionReview
		allowed bool
		want    string // in the message
		field   string // a cause of the Invalid status
	}{
		{"no paddle plugin", admissiontest.JobReview(admissionv1.Create, job(map[string][]string{"svc": nil}, map[string]int32{"worker": 0}), nil), true, "", ""},
		{"plain job with the plugin's mode label", admissiontest.JobReview(admissionv1.Create, borrowing, nil), false,
			"the paddle scheduler plugin trusts it", "spec.tasks[0].template.metadata.labels[paddle.volcano.sh/mode]"},
		{"valid PS job", admissiontest.JobReview(admissionv1.Create, ok, nil), true, "", ""},
		{"bad argument", admissiontest.JobReview(admissionv1.Create, job(map[string][]string{"paddle": {"--gloo=5"}}, map[string]int32{"ps": 1, "worker": 1}), nil), false,
			"paddle plugin rejected job ml/wd: spec.plugins.paddle[--gloo]", "spec.plugins.paddle[--gloo]"},
		{"duplicate flag", admissiontest.JobReview(admissionv1.Create, job(map[string][]string{"paddle": {"--port=30000", "--port=40000"}}, map[string]int32{"ps": 1, "worker": 1}), nil), false,
			"given more than once", "spec.plugins.paddle"},
		{"gloo in a collective job", admissiontest.JobReview(admissionv1.Create, invalid, nil), false, "spec.plugins.paddle[--gloo]", "spec.plugins.paddle[--gloo]"},
		{"1e18 GPUs", admissiontest.JobReview(admissionv1.Create, withGPUs("1e18"), nil), false,
			"GPUs per container must be between 0 and 256", "spec.tasks[1].template.spec.containers[0].resources.limits[nvidia.com/gpu]"},
		{"half a GPU", admissiontest.JobReview(admissionv1.Create, withGPUs("500m"), nil), false, "whole devices", "spec.tasks[1].template.spec.containers[0].resources.requests[nvidia.com/gpu]"},
		{"name starting with a digit", admissiontest.JobReview(admissionv1.Create, named("1paddle"), nil), false, `DNS-1035`, "metadata.name"},
		{"scaling a role", admissiontest.JobReview(admissionv1.Update, job(map[string][]string{"paddle": {"--gloo=1"}}, map[string]int32{"ps": 2, "worker": 4}), ok), false,
			`task "worker" (Paddle trainer) cannot change from 2 to 4 replicas`, "spec.tasks[1].replicas"},
		{"update without scaling", admissiontest.JobReview(admissionv1.Update, ok, ok), true, "", ""},
		{"label on a job current rules refuse", admissiontest.JobReview(admissionv1.Update, labelled, invalid), true, "", ""},
		{"foreground deletion of a job current rules refuse", admissiontest.JobReview(admissionv1.Update, deleting, invalid), true, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := Admit(context.Background(), tc.ar)
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%v)", resp.Allowed, tc.allowed, resp.Result)
			}
			if tc.allowed {
				return
			}
			if resp.Result == nil || !strings.Contains(resp.Result.Message, tc.want) || resp.Result.Code != 422 || resp.Result.Reason != metav1.StatusReasonInvalid {
				t.Fatalf("result = %+v, want a 422 Invalid mentioning %q", resp.Result, tc.want)
			}
			if resp.Result.Details == nil {
				t.Fatalf("no per-field causes: %+v", resp.Result)
			}
			for _, c := range resp.Result.Details.Causes {
				if c.Field == tc.field {
					return
				}
			}
			t.Errorf("causes %+v name no field %s", resp.Result.Details.Causes, tc.field)
		})
	}
}

func TestAdmitWarnings(t *testing.T) {
	j := job(map[string][]string{"paddle": nil}, map[string]int32{"ps": 2, "worker": 2})
	j.Spec.MinAvailable = 2
	j.Spec.Tasks[0].Template.Spec.RestartPolicy = v1.RestartPolicyOnFailure
	j.Spec.Tasks[1].Template.Spec.Containers[0].Command = []string{"/bin/sh", "-c", "cd /work && python train.py"}
	j.Spec.Tasks[1].Policies = []batch.LifecyclePolicy{{Event: bus.PodFailedEvent, Action: bus.RestartPodAction}}
	admitWarns(t, j,
		"spec.minAvailable: 2 is below the 4 pods",
		"spec.tasks[0].template.spec.restartPolicy: OnFailure",
		"spec.tasks[1].template.spec.containers[0]: the shell runs the trainer without exec",
		"spec.tasks[1].policies: RestartPod",
		`no TaskCompleted -> CompleteJob on the trainer task "worker"`)

	clean := job(map[string][]string{"paddle": nil}, map[string]int32{"ps": 2, "worker": 2})
	clean.Spec.Tasks[1].Template.Spec.Containers[0].Command = []string{"sh", "-c", "cd /work\nexec python train.py"}
	clean.Spec.Tasks[1].Policies = []batch.LifecyclePolicy{{Event: bus.TaskCompletedEvent, Action: bus.CompleteJobAction}}
	if resp := Admit(context.Background(), admissiontest.JobReview(admissionv1.Create, clean, nil)); len(resp.Warnings) != 0 {
		t.Errorf("warnings for a clean job: %q", resp.Warnings)
	}
}

// The size warnings the controller computes for a 1 ps + 10,000 trainer
// job (trainer lists left out, barrier narrowed to the pservers) reach
// `kubectl apply` through the admission response (issue 24).
func TestAdmitShowsSizeWarnings(t *testing.T) {
	j := job(map[string][]string{"paddle": nil}, map[string]int32{"ps": 1, "worker": 10000})
	j.Spec.Tasks[1].Policies = []batch.LifecyclePolicy{{Event: bus.TaskCompletedEvent, Action: bus.CompleteJobAction}}
	admitWarns(t, j,
		"spec.tasks[1]: the barrier init container waits for the 1 pservers only",
		"spec.tasks[1]: the trainer lists of 10000 trainers exceed what Linux lets one environment variable hold")
}

// admitWarns: the validating admission allows j, and its warnings contain
// each of want.
func admitWarns(t *testing.T, j *batch.Job, want ...string) {
	t.Helper()
	resp := Admit(context.Background(), admissiontest.JobReview(admissionv1.Create, j, nil))
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	all := strings.Join(resp.Warnings, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("warnings lack %q:\n%s", w, all)
		}
	}
}

// The mutating admission gives a PS job's trainers TaskCompleted ->
// CompleteJob, unless turned off or the task has its own TaskCompleted,
// and labels every valid Paddle job with its mode, silently (the label
// restates the spec; the scheduler reads it from the job's PodGroup).
func TestMutate(t *testing.T) {
	withPolicies := func(args []string, p ...batch.LifecyclePolicy) *batch.Job {
		j := job(map[string][]string{"paddle": args}, map[string]int32{"ps": 1, "worker": 2})
		j.Spec.Tasks[1].Policies = p
		return j
	}
	completes := batch.LifecyclePolicy{Event: bus.TaskCompletedEvent, Action: bus.CompleteJobAction}
	failed := batch.LifecyclePolicy{Event: bus.PodFailedEvent, Action: bus.RestartJobAction}
	cases := []struct {
		name string
		job  *batch.Job
		want []batch.LifecyclePolicy // trainer policies after the patch; nil = no patch
	}{
		{"PS job without policies", withPolicies(nil), []batch.LifecyclePolicy{completes}},
		{"PS job with other policies", withPolicies(nil, failed), []batch.LifecyclePolicy{failed, completes}},
		{"own TaskCompleted kept", withPolicies(nil, batch.LifecyclePolicy{Event: bus.TaskCompletedEvent, Action: bus.TerminateJobAction}), nil},
		{"any-event policy kept", withPolicies(nil, batch.LifecyclePolicy{Event: bus.AnyEvent, Action: bus.RestartJobAction}), nil},
		{"turned off", withPolicies([]string{"--trainer-completes-job=false"}), nil},
		{"collective job", job(map[string][]string{"paddle": nil}, map[string]int32{"worker": 2}), nil},
		{"invalid job", withPolicies([]string{"--gloo=7"}), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := Mutate(context.Background(), admissiontest.JobReview(admissionv1.Create, tc.job, nil))
			if !resp.Allowed {
				t.Fatalf("mutating admission denied: %v", resp.Result)
			}
			if tc.name == "invalid job" {
				if resp.Patch != nil || len(resp.Warnings) != 0 {
					t.Fatalf("patched: %s, warnings %q", resp.Patch, resp.Warnings)
				}
				return
			}
			labelled := admissiontest.ApplyPatch(t, tc.job, resp.Patch)
			mode := "ps"
			if tc.name == "collective job" {
				mode = "collective"
			}
			if got := labelled.Labels[paddleapi.ModeLabel]; got != mode {
				t.Errorf("label %s=%q, want %q", paddleapi.ModeLabel, got, mode)
			}
			if tc.want == nil {
				gotP, _ := json.Marshal(labelled.Spec)
				wantP, _ := json.Marshal(tc.job.Spec)
				if len(resp.Warnings) != 0 || !bytes.Equal(gotP, wantP) {
					t.Fatalf("the spec was changed (%s) or warned of: %q", resp.Patch, resp.Warnings)
				}
				return
			}
			// Every defaulted field is said (issue 28, item 5).
			if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], `spec.tasks[1].policies: added TaskCompleted -> CompleteJob on the trainer task "worker"`) ||
				!strings.Contains(resp.Warnings[0], "--trainer-completes-job=false") {
				t.Errorf("warnings of the defaulted policy: %q", resp.Warnings)
			}
			got := admissiontest.ApplyPatch(t, tc.job, resp.Patch)
			gotP, _ := json.Marshal(got.Spec.Tasks[1].Policies)
			wantP, _ := json.Marshal(tc.want)
			if !bytes.Equal(gotP, wantP) {
				t.Errorf("trainer policies = %s, want %s", gotP, wantP)
			}
		})
	}
}

// The handler bounds what it reads and answers with the request's UID; a
// request whose client has gone is dropped without running.
func TestHandlerBudget(t *testing.T) {
	h := Handler(Admit)
	post := func(ctx context.Context, body []byte) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, Path+"?timeout=10s", bytes.NewReader(body)).WithContext(ctx)
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h(w, r)
		return w
	}
	ar := admissiontest.JobReview(admissionv1.Create, job(map[string][]string{"paddle": {"--gloo=5"}}, map[string]int32{"ps": 1, "worker": 1}), nil)
	body, _ := json.Marshal(ar)
	w := post(context.Background(), body)
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("response %q: %v", w.Body.String(), err)
	}
	if out.Response.UID != "req-1" || out.Response.Allowed || out.Kind != "AdmissionReview" {
		t.Errorf("response = %+v", out)
	}

	if w := post(context.Background(), bytes.Repeat([]byte(" "), MaxRequestBytes+1)); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized request: status %d", w.Code)
	}

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	r := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)).WithContext(gone)
	r.Header.Set("Content-Type", "application/json")
	w = httptest.NewRecorder()
	Handler(func(ctx context.Context, ar admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		ran = true
		return Admit(ctx, ar)
	})(w, r)
	if w.Body.Len() != 0 {
		t.Errorf("answered a client that left: %q", w.Body.String())
	}
	_ = ran // whether it started depends on the select; either way nothing was sent

	if d := budget(httptest.NewRequest(http.MethodPost, Path+"?timeout=3s", nil)); d != 3*time.Second {
		t.Errorf("budget from ?timeout=3s = %s", d)
	}
	if d := budget(httptest.NewRequest(http.MethodPost, Path+"?timeout=1h", nil)); d != maxBudget {
		t.Errorf("budget from ?timeout=1h = %s", d)
	}
}

// A job the size the issue reported (10,000 replicas, a Paddle variable
// set in the template: quadratic before) is answered within the request's
// budget, not with "context deadline exceeded"; one past the bounds is
// refused before anything is built, naming the field.
func TestAdmitLargeJobs(t *testing.T) {
	big := func(n int32) *batch.Job {
		j := job(map[string][]string{"paddle": nil}, map[string]int32{"ps": 1, "worker": n})
		j.Spec.Tasks[1].Template.Spec.Containers[0].Env = []v1.EnvVar{{Name: "PADDLE_PORT", Value: "36000"}}
		return j
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp := Admit(ctx, admissiontest.JobReview(admissionv1.Create, big(10000), nil)); !resp.Allowed && (resp.Result.Code != 422 || resp.Result.Details == nil) {
		t.Errorf("10000 replicas: %+v", resp.Result)
	}
	resp := Admit(ctx, admissiontest.JobReview(admissionv1.Create, big(1<<30), nil))
	if resp.Allowed || resp.Result.Code != 422 || resp.Result.Details == nil || len(resp.Result.Details.Causes) == 0 ||
		resp.Result.Details.Causes[0].Field != "spec.tasks[1].replicas" {
		t.Fatalf("2^30 replicas: %+v", resp.Result)
	}
}
