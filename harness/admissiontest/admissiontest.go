// Package admissiontest plays the API server's side of admission for tests:
// an AdmissionReview of a Volcano Job, and a webhook's JSON patch applied as
// the API server applies it.
package admissiontest

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// JobReview is the AdmissionReview the API server sends for op on a Job in
// namespace ml; old is nil on create.
func JobReview(op admissionv1.Operation, obj, old *batch.Job) admissionv1.AdmissionReview {
	raw := func(j *batch.Job) runtime.RawExtension {
		if j == nil {
			return runtime.RawExtension{}
		}
		b, _ := json.Marshal(j)
		return runtime.RawExtension{Raw: b}
	}
	return admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "req-1",
			Operation: op, Namespace: "ml",
			Resource: metav1.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"},
			Object:   raw(obj), OldObject: raw(old),
		}}
}

// ApplyPatch applies an admission JSON patch to a job, as the API server
// does, and fails the test when it does not apply.
func ApplyPatch(t testing.TB, job *batch.Job, patch []byte) *batch.Job {
	t.Helper()
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	raw, _ := json.Marshal(job)
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("patch %s does not apply: %v", patch, err)
	}
	var got batch.Job
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	return &got
}
