package paddle

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes/fake"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// Numbers that once crashed or stalled the controller are refused with the
// field and the fix before anything is built from them; the plugin's
// hooks return the rejection instead of panicking.
func TestLimits(t *testing.T) {
	gpus := func(q string, limits bool) func(*batch.Job) {
		return func(j *batch.Job) {
			r := v1.ResourceList{gputopology.ResourceName: resource.MustParse(q)}
			c := &j.Spec.Tasks[1].Template.Spec.Containers[0]
			c.Resources = v1.ResourceRequirements{Requests: r}
			if limits {
				c.Resources.Limits = r
			}
		}
	}
	cases := []struct {
		name  string
		edit  func(*batch.Job)
		field string
		want  string
	}{
		{"1e18 GPUs (makeslice panic in selectedGPUs)", gpus("1e18", true), "spec.tasks[1].template.spec.containers[0].resources.limits[nvidia.com/gpu]", "between 0 and 256"},
		{"1e6 GPUs in requests only", gpus("1e6", false), "spec.tasks[1].template.spec.containers[0].resources.requests[nvidia.com/gpu]", "between 0 and 256"},
		{"negative GPUs", gpus("-1", true), "resources.limits[nvidia.com/gpu]", "between 0 and 256"},
		{"fractional GPUs", gpus("1500m", true), "resources.limits[nvidia.com/gpu]", "whole devices"},
		{"2^31-1 replicas", func(j *batch.Job) { j.Spec.Tasks[1].Replicas = 1<<31 - 1 }, "spec.tasks[1].replicas", "between 0 and 10000"},
		{"negative replicas", func(j *batch.Job) { j.Spec.Tasks[0].Replicas = -3 }, "spec.tasks[0].replicas", "between 0 and 10000"},
		{"too many pods in all", func(j *batch.Job) {
			for i := 0; i < 3; i++ {
				j.Spec.Tasks = append(j.Spec.Tasks, *j.Spec.Tasks[1].DeepCopy())
				j.Spec.Tasks[len(j.Spec.Tasks)-1].Name = "helper" + string(rune('a'+i))
				j.Spec.Tasks[len(j.Spec.Tasks)-1].Replicas = 9000
			}
		}, "spec.tasks", "more than the 20000"},
		{"name starting with a digit", func(j *batch.Job) { j.Name = "1paddle" }, "metadata.name", `DNS-1035`},
		{"name with a dot", func(j *batch.Job) { j.Name = "wide.deep" }, "metadata.name", "DNS label"},
		{"barrier timeout of a year", func(j *batch.Job) { j.Spec.Plugins[paddlejob.PluginName] = []string{"--barrier-timeout=8760h"} }, "spec.plugins.paddle[--barrier-timeout]", "at most 24h"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
			tc.edit(j)
			_, err := runJob(t, fake.NewSimpleClientset(), j)
			inv, ok := err.(*paddlejob.InvalidJobError)
			if !ok {
				t.Fatalf("err = %v (%T), want an paddlejob.InvalidJobError", err, err)
			}
			for _, e := range inv.Errs {
				if strings.Contains(e.Field, tc.field) && strings.Contains(e.Error(), tc.want) {
					return
				}
			}
			t.Errorf("errors %v lack %s: %s", inv.Errs, tc.field, tc.want)
		})
	}
}

// Pods of Paddle roles get no service-account token unless the template
// asks; helper tasks keep the cluster default.
func TestNoServiceAccountToken(t *testing.T) {
	yes := true
	j := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 1}, testbuilders.PaddleTask{Name: "tb", Replicas: 1})
	j.Spec.Tasks[0].Template.Spec.AutomountServiceAccountToken = &yes
	pods, err := runJob(t, fake.NewSimpleClientset(), j)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		got := p.Spec.AutomountServiceAccountToken
		switch p.Name {
		case "wd-ps-0":
			if got == nil || !*got {
				t.Errorf("%s: the template's automountServiceAccountToken: true was overridden", p.Name)
			}
		case "wd-worker-0":
			if got == nil || *got {
				t.Errorf("%s: automountServiceAccountToken = %v, want false", p.Name, got)
			}
		case "wd-tb-0":
			if got != nil {
				t.Errorf("%s (helper task): automountServiceAccountToken = %v, want unset", p.Name, *got)
			}
		}
	}
}
