package paddlejob

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
)

func TestValidateElastic(t *testing.T) {
	// templateEnv is the elastic job with name=value in its pod template.
	templateEnv := func(name, value string) func() *batch.Job {
		return func() *batch.Job {
			j := elasticJob("el", 2, 3, 4)
			c := &j.Spec.Tasks[0].Template.Spec.Containers[0]
			c.Env = append(c.Env, v1.EnvVar{Name: name, Value: value})
			return j
		}
	}
	restartPolicy := func(p v1.RestartPolicy) func() *batch.Job {
		return func() *batch.Job {
			j := elasticJob("el", 2, 3, 4)
			j.Spec.Tasks[0].Template.Spec.RestartPolicy = p
			return j
		}
	}
	cases := []struct {
		name      string
		job       func() *batch.Job
		wantField string // "" = valid
		wantText  string
	}{
		{"valid", func() *batch.Job { return elasticJob("el", 2, 3, 4) }, "", ""},
		{"valid at MIN", func() *batch.Job { return elasticJob("el", 2, 2, 4) }, "", ""},
		{"valid at MAX", func() *batch.Job { return elasticJob("el", 2, 4, 4) }, "", ""},
		{"valid with restartPolicy OnFailure", restartPolicy(v1.RestartPolicyOnFailure), "", ""},
		{"valid MIN 1", func() *batch.Job { return elasticJob("el", 1, 1, 2) }, "", ""},
		{"parameter-server job", func() *batch.Job {
			j := newJob("ml", "wd", []string{"--elastic-max=4"}, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
			lo := int32(1)
			j.Spec.Tasks[1].MinAvailable = &lo
			return j
		}, "spec.plugins.paddle[--elastic-max]", "ps jobs cannot be elastic"},
		{"heter-PS job", func() *batch.Job {
			j := newJob("ml", "wd", []string{"--elastic-max=4"}, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2}, testbuilders.PaddleTask{Name: "heter", Replicas: 1})
			return j
		}, "spec.plugins.paddle[--elastic-max]", "heter-ps jobs cannot be elastic"},
		{"no minAvailable", func() *batch.Job { j := elasticJob("el", 2, 3, 4); j.Spec.Tasks[0].MinAvailable = nil; return j }, "spec.tasks[0].minAvailable", "set it"},
		{"MIN equals MAX", func() *batch.Job { return elasticJob("el", 4, 4, 4) }, "spec.plugins.paddle[--elastic-max]", "must be above"},
		{"replicas above MAX", func() *batch.Job { return elasticJob("el", 2, 5, 4) }, "spec.tasks[0].replicas", "between minAvailable (2) and --elastic-max (4)"},
		{"job minAvailable above MIN", func() *batch.Job { j := elasticJob("el", 2, 3, 4); j.Spec.MinAvailable = 3; return j }, "spec.minAvailable", "at most 2"},
		{"timeout below 10s", func() *batch.Job { return elasticJob("el", 2, 3, 4, "--elastic-timeout=5s") }, "spec.plugins.paddle[--elastic-timeout]", "at least 10s"},
		{"negative max", func() *batch.Job {
			j := elasticJob("el", 2, 3, 4)
			j.Spec.Plugins[PluginName] = []string{"--elastic-max=-1"}
			return j
		}, "spec.plugins.paddle[--elastic-max]", "or 0 for a fixed-size job"},
		{"template pins the rank", templateEnv(EnvTrainerID, "0"), "spec.tasks[0].template.spec.containers[0].env[0]", "IndexError"},
		{"template PADDLE_RANK", templateEnv(EnvRank, "0"), "spec.tasks[0].template.spec.containers[0].env[0]", "IndexError"},
		{"template endpoints", templateEnv(EnvDistributedTrainerEndpoints, "a:1,b:1"), "spec.tasks[0].template.spec.containers[0].env[0]", "collective_compatible"},
		{"template elastic level -1", templateEnv(EnvElasticLevel, "-1"), "spec.tasks[0].template.spec.containers[0].env[0]", "must be 1"},
		{"template timeout 5", templateEnv(EnvElasticTimeout, "5"), "spec.tasks[0].template.spec.containers[0].env[0]", "at least 10"},
		{"template HTTP master", templateEnv(EnvMaster, "el-worker-0.el:36000"), "spec.tasks[0].template.spec.containers[0].env[0]", "etcd://paddle-etcd-el.ml.svc:2379"},
		{"template job id", templateEnv(EnvJobID, "mine"), "spec.tasks[0].template.spec.containers[0].env[0]", "/paddle/ml-el"},
		{"template fixed POD_IP", templateEnv(EnvPodIP, "1.2.3.4"), "spec.tasks[0].template.spec.containers[0].env[0]", "status.podIP"},
		{"restartPolicy Always", restartPolicy(v1.RestartPolicyAlways), "spec.tasks[0].template.spec.restartPolicy", "need restartPolicy OnFailure or Never"},
		{"restartPolicy unset", restartPolicy(""), "spec.tasks[0].template.spec.restartPolicy", "unset (Always)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job()
			a, errs := parseArgs(job.Spec.Plugins[PluginName])
			if len(errs) == 0 {
				_, errs = ValidateJob(job, a)
			}
			expectFirstError(t, errs, tc.wantField, tc.wantText)
		})
	}
}

