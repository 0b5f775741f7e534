package paddle

import (
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

func job(plugins map[string][]string, tasks map[string]int32) *batch.Job {
	j := &batch.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "wd"},
		Spec:       batch.JobSpec{SchedulerName: "volcano", Plugins: plugins},
	}
	for _, name := range []string{"ps", "worker"} {
		if n, ok := tasks[name]; ok {
			j.Spec.Tasks = append(j.Spec.Tasks, batch.TaskSpec{Name: name, Replicas: n, Template: v1.PodTemplateSpec{
				Spec: v1.PodSpec{Containers: []v1.Container{{Name: "paddle", Image: "paddle"}}}}})
		}
	}
	return j
}

func review(op admissionv1.Operation, obj, old *batch.Job) admissionv1.AdmissionReview {
	raw := func(j *batch.Job) runtime.RawExtension {
		if j == nil {
			return runtime.RawExtension{}
		}
		b, _ := json.Marshal(j)
		return runtime.RawExtension{Raw: b}
	}
	return admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{
		Operation: op, Namespace: "ml",
		Resource: metav1.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"},
		Object:   raw(obj), OldObject: raw(old),
	}}
}

func TestAdmit(t *testing.T) {
	ok := job(map[string][]string{"paddle": {"--gloo=1"}}, map[string]int32{"ps": 2, "worker": 2})
	cases := []struct {
		name    string
		ar      admissionv1.AdmissionReview
		allowed bool
		want    string
	}{
		{"no paddle plugin", review(admissionv1.Create, job(map[string][]string{"svc": nil}, map[string]int32{"worker": 0}), nil), true, ""},
		{"valid PS job", review(admissionv1.Create, ok, nil), true, ""},
		{"bad argument", review(admissionv1.Create, job(map[string][]string{"paddle": {"--gloo=5"}}, map[string]int32{"ps": 1, "worker": 1}), nil), false,
			"paddle plugin rejected job ml/wd: spec.plugins.paddle[--gloo]"},
		{"gloo in a collective job", review(admissionv1.Create, job(map[string][]string{"paddle": {"--gloo=1"}}, map[string]int32{"worker": 2}), nil), false,
			"spec.plugins.paddle[--gloo]"},
		{"scaling a role", review(admissionv1.Update, job(map[string][]string{"paddle": {"--gloo=1"}}, map[string]int32{"ps": 2, "worker": 4}), ok), false,
			"replicas of Paddle roles cannot change (ps=2,worker=2 -> ps=2,worker=4)"},
		{"update without scaling", review(admissionv1.Update, ok, ok), true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := Admit(tc.ar)
			if resp.Allowed != tc.allowed {
				t.Fatalf("allowed = %v, want %v (%v)", resp.Allowed, tc.allowed, resp.Result)
			}
			if !tc.allowed {
				if resp.Result == nil || !strings.Contains(resp.Result.Message, tc.want) || resp.Result.Code != 422 {
					t.Errorf("result = %+v, want a 422 mentioning %q", resp.Result, tc.want)
				}
			}
		})
	}
}
