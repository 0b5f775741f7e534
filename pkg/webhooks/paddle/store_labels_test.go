package paddle

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-paddle/volcano-paddle/harness/admissiontest"
	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// No Job, Paddle or not, may carry an elastic store pod's labels in a pod
// template (issue 37: a plain job's pod joined another job's store
// Service): the NetworkPolicy of the store selects its pod by them and the
// paddleelastic controller takes such a pod for a store.
func TestAdmitRefusesStoreLabels(t *testing.T) {
	plain := job(map[string][]string{"svc": nil}, map[string]int32{"worker": 1})
	paddle := testbuilders.ElasticPaddleJob("wd", 2, 3, 4)
	for _, tc := range []struct {
		name  string
		base  string // plain or paddle
		key   string
		value string
	}{
		{"plain job, etcd-of", "plain", paddlejob.EtcdOfLabel, "victim"},
		{"plain job, managed-by", "plain", paddlejob.ManagedByLabel, paddlejob.PluginName},
		{"plain job, elastic=etcd", "plain", paddleapi.ElasticLabel, paddleapi.ElasticEtcd},
		{"plain job, elastic=true", "plain", paddleapi.ElasticLabel, "true"},
		{"paddle job, etcd-of", "paddle", paddlejob.EtcdOfLabel, "victim"},
		{"paddle job, managed-by", "paddle", paddlejob.ManagedByLabel, paddlejob.PluginName},
		{"paddle job, elastic=etcd", "paddle", paddleapi.ElasticLabel, paddleapi.ElasticEtcd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := plain.DeepCopy()
			if tc.base == "paddle" {
				j = paddle.DeepCopy()
			}
			last := len(j.Spec.Tasks) - 1
			j.Spec.Tasks[last].Template.Labels = map[string]string{tc.key: tc.value, "team": "ads"}
			resp := Admit(context.Background(), admissiontest.JobReview(admissionv1.Create, j, nil))
			if resp.Allowed {
				t.Fatalf("a job whose template carries %s=%s was admitted", tc.key, tc.value)
			}
			field := "spec.tasks[" + string(rune('0'+last)) + "].template.metadata.labels[" + tc.key + "]"
			if resp.Result == nil || resp.Result.Code != 422 || resp.Result.Reason != metav1.StatusReasonInvalid {
				t.Fatalf("result %+v, want 422 Invalid", resp.Result)
			}
			// The job, the field and the fix.
			for _, want := range []string{"ml/wd", field, "remove it from task \"worker\"'s template"} {
				if !strings.Contains(resp.Result.Message, want) {
					t.Errorf("message %q does not say %q", resp.Result.Message, want)
				}
			}
			found := false
			for _, c := range resp.Result.Details.Causes {
				found = found || c.Field == field
			}
			if !found {
				t.Errorf("causes %+v name no field %s", resp.Result.Details.Causes, field)
			}
		})
	}
	// The same templates without those labels are admitted.
	for _, j := range []string{"plain", "paddle"} {
		base := plain
		if j == "paddle" {
			base = paddle
		}
		if resp := Admit(context.Background(), admissiontest.JobReview(admissionv1.Create, base, nil)); !resp.Allowed {
			t.Errorf("%s job refused: %v", j, resp.Result)
		}
	}
}