// expectFirstError checks that errs is empty when wantField is "", else that
// its first error is on wantField (or a field below it) and mentions wantText.
func expectFirstError(t *testing.T, errs field.ErrorList, wantField, wantText string) {
	t.Helper()
	if wantField == "" {
		if len(errs) > 0 {
			t.Fatalf("refused: %v", errs)
		}
		return
	}
	if len(errs) == 0 {
		t.Fatalf("accepted; want an error on %s", wantField)
	}
	if !strings.HasPrefix(errs[0].Field, wantField) || !strings.Contains(errs[0].Error(), wantText) {
		t.Fatalf("got %v; want %s mentioning %q", errs, wantField, wantText)
	}
}

func TestElasticValidateUpdate(t *testing.T) {
	base := func() *batch.Job { return elasticJob("el", 2, 3, 4) }
	resized := func(n int32) func() *batch.Job {
		return func() *batch.Job { j := base(); j.Spec.Tasks[0].Replicas = n; return j }
	}
	fixed := func() *batch.Job {
		j := newJob("ml", "el", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 3})
		return j
	}
	cases := []struct {
		name      string
		old, new  func() *batch.Job
		wantField string
		wantText  string
	}{
		{"grow to MAX", base, resized(4), "", ""},
		{"shrink to MIN", base, resized(2), "", ""},
		{"above MAX", base, resized(5), "spec.tasks[0].replicas", "--elastic-max (4)"},
		{"below MIN", base, resized(1), "spec.tasks[0].replicas", "minAvailable (2)"},
		{"MIN changes", base, func() *batch.Job {
			j := base()
			lo := int32(1)
			j.Spec.Tasks[0].MinAvailable = &lo
			j.Spec.MinAvailable = 1
			return j
		}, "spec.tasks[0].minAvailable", "cannot change from 2 to 1"},
		{"MAX changes", base, func() *batch.Job { j := elasticJob("el", 2, 3, 5); return j }, "spec.plugins.paddle", "cannot change while the job exists"},
		{"timeout changes", base, func() *batch.Job { return elasticJob("el", 2, 3, 4, "--elastic-timeout=20s") }, "spec.plugins.paddle", "cannot change"},
		{"fixed job becomes elastic", fixed, base, "spec.plugins.paddle[--elastic-max]", "cannot become elastic"},
		{"elastic job becomes fixed", base, func() *batch.Job { j := base(); j.Spec.Plugins[PluginName] = nil; return j }, "spec.plugins.paddle[--elastic-max]", "cannot become fixed-size"},
		{"fixed-size job keeps today's rule", fixed, func() *batch.Job { j := fixed(); j.Spec.Tasks[0].Replicas = 4; return j }, "spec.tasks[0].replicas", "cannot change from 3 to 4 replicas while the job exists"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nj := tc.new()
			a, errs := parseArgs(nj.Spec.Plugins[PluginName])
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			errs = ValidateUpdate(tc.old(), nj, a)
			expectFirstError(t, errs, tc.wantField, tc.wantText)
		})
	}
}

func TestElasticWarnings(t *testing.T) {
	job := elasticJob("el", 2, 3, 4)
	job.Spec.Tasks[0].Policies = []batch.LifecyclePolicy{{Event: bus.PodFailedEvent, Action: bus.RestartJobAction}, {Event: bus.PodEvictedEvent, Action: bus.RestartPodAction}}
	a, _ := parseArgs(job.Spec.Plugins[PluginName])
	l, errs := ValidateJob(job, a)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	ws := Warnings(job, l)
	joined := strings.Join(ws, "\n")
	if strings.Contains(joined, "minAvailable") {
		t.Errorf("an elastic job runs from minAvailable up, yet warned: %s", joined)
	}
	if !strings.Contains(joined, "RestartJob restarts the pods Paddle keeps training") {
		t.Errorf("no warning about RestartJob: %s", joined)
	}
	if strings.Contains(joined, "RestartPod") {
		t.Errorf("RestartPod replaces one pod, which is what an elastic job wants, yet warned: %s", joined)
	}
}

// Never is valid for elastic trainers and warned: a store fault ends every
// launcher at once; OnFailure, which restarts them in place, is not.
func TestElasticRestartPolicyWarnings(t *testing.T) {
	for _, tc := range []struct {
		policy v1.RestartPolicy
		warned bool
	}{{v1.RestartPolicyNever, true}, {v1.RestartPolicyOnFailure, false}} {
		job := elasticJob("el", 2, 3, 4)
		job.Spec.Tasks[0].Template.Spec.RestartPolicy = tc.policy
		a, _ := parseArgs(job.Spec.Plugins[PluginName])
		l, errs := ValidateJob(job, a)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		joined := strings.Join(Warnings(job, l), "\n")
		if warned := strings.Contains(joined, "restartPolicy: Never; when the job's etcd store restarts"); warned != tc.warned {
			t.Errorf("restartPolicy %s: warned %v, want %v: %s", tc.policy, warned, tc.warned, joined)
		}
		if strings.Contains(joined, "restarted in place rejoins peers") {
			t.Errorf("restartPolicy %s: an elastic launcher restarted in place registers anew, yet warned: %s", tc.policy, joined)
		}
	}
}
