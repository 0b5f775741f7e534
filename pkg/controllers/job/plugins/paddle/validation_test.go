package paddle

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// Every bad-input row of the issue: the job is rejected with a message that
// names the field, and nothing is created for it.
func TestInvalidJobs(t *testing.T) {
	env := func(kv ...string) []v1.EnvVar {
		var out []v1.EnvVar
		for i := 0; i < len(kv); i += 2 {
			out = append(out, v1.EnvVar{Name: kv[i], Value: kv[i+1]})
		}
		return out
	}
	long := strings.Repeat("x", 50)
	cases := []struct {
		name   string
		job    func() *batch.Job
		fields []string
	}{
		{"unknown flag", func() *batch.Job {
			return newJob("ns", "j", []string{"--workers=2"}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
		}, []string{"spec.plugins.paddle", "-workers"}},
		{"bad port range", func() *batch.Job {
			return newJob("ns", "j", []string{"--port=65535", "--ports-per-pod=8"}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
		}, []string{"spec.plugins.paddle[--ports-per-pod]", "65535"}},
		{"gloo outside PS", func() *batch.Job {
			return newJob("ns", "j", []string{"--gloo=1"}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
		}, []string{"spec.plugins.paddle[--gloo]", "parameter-server"}},
		{"forced ps without pservers", func() *batch.Job {
			return newJob("ns", "j", []string{"--mode=ps"}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
		}, []string{"spec.plugins.paddle[--mode]", "pserver task"}},
		{"forced heter-ps without heter", func() *batch.Job {
			return newJob("ns", "j", []string{"--mode=heter-ps"}, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
		}, []string{"--mode", "heter task"}},
		{"forced collective with a pserver task", func() *batch.Job {
			return newJob("ns", "j", []string{"--mode=collective"}, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
		}, []string{"--mode", "collective jobs have no parameter servers"}},
		{"ambiguous pserver tasks", func() *batch.Job {
			return newJob("ns", "j", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "pserver", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 1})
		}, []string{"spec.tasks", "--ps-task"}},
		{"ambiguous trainer tasks", func() *batch.Job {
			return newJob("ns", "j", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 1}, testbuilders.PaddleTask{Name: "trainer", Replicas: 1})
		}, []string{"spec.tasks", "--trainer-task"}},
		{"one task for two roles", func() *batch.Job {
			return newJob("ns", "j", []string{"--ps-task=worker"}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
		}, []string{"both the pserver and the trainer role"}},
		{"explicit task missing", func() *batch.Job {
			return newJob("ns", "j", []string{"--trainer-task=gpu"}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
		}, []string{"spec.plugins.paddle[--trainer-task]", `no task is named "gpu"`}},
		{"no trainer task", func() *batch.Job {
			return newJob("ns", "j", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 2})
		}, []string{"spec.tasks", "needs a trainer task"}},
		{"zero trainers", func() *batch.Job {
			return newJob("ns", "j", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 2}, testbuilders.PaddleTask{Name: "worker", Replicas: 0})
		}, []string{"spec.tasks[1].replicas", "at least 1 replica"}},
		{"template hostname with replicas", func() *batch.Job {
			j := newJob("ns", "j", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
			j.Spec.Tasks[0].Template.Spec.Hostname = "trainer"
			return j
		}, []string{"spec.tasks[0].template.spec.hostname", "share this hostname"}},
		{"template subdomain", func() *batch.Job {
			j := newJob("ns", "j", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 1})
			j.Spec.Tasks[0].Template.Spec.Subdomain = "other"
			return j
		}, []string{"spec.tasks[0].template.spec.subdomain"}},
		{"hostNetwork without opt-in", func() *batch.Job {
			j := newJob("ns", "j", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
			j.Spec.Tasks[0].Template.Spec.HostNetwork = true
			return j
		}, []string{"spec.tasks[0].template.spec.hostNetwork", "--host-network"}},
		{"host name over 63 characters", func() *batch.Job {
			return newJob("ns", long, []string{"--trainer-task=trainer" + long[:5]}, testbuilders.PaddleTask{Name: "trainer" + long[:5], Replicas: 10})
		}, []string{"metadata.name", "63"}},
		{"env too large", func() *batch.Job {
			return newJob("ns", "j"+long[:20], []string{"--trainer-task=worker" + long[:10]}, testbuilders.PaddleTask{Name: "worker" + long[:10], Replicas: 3000})
		}, []string{"spec.tasks[0]", "PADDLE_TRAINER_ENDPOINTS", "131072", "shorter job and task names"}},
		{"host name without room for the restart suffix", func() *batch.Job {
			return newJob("ns", long[:45], nil, testbuilders.PaddleTask{Name: "trainer", Replicas: 10})
		}, []string{"metadata.name", "-v<job version>", "at most 51 characters"}},
		{"POD_IP fixed to the pod's name", func() *batch.Job {
			return newJob("ns", "one", nil, testbuilders.PaddleTask{Name: "trainer", Replicas: 1, Env: env("POD_IP", "one-trainer-0.one")})
		}, []string{"env[0]", "whole job restarts"}},
		{"POD_IP from the pod IP (seed 000 template)", func() *batch.Job {
			j := newJob("ns", "ctr", nil, testbuilders.PaddleTask{Name: "pserver", Replicas: 2}, testbuilders.PaddleTask{Name: "trainer", Replicas: 2})
			j.Spec.Tasks[0].Template.Spec.Containers[0].Env = []v1.EnvVar{{Name: "POD_IP",
				ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
			return j
		}, []string{"spec.tasks[0].template.spec.containers[0].env[0]", "fieldRef status.podIP", "ctr-pserver-0.ctr"}},
		{"PADDLE_PORT that disagrees", func() *batch.Job {
			return newJob("ns", "ctr", nil, testbuilders.PaddleTask{Name: "pserver", Replicas: 1, Env: env("PADDLE_PORT", "30236")}, testbuilders.PaddleTask{Name: "trainer", Replicas: 1})
		}, []string{"env[0]", "--port=<port>"}},
		{"per-pod id fixed in a template", func() *batch.Job {
			return newJob("ns", "ctr", nil, testbuilders.PaddleTask{Name: "trainer", Replicas: 2, Env: env("PADDLE_TRAINER_ID", "0")})
		}, []string{"PADDLE_TRAINER_ID", "ctr-trainer-1"}},
		{"gloo turned on by hand", func() *batch.Job {
			return newJob("ns", "ctr", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 1, Env: env("PADDLE_WITH_GLOO", "1")})
		}, []string{"PADDLE_WITH_GLOO", "--gloo=1"}},
		{"job name not a DNS label", func() *batch.Job {
			return newJob("ns", "My.Job", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 1})
		}, []string{"metadata.name", "DNS label"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job()
			client := fake.NewSimpleClientset()
			pods, err := runJob(t, client, job)
			if err == nil {
				t.Fatalf("accepted; pods: %d", len(pods))
			}
			msg := err.Error()
			if !strings.Contains(msg, "paddle plugin rejected job "+job.Namespace+"/"+job.Name) {
				t.Errorf("message does not name the job: %s", msg)
			}
			for _, f := range tc.fields {
				if !strings.Contains(msg, f) {
					t.Errorf("message does not mention %q:\n%s", f, msg)
				}
			}
			if _, ok := err.(*paddlejob.InvalidJobError); !ok {
				t.Errorf("error is %T, want *paddlejob.InvalidJobError", err)
			}
			svcs, _ := client.CoreV1().Services(job.Namespace).List(context.Background(), metav1.ListOptions{})
			if len(svcs.Items) != 0 {
				t.Errorf("a rejected job left a Service behind")
			}
			if job.Status.ControlledResources[paddlejob.ControlledKey] != "" {
				t.Errorf("a rejected job is marked as initialised")
			}
		})
	}
}

// A template that sets a contract variable to exactly the value Paddle
// needs is accepted (single-replica task).
func TestTemplateEnvConsistentAccepted(t *testing.T) {
	job := newJob("ns", "one", nil, testbuilders.PaddleTask{Name: "trainer", Replicas: 1, Env: []v1.EnvVar{
		{Name: "PADDLE_TRAINER_ID", Value: "0"}, {Name: "PADDLE_PORT", Value: "36000"}, {Name: "PADDLE_TRAINERS_NUM", Value: "1"}}})
	mustRun(t, job)
}
