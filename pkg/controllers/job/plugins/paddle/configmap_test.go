package paddle

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlekube"
	"github.com/volcano-paddle/volcano-paddle/test/contract"
)

func configMapsOf(t *testing.T, client *fake.Clientset, ns string) map[string]v1.ConfigMap {
	t.Helper()
	list, err := client.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.ConfigMap{}
	for _, cm := range list.Items {
		out[cm.Name] = cm
	}
	return out
}

// The lists live once in an immutable ConfigMap owned by the job, labelled
// with the job, which exists before the first pod; pods refer to it.
func TestConfigMapHoldsTheLists(t *testing.T) {
	job := newJob("ml", "wd", []string{"--gloo=1"}, testbuilders.PaddleTask{Name: "ps", Replicas: 2}, testbuilders.PaddleTask{Name: "worker", Replicas: 3})
	client := fake.NewSimpleClientset()
	job.Status.ControlledResources = map[string]string{}
	if err := plugin(t, client, job).OnJobAdd(job); err != nil {
		t.Fatal(err)
	}
	cms := configMapsOf(t, client, "ml")
	cm, ok := cms["wd-paddle-v0"]
	if !ok || len(cms) != 1 {
		t.Fatalf("ConfigMaps after OnJobAdd: %v", cms)
	}
	if cm.Immutable == nil || !*cm.Immutable || !metav1.IsControlledBy(&cm, job) ||
		cm.Labels[batch.JobNameKey] != "wd" || cm.Labels[paddlejob.IncarnationLabel] != "0" || cm.Labels[paddlejob.ManagedByLabel] != paddlejob.PluginName {
		t.Errorf("ConfigMap meta: immutable=%v owners=%v labels=%v", cm.Immutable, cm.OwnerReferences, cm.Labels)
	}
	want := map[string]string{
		"PADDLE_PSERVERS_IP_PORT_LIST": "wd-ps-0.wd:36000,wd-ps-1.wd:36000",
		"PADDLE_PSERVERS":              "wd-ps-0.wd:36000,wd-ps-1.wd:36001",
		"PADDLE_TRAINER_ENDPOINTS":     "wd-worker-0.wd:36000,wd-worker-1.wd:36000,wd-worker-2.wd:36000",
		"PADDLE_TRAINERS":              "wd-worker-0.wd,wd-worker-1.wd,wd-worker-2.wd",
		"PADDLE_BARRIER_HOSTS":         "wd-ps-0.wd,wd-ps-1.wd,wd-worker-0.wd,wd-worker-1.wd,wd-worker-2.wd",
	}
	if len(cm.Data) != len(want) {
		t.Errorf("ConfigMap keys %d, want %d: %v", len(cm.Data), len(want), cm.Data)
	}
	for k, v := range want {
		if cm.Data[k] != v {
			t.Errorf("%s = %q, want %q", k, cm.Data[k], v)
		}
	}
	if job.Status.ControlledResources[paddlejob.ConfigMapKey] != "wd-paddle-v0" {
		t.Errorf("ControlledResources = %v", job.Status.ControlledResources)
	}
	pod := newPod(job, 1, 2)
	if err := plugin(t, client, job).OnPodCreate(pod, job); err != nil {
		t.Fatal(err)
	}
	var refs int
	for _, e := range pod.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			refs++
			if e.ValueFrom.ConfigMapKeyRef.Name != "wd-paddle-v0" {
				t.Errorf("%s refers to %s", e.Name, e.ValueFrom.ConfigMapKeyRef.Name)
			}
		} else if strings.Contains(e.Value, ",") {
			t.Errorf("%s carries a list in the pod: %q", e.Name, e.Value)
		}
	}
	if refs == 0 {
		t.Error("the pod refers to no list")
	}
	if err := plugin(t, client, job).OnJobDelete(job); err != nil {
		t.Fatal(err)
	}
	if cms := configMapsOf(t, client, "ml"); len(cms) != 0 {
		t.Errorf("ConfigMaps left after OnJobDelete: %v", cms)
	}
	if _, ok := job.Status.ControlledResources[paddlejob.ConfigMapKey]; ok {
		t.Error("ControlledResources still names the ConfigMap")
	}
}

