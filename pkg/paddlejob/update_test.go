package paddlejob

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
)

func TestValidateUpdate(t *testing.T) {
	base := func() *batch.Job {
		return newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2}, testbuilders.PaddleTask{Name: "tb", Replicas: 1})
	}
	invalid := func() *batch.Job {
		j := base()
		j.Spec.Tasks[1].Template.Spec.Containers[0].Env = []v1.EnvVar{{Name: EnvPort, Value: "1"}}
		return j
	}
	cases := []struct {
		name      string
		old, new  func() *batch.Job
		wantField string // "" = allowed
	}{
		{"unchanged", base, base, ""},
		{"labels only", base, func() *batch.Job { j := base(); j.Labels = map[string]string{"a": "b"}; return j }, ""},
		{"labels on a job current rules refuse", invalid, func() *batch.Job { j := invalid(); j.Labels = map[string]string{"a": "b"}; return j }, ""},
		{"finalizer of a foreground deletion on an invalid job", invalid, func() *batch.Job {
			j := invalid()
			j.Finalizers = []string{metav1.FinalizerDeleteDependents}
			return j
		}, ""},
		{"spec change of a job being deleted", invalid, func() *batch.Job {
			j := invalid()
			now := metav1.Now()
			j.DeletionTimestamp = &now
			j.Spec.Tasks[0].Replicas = 3
			return j
		}, ""},
		{"worker replicas", base, func() *batch.Job { j := base(); j.Spec.Tasks[1].Replicas = 4; return j }, "spec.tasks[1].replicas"},
		{"pserver replicas", base, func() *batch.Job { j := base(); j.Spec.Tasks[0].Replicas = 2; return j }, "spec.tasks[0].replicas"},
		{"helper task replicas", base, func() *batch.Job { j := base(); j.Spec.Tasks[2].Replicas = 3; return j }, ""},
		{"a job that never ran is judged alone", invalid, func() *batch.Job { j := base(); j.Spec.Tasks[1].Replicas = 4; return j }, ""},
		{"new spec invalid", base, invalid, "spec.tasks[1].template.spec.containers[0].env[0]"},
		{"absurd replicas", base, func() *batch.Job { j := base(); j.Spec.Tasks[1].Replicas = 1 << 30; return j }, "spec.tasks[1].replicas"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateUpdate(tc.old(), tc.new(), &Args{Mode: modeAuto, Port: DefaultPort, PortsPerPod: DefaultPortsPerPod, HeterDevice: heterDeviceAuto})
			if tc.wantField == "" {
				if len(errs) != 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if len(errs) == 0 {
				t.Fatalf("allowed, want an error on %s", tc.wantField)
			}
			for _, e := range errs {
				if e.Field == tc.wantField {
					return
				}
			}
			t.Fatalf("errors %v name no %s", errs, tc.wantField)
		})
	}
}
