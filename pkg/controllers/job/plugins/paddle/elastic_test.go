package paddle

import (
	"context"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/test/contract"
)

// elasticJob is collective job name in ml with a worker task of replicas
// pods, minAvailable lo and the plugin arguments --elastic-max=hi plus
// extra.
func elasticJob(name string, lo, replicas, hi int32, extra ...string) *batch.Job {
	args := append([]string{"--elastic-max=" + strconv.Itoa(int(hi))}, extra...)
	job := newJob("ml", name, args, taskSpec{name: "worker", replicas: replicas, gpus: 1})
	job.Spec.Tasks[0].MinAvailable = &lo
	job.Spec.MinAvailable = lo
	job.Spec.Queue = "default"
	return job
}

// pythonStrip is Python's str.strip(chars): Paddle takes the etcd address
// as PADDLE_MASTER.strip("etcd://") (controllers/master.py: ETCDMaster).
func pythonStrip(s, chars string) string {
	return strings.TrimRight(strings.TrimLeft(s, chars), chars)
}

func TestElasticPodEnv(t *testing.T) {
	for _, name := range []string{"el", "train", "deep", "ctr", "etcd"} { // names starting with e, t, c, d
		t.Run(name, func(t *testing.T) {
			job := elasticJob(name, 2, 3, 4)
			client := fake.NewSimpleClientset()
			pods, err := runJob(t, client, job)
			if err != nil {
				t.Fatal(err)
			}
			if len(pods) != 3 {
				t.Fatalf("%d pods, want 3", len(pods))
			}
			for _, v := range contract.Check(pods, nil, rememberConfigMaps(t, client, "ml")...) {
				t.Errorf("contract: %s", v)
			}
			for _, pod := range pods {
				c := &pod.Spec.Containers[0]
				env := envOf(c)
				host := "paddle-etcd-" + name + ".ml.svc"
				want := map[string]string{
					EnvMaster:         "etcd://" + host + ":2379",
					EnvNNodes:         "2:4",
					EnvElasticLevel:   "1",
					EnvElasticTimeout: "10",
					EnvMaxRestart:     "100",
					EnvJobID:          "ml-" + name,
					EnvProtobufImpl:   "python",
					EnvSelectedGPUs:   "0",
				}
				expectEnv(t, pod.Name, env, want)
				// Paddle strips characters, not a prefix: the host must survive.
				if got := pythonStrip(env[EnvMaster], "etcd://"); got != host+":2379" {
					t.Errorf("%s: Paddle reads the etcd address as %q, want %q", pod.Name, got, host+":2379")
				}
				for _, bad := range []string{EnvTrainerEndpoints, EnvDistributedTrainerEndpoints, EnvTrainerID, EnvRank, EnvTrainersNum, EnvTrainers, EnvCurrentEndpoint, EnvLaunchTrainers, EnvPort} {
					if _, ok := env[bad]; ok {
						t.Errorf("%s: %s is set (%q); it pins a fixed world", pod.Name, bad, env[bad])
					}
				}
				var podIP *v1.EnvVar
				for i := range c.Env {
					if c.Env[i].Name == EnvPodIP {
						podIP = &c.Env[i]
					}
				}
				if podIP == nil || podIP.ValueFrom == nil || podIP.ValueFrom.FieldRef == nil || podIP.ValueFrom.FieldRef.FieldPath != "status.podIP" {
					t.Errorf("%s: POD_IP = %+v, want the downward API's status.podIP", pod.Name, podIP)
				}
				if len(c.Ports) != 0 {
					t.Errorf("%s: declares ports %v; Paddle picks random ports at every rendezvous", pod.Name, c.Ports)
				}
				if pod.Labels[paddleapi.ElasticLabel] != "true" {
					t.Errorf("%s: labels %v lack %s", pod.Name, pod.Labels, paddleapi.ElasticLabel)
				}
				// The barrier waits for the etcd, not for peers that may
				// never come (pods above MIN may stay Pending).
				if len(pod.Spec.InitContainers) != 1 {
					t.Fatalf("%s: init containers %v", pod.Name, pod.Spec.InitContainers)
				}
				if got := envOf(&pod.Spec.InitContainers[0])[EnvBarrierHosts]; got != EtcdName(name) {
					t.Errorf("%s: barrier waits for %q, want %q", pod.Name, got, EtcdName(name))
				}
			}
		})
	}
}