// A pod object has the same size with 1,000 and with 3,000 trainers.
func TestPodSizeDoesNotGrowWithReplicas(t *testing.T) {
	size := func(trainers int32) int {
		job := newJob("ml", "ctr", nil, testbuilders.PaddleTask{Name: "pserver", Replicas: 4}, testbuilders.PaddleTask{Name: "trainer", Replicas: trainers})
		client := fake.NewSimpleClientset()
		job.Status.ControlledResources = map[string]string{}
		if err := plugin(t, client, job).OnJobAdd(job); err != nil {
			t.Fatal(err)
		}
		pod := newPod(job, 1, 7) // the same name width in both jobs
		if err := plugin(t, client, job).OnPodCreate(pod, job); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(pod)
		return len(b)
	}
	// Counts have as many digits in both jobs.
	small, large := size(1000), size(3000)
	if small != large {
		t.Errorf("pod object %d bytes with 1,000 trainers, %d with 3,000", small, large)
	}
}

// After Volcano restarts the whole job (killJob: OnJobDelete, version+1,
// OnJobAdd, new pods), the pods have new host names and a new ConfigMap,
// consistent among themselves; the barrier waits for the new names.
func TestRestartJobNewIncarnation(t *testing.T) {
	job := newJob("ml", "wd", []string{"--gloo=1"}, testbuilders.PaddleTask{Name: "ps", Replicas: 2}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	client := fake.NewSimpleClientset()
	if _, err := runJob(t, client, job); err != nil {
		t.Fatal(err)
	}
	if err := plugin(t, client, job).OnJobDelete(job); err != nil {
		t.Fatal(err)
	}
	job.Status.Version = 3
	pods, err := runJob(t, client, job)
	if err != nil {
		t.Fatal(err)
	}
	cms := configMapsOf(t, client, "ml")
	if _, ok := cms["wd-paddle-v3"]; !ok || len(cms) != 1 {
		t.Fatalf("ConfigMaps after the restart: %v", cms)
	}
	ps1 := podNamed(t, pods, "wd-ps-1")
	if ps1.Spec.Hostname != "wd-ps-1-v3" || ps1.Spec.Subdomain != "wd" {
		t.Errorf("hostname %s.%s", ps1.Spec.Hostname, ps1.Spec.Subdomain)
	}
	env := envOf(&ps1.Spec.Containers[0])
	if env["POD_IP"] != "wd-ps-1-v3.wd" || env["PADDLE_PSERVERS_IP_PORT_LIST"] != "wd-ps-0-v3.wd:36000,wd-ps-1-v3.wd:36000" ||
		env["PADDLE_GLOO_HTTP_ENDPOINT"] != "wd-ps-0-v3.wd:36018" {
		t.Errorf("env of the new incarnation: %v", env)
	}
	if hosts := envOf(&ps1.Spec.InitContainers[0])[paddlejob.EnvBarrierHosts]; !strings.Contains(hosts, "wd-worker-1-v3.wd") || strings.Contains(hosts, "wd-worker-1.wd") {
		t.Errorf("barrier waits for %q", hosts)
	}
	svc, err := client.CoreV1().Services("ml").Get(context.Background(), "wd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range contract.Check(pods, svc, cms["wd-paddle-v3"]) {
		t.Errorf("contract: %s", v)
	}
}

// A pod of a newer incarnation brings its ConfigMap and removes the older
// ones, even when OnJobDelete did not run in between.
func TestNewerIncarnationReplacesConfigMap(t *testing.T) {
	job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	client := fake.NewSimpleClientset()
	if _, err := runJob(t, client, job); err != nil {
		t.Fatal(err)
	}
	pod := newPod(job, 0, 1)
	pod.Annotations[batch.JobVersion] = "1"
	if err := plugin(t, client, job).OnPodCreate(pod, job); err != nil {
		t.Fatal(err)
	}
	cms := configMapsOf(t, client, "ml")
	if _, ok := cms["wd-paddle-v1"]; !ok || len(cms) != 1 {
		t.Errorf("ConfigMaps: %v", cms)
	}
	if pod.Spec.Hostname != "wd-worker-1-v1" {
		t.Errorf("hostname %s", pod.Spec.Hostname)
	}
}

// Volcano creates a job's pods from many goroutines: the ConfigMap of an
// incarnation is created by one API call, and every pod finds it.
func TestConcurrentPodCreateOneConfigMapCall(t *testing.T) {
	job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 2}, testbuilders.PaddleTask{Name: "worker", Replicas: 40})
	job.Status.Version = 2
	client := fake.NewSimpleClientset()
	var creates atomic.Int32
	client.PrependReactor("create", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates.Add(1)
		return false, nil, nil
	})
	var wg sync.WaitGroup
	errs := make(chan error, 42)
	for ti, ts := range job.Spec.Tasks {
		for i := 0; i < int(ts.Replicas); i++ {
			wg.Add(1)
			go func(ti, i int) {
				defer wg.Done()
				errs <- plugin(t, client, job).OnPodCreate(newPod(job, ti, i), job)
			}(ti, i)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := creates.Load(); n != 1 {
		t.Errorf("%d ConfigMap create calls for one incarnation, want 1", n)
	}
}

// paddlekube.EnsureJobObjects brings back the Service and the ConfigMap of the
// current incarnation after someone deleted them.
func TestEnsureJobObjects(t *testing.T) {
	job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	job.Status.Version = 1
	client := fake.NewSimpleClientset()
	if _, err := runJob(t, client, job); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := client.CoreV1().Services("ml").Delete(ctx, "wd", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().ConfigMaps("ml").Delete(ctx, "wd-paddle-v1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ { // idempotent
		if err := paddlekube.EnsureJobObjects(ctx, client, job); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := client.CoreV1().Services("ml").Get(ctx, "wd", metav1.GetOptions{})
	if err != nil || svc.Labels[batch.JobNameKey] != "wd" {
		t.Errorf("Service: %v %v", svc, err)
	}
	if cm, ok := configMapsOf(t, client, "ml")["wd-paddle-v1"]; !ok || cm.Data[paddlejob.EnvTrainers] != "wd-worker-0-v1.wd,wd-worker-1-v1.wd" {
		t.Errorf("ConfigMap not re-created: %v", cm)
	}
	bad := newJob("ml", "bad", []string{"--gloo=1"}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	if err := paddlekube.EnsureJobObjects(ctx, client, bad); err == nil {
		t.Error("EnsureJobObjects accepted a job the plugin rejects")
	}
}

// A ConfigMap of the same name that is not the job's is not taken over.
func TestConfigMapOfSomeoneElse(t *testing.T) {
	job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	foreign := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "wd-paddle-v0"}}
	_, err := runJob(t, fake.NewSimpleClientset(foreign), job)
	if err == nil || !strings.Contains(err.Error(), "does not belong to Paddle job ml/wd") || !strings.Contains(err.Error(), "delete the ConfigMap or rename the job") {
		t.Fatalf("err = %v", err)
	}
}

// A PS job whose trainer lists are too long for an environment variable is
// accepted without them (the entry points that need them are named), its
// barrier waits for the pservers; a collective job of that size, whose
// Paddle cannot start without the list, is refused.
func TestLargeJobs(t *testing.T) {
	ps := newJob("ml", "ctr", nil, testbuilders.PaddleTask{Name: "pserver", Replicas: 10}, testbuilders.PaddleTask{Name: "trainer", Replicas: 10000})
	client := fake.NewSimpleClientset()
	pods, err := runJob(t, client, ps)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := client.CoreV1().Services("ml").Get(context.Background(), "ctr", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// python train.py and the CTR image work; fleetrun and the new
	// launcher, which need the trainer lists, are the documented loss.
	var usable, lost []contract.Rule
	for _, r := range contract.Rules {
		if r.Name == "fleetrun-cloud" || r.Name == "launch-ps" {
			lost = append(lost, r)
		} else {
			usable = append(usable, r)
		}
	}
	cmList := rememberConfigMaps(t, client, "ml")
	for _, v := range contract.CheckRules(usable, pods, svc, cmList...) {
		t.Errorf("contract: %s", v)
	}
	if v := contract.CheckRules(lost, pods, svc, cmList...); len(v) == 0 {
		t.Error("fleetrun and the new launcher judged usable without the trainer lists")
	}
	// The list facts behind this: pkg/paddlejob TestLargeJobListFacts.
	env := envOf(&podNamed(t, pods, "ctr-trainer-9999").Spec.Containers[0])
	for _, absent := range []string{paddlejob.EnvTrainers, paddlejob.EnvTrainerEndpoints, paddlejob.EnvLaunchTrainers, paddlejob.EnvFluidTrainerIPs} {
		if _, ok := env[absent]; ok {
			t.Errorf("%s reached a pod although it is %d bytes", absent, len(env[absent]))
		}
	}
	if env[paddlejob.EnvPServerEndpoints] == "" || env[paddlejob.EnvTrainersNum] != "10000" {
		t.Errorf("PS env: %s=%q %s=%q", paddlejob.EnvPServerEndpoints, env[paddlejob.EnvPServerEndpoints], paddlejob.EnvTrainersNum, env[paddlejob.EnvTrainersNum])
	}
	cm := configMapsOf(t, client, "ml")["ctr-paddle-v0"]
	if got := cm.Data[paddlejob.EnvBarrierHosts]; strings.Count(got, ",") != 9 {
		t.Errorf("barrier hosts of a 10,000-trainer PS job: %d names", strings.Count(got, ",")+1)
	}
	coll := newJob("ml", "big", nil, testbuilders.PaddleTask{Name: "trainer", Replicas: 10000})
	if _, err := runJob(t, fake.NewSimpleClientset(), coll); err == nil || !strings.Contains(err.Error(), "MAX_ARG_STRLEN") || !strings.Contains(err.Error(), "spec.tasks[0]") {
		t.Errorf("10,000-trainer collective job: %v", err)
	}
}

// When Volcano has bumped job.Status.Version past the incarnation its pods
// carry (killJob runs more than once per restart), paddlekube.EnsureJobObjects brings
// back the pods' ConfigMap, not one under the status's number, and does not
// delete the one the pods use.
func TestEnsureJobObjectsFollowsPods(t *testing.T) {
	job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	job.Status.Version = 1
	client := fake.NewSimpleClientset()
	pods, err := runJob(t, client, job)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range pods {
		if _, err := client.CoreV1().Pods("ml").Create(ctx, &pods[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	job.Status.Version = 3
	if err := client.CoreV1().ConfigMaps("ml").Delete(ctx, "wd-paddle-v1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := paddlekube.EnsureJobObjects(ctx, client, job); err != nil {
		t.Fatal(err)
	}
	cms := configMapsOf(t, client, "ml")
	if cm, ok := cms["wd-paddle-v1"]; !ok || cm.Data[paddlejob.EnvTrainers] != "wd-worker-0-v1.wd,wd-worker-1-v1.wd" {
		t.Errorf("the pods' ConfigMap wd-paddle-v1 was not re-created: %v", cm)
	}
	if _, ok := cms["wd-paddle-v3"]; ok {
		t.Error("EnsureJobObjects created wd-paddle-v3, which no pod refers to")
	}
}
