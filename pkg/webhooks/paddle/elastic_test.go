package paddle

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/admissiontest"
)

// The webhook applies the job plugin's resize rule: an elastic job's
// trainers may change within [minAvailable, --elastic-max], a fixed-size
// job keeps today's refusal.
func TestAdmitElasticResize(t *testing.T) {
	elastic := func(replicas int32) *batch.Job {
		j := job(map[string][]string{"paddle": {"--elastic-max=4"}}, map[string]int32{"worker": replicas})
		lo := int32(2)
		j.Spec.Tasks[0].MinAvailable = &lo
		j.Spec.MinAvailable = lo
		return j
	}
	fixed := func(replicas int32) *batch.Job {
		return job(map[string][]string{"paddle": nil}, map[string]int32{"worker": replicas})
	}
	cases := []struct {
		name     string
		old, new *batch.Job
		want     string // "" = allowed
	}{
		{"elastic grows to MAX", elastic(3), elastic(4), ""},
		{"elastic shrinks to MIN", elastic(3), elastic(2), ""},
		{"elastic beyond MAX", elastic(3), elastic(5), "between minAvailable (2) and --elastic-max (4)"},
		{"elastic below MIN", elastic(3), elastic(1), "spec.tasks[0].replicas"},
		{"fixed-size job", fixed(2), fixed(3), `task "worker" (Paddle trainer) cannot change from 2 to 3 replicas`},
		{"PS job cannot be elastic", nil, job(map[string][]string{"paddle": {"--elastic-max=4"}}, map[string]int32{"ps": 1, "worker": 2}), "ps jobs cannot be elastic"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op := admissionv1.Update
			if tc.old == nil {
				op = admissionv1.Create
			}
			resp := Admit(context.Background(), admissiontest.JobReview(op, tc.new, tc.old))
			if tc.want == "" {
				if !resp.Allowed {
					t.Fatalf("refused: %v", resp.Result)
				}
				for _, w := range resp.Warnings {
					if strings.Contains(w, "minAvailable") {
						t.Errorf("elastic job warned about minAvailable: %s", w)
					}
				}
				return
			}
			if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, tc.want) {
				t.Fatalf("allowed=%v result=%v; want a refusal mentioning %q", resp.Allowed, resp.Result, tc.want)
			}
		})
	}
}