func TestElasticUserEnvKept(t *testing.T) {
	job := elasticJob("el", 1, 2, 3)
	job.Spec.Tasks[0].Template.Spec.Containers[0].Env = []v1.EnvVar{
		{Name: EnvProtobufImpl, Value: "upb"},
		{Name: EnvMaxRestart, Value: "7"},
		{Name: EnvElasticTimeout, Value: "30"},
		{Name: EnvElasticLevel, Value: "1"},
	}
	pods, err := runJob(t, fake.NewSimpleClientset(), job)
	if err != nil {
		t.Fatal(err)
	}
	env := envOf(&pods[0].Spec.Containers[0])
	for k, v := range map[string]string{EnvProtobufImpl: "upb", EnvMaxRestart: "7", EnvElasticTimeout: "30", EnvNNodes: "1:3"} {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
}

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
		{"valid MIN 1", func() *batch.Job { return elasticJob("el", 1, 1, 2) }, "", ""},
		{"parameter-server job", func() *batch.Job {
			j := newJob("ml", "wd", []string{"--elastic-max=4"}, taskSpec{name: "ps", replicas: 1}, taskSpec{name: "worker", replicas: 2})
			lo := int32(1)
			j.Spec.Tasks[1].MinAvailable = &lo
			return j
		}, "spec.plugins.paddle[--elastic-max]", "ps jobs cannot be elastic"},
		{"heter-PS job", func() *batch.Job {
			j := newJob("ml", "wd", []string{"--elastic-max=4"}, taskSpec{name: "ps", replicas: 1}, taskSpec{name: "worker", replicas: 2}, taskSpec{name: "heter", replicas: 1})
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
		{"restartPolicy OnFailure", restartPolicy(v1.RestartPolicyOnFailure), "spec.tasks[0].template.spec.restartPolicy", "need restartPolicy Never"},
		{"restartPolicy Always", restartPolicy(v1.RestartPolicyAlways), "spec.tasks[0].template.spec.restartPolicy", "never ends"},
		{"restartPolicy unset", restartPolicy(""), "spec.tasks[0].template.spec.restartPolicy", "unset (Always)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job()
			a, errs := ParseArgs(job.Spec.Plugins[PluginName])
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
		j := newJob("ml", "el", nil, taskSpec{name: "worker", replicas: 3})
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
			a, errs := ParseArgs(nj.Spec.Plugins[PluginName])
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
	a, _ := ParseArgs(job.Spec.Plugins[PluginName])
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

func TestElasticEtcdObjects(t *testing.T) {
	ctx := context.Background()
	job := elasticJob("el", 2, 3, 4)
	job.Spec.Tasks[0].Template.Spec.NodeSelector = map[string]string{"pool": "gpu"}
	client := fake.NewSimpleClientset()
	if _, err := runJob(t, client, job); err != nil {
		t.Fatal(err)
	}
	name := EtcdName("el")
	pod, err := client.CoreV1().Pods("ml").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no etcd pod: %v", err)
	}
	if !metav1.IsControlledBy(pod, job) || pod.Spec.SchedulerName != "volcano" || pod.Spec.NodeSelector["pool"] != "gpu" ||
		pod.Spec.RestartPolicy != v1.RestartPolicyAlways || pod.Spec.Containers[0].Image != DefaultEtcdImage {
		t.Errorf("etcd pod: owner %v scheduler %q nodeSelector %v restart %q image %q", pod.OwnerReferences, pod.Spec.SchedulerName, pod.Spec.NodeSelector, pod.Spec.RestartPolicy, pod.Spec.Containers[0].Image)
	}
	if rp := pod.Spec.Containers[0].ReadinessProbe; rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Port.IntValue() != EtcdClientPort {
		t.Errorf("etcd pod readiness probe %+v; the Service must publish it only once etcd answers", rp)
	}
	svc, err := client.CoreV1().Services("ml").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no etcd Service: %v", err)
	}
	if svc.Spec.ClusterIP != v1.ClusterIPNone || svc.Spec.PublishNotReadyAddresses || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) ||
		len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != EtcdClientPort {
		t.Errorf("etcd Service spec %+v does not publish the etcd pod (labels %v) headless on %d once ready", svc.Spec, pod.Labels, EtcdClientPort)
	}
	np, err := client.NetworkingV1().NetworkPolicies("ml").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no NetworkPolicy: %v", err)
	}
	sel, _ := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("NetworkPolicy selects %v, not the etcd pod %v", sel, pod.Labels)
	}
	trainer := newPod(job, 0, 2)
	other := newPod(elasticJob("other", 2, 3, 4), 0, 0)
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != EtcdClientPort {
		t.Fatalf("ingress %+v: want one rule on port %d", np.Spec.Ingress, EtcdClientPort)
	}
	var trainerIn, otherIn, controllerIn bool
	for _, from := range np.Spec.Ingress[0].From {
		ps, _ := metav1.LabelSelectorAsSelector(from.PodSelector)
		if from.NamespaceSelector == nil {
			trainerIn = trainerIn || ps.Matches(labels.Set(trainer.Labels))
			otherIn = otherIn || ps.Matches(labels.Set(other.Labels))
			continue
		}
		ns, _ := metav1.LabelSelectorAsSelector(from.NamespaceSelector)
		controllerIn = ns.Matches(labels.Set{v1.LabelMetadataName: "volcano-system"}) && ps.Matches(labels.Set{"app": "volcano-controller"})
	}
	if !trainerIn || otherIn || !controllerIn {
		t.Errorf("NetworkPolicy admits the job's trainer %v, another job's pod %v, the controller %v; want true, false, true", trainerIn, otherIn, controllerIn)
	}

	// Idempotent, and torn down with the job.
	if err := plugin(t, client, job).OnJobAdd(job); err != nil {
		t.Fatal(err)
	}
	if err := plugin(t, client, job).OnJobDelete(job); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("ml").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("etcd pod left after OnJobDelete: %v", err)
	}
	if _, err := client.CoreV1().Services("ml").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("etcd Service left after OnJobDelete: %v", err)
	}
	if _, err := client.NetworkingV1().NetworkPolicies("ml").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("NetworkPolicy left after OnJobDelete: %v", err)
	}

	// A fixed-size job gets no etcd.
	fixedJob := newJob("ml", "fixed", nil, taskSpec{name: "worker", replicas: 2})
	if _, err := runJob(t, client, fixedJob); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("ml").Get(ctx, EtcdName("fixed"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a fixed-size job got an etcd pod: %v", err)
	}
}

func TestElasticEtcdOfPreviousRunTerminating(t *testing.T) {
	job := elasticJob("el", 2, 3, 4)
	now := metav1.Now()
	old := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: EtcdName("el"), DeletionTimestamp: &now, Finalizers: []string{"x"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batch.SchemeGroupVersion.WithKind("Job"))}}}
	client := fake.NewSimpleClientset(old)
	job.Status.ControlledResources = map[string]string{}
	err := plugin(t, client, job).OnJobAdd(job)
	if err == nil || !strings.Contains(err.Error(), "still terminating") {
		t.Fatalf("OnJobAdd = %v; want a retry while the previous etcd terminates", err)
	}
}

// The controller follows a resize within [MIN, MAX] instead of holding it:
// Volcano then creates or deletes the pods above the new size and leaves
// the others alone.
func TestElasticResizeFollowed(t *testing.T) {
	job := elasticJob("el", 2, 3, 4)
	client := fake.NewSimpleClientset()
	if _, err := runJob(t, client, job); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int32{4, 2} {
		job.Spec.Tasks[0].Replicas = n
		if err := plugin(t, client, job).OnJobUpdate(job); err != nil {
			t.Fatal(err)
		}
		if job.Spec.Tasks[0].Replicas != n {
			t.Fatalf("resize to %d was held at %d", n, job.Spec.Tasks[0].Replicas)
		}
		if job.Status.State.Reason == ResizeHeldReason {
			t.Fatalf("resize to %d reported as held: %s", n, job.Status.State.Message)
		}
		// A pod of the new size gets the same env as the first ones.
		if n == 4 {
			pod := newPod(job, 0, 3)
			if err := plugin(t, client, job).OnPodCreate(pod, job); err != nil {
				t.Fatal(err)
			}
			if envOf(&pod.Spec.Containers[0])[EnvNNodes] != "2:4" {
				t.Errorf("new pod env %v", envOf(&pod.Spec.Containers[0]))
			}
		}
	}
	// Beyond MAX the controller holds it, as for a fixed-size job.
	job.Spec.Tasks[0].Replicas = 6
	if err := plugin(t, client, job).OnJobUpdate(job); err != nil {
		t.Fatal(err)
	}
	if job.Spec.Tasks[0].Replicas != 2 {
		t.Fatalf("resize beyond MAX not held: replicas %d", job.Spec.Tasks[0].Replicas)
	}
}
