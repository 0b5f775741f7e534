package paddle

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// The worked example of design.md section 3: PS job wd in namespace ml, 2
// pservers + 2 trainers, port 36000, gloo on.
func TestEnvWorkedExamplePS(t *testing.T) {
	job := newJob("ml", "wd", []string{"--gloo=1"}, testbuilders.PaddleTask{Name: "ps", Replicas: 2}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	_, pods := mustRun(t, job)

	shared := map[string]string{
		"PADDLE_PORT": "36000", "TRAINER_PORTS_NUM": "20", "PADDLE_TRAINERS_NUM": "2",
		"PADDLE_PSERVERS_IP_PORT_LIST": "wd-ps-0.wd:36000,wd-ps-1.wd:36000",
		"PADDLE_TRAINER_ENDPOINTS":     "wd-worker-0.wd:36000,wd-worker-1.wd:36000",
		"PADDLE_TRAINERS":              "wd-worker-0.wd,wd-worker-1.wd",
		"PADDLE_JOB_ID":                "ml-wd",
		"PADDLE_WITH_GLOO":             "1", "PADDLE_GLOO_RENDEZVOUS": "3",
		"PADDLE_GLOO_HTTP_ENDPOINT": "wd-ps-0.wd:36018",
		// Fluid-era names of the CTR images.
		// pserver i at PADDLE_PORT+i, as the seed's CTR train.py computes.
		"PADDLE_PSERVERS": "wd-ps-0.wd:36000,wd-ps-1.wd:36001",
		// The new launcher's PS controller.
		"PADDLE_RUN_MODE": "ps", "PADDLE_SERVERS_ENDPOINTS": "wd-ps-0.wd:36000,wd-ps-1.wd:36000",
		"PADDLE_TRAINERS_ENDPOINTS": "wd-worker-0.wd:36000,wd-worker-1.wd:36000",
		"PADDLE_SERVER_NUM":         "2", "PADDLE_TRAINER_NUM": "2", "PADDLE_GLOO_PORT": "36018",
		"PADDLE_PSERVERS_NUM": "2", "PADDLE_TRAINER_IPS": "wd-worker-0.wd,wd-worker-1.wd",
	}
	perPod := map[string]map[string]string{
		"wd-ps-1": {"POD_IP": "wd-ps-1.wd", "TRAINING_ROLE": "PSERVER", "PADDLE_TRAINING_ROLE": "PSERVER",
			"PADDLE_PSERVER_ID": "1", "PADDLE_CURRENT_ENDPOINT": "wd-ps-1.wd:36000", "PADDLE_CURRENT_IP": "wd-ps-1.wd"},
		"wd-worker-0": {"POD_IP": "wd-worker-0.wd", "TRAINING_ROLE": "TRAINER", "PADDLE_TRAINING_ROLE": "TRAINER",
			"PADDLE_TRAINER_ID": "0", "PADDLE_CURRENT_ENDPOINT": "wd-worker-0.wd:36000"},
	}
	for name, want := range perPod {
		got := envOf(&podNamed(t, pods, name).Spec.Containers[0])
		expectEnv(t, name, got, shared)
		expectEnv(t, name, got, want)
	}
	// fleetrun's cloud path needs PADDLE_TRAINER_ID on every pod: a
	// pserver's is its index within its role, as paddle_k8s sets it.
	if got := envOf(&podNamed(t, pods, "wd-ps-1").Spec.Containers[0])["PADDLE_TRAINER_ID"]; got != "1" {
		t.Errorf("pserver 1: PADDLE_TRAINER_ID=%q, want 1", got)
	}
	if _, ok := envOf(&podNamed(t, pods, "wd-worker-0").Spec.Containers[0])["PADDLE_MASTER"]; ok {
		t.Errorf("a PS job got PADDLE_MASTER")
	}
}

func TestEnvCollective(t *testing.T) {
	job := newJob("ml", "resnet", nil, testbuilders.PaddleTask{Name: "trainer", Replicas: 2, GPUs: 4})
	_, pods := mustRun(t, job)
	for i, name := range []string{"resnet-trainer-0", "resnet-trainer-1"} {
		got := envOf(&podNamed(t, pods, name).Spec.Containers[0])
		want := map[string]string{
			"PADDLE_MASTER":            "resnet-trainer-0.resnet:36000",
			"PADDLE_NNODES":            "2",
			"PADDLE_TRAINERS_NUM":      "2",
			"PADDLE_TRAINER_ENDPOINTS": "resnet-trainer-0.resnet:36000,resnet-trainer-1.resnet:36000",
			"PADDLE_TRAINER_ID":        []string{"0", "1"}[i],
			"POD_IP":                   name + ".resnet",
			"FLAGS_selected_gpus":      "0,1,2,3",
			"TRAINING_ROLE":            "TRAINER",
		}
		expectEnv(t, name, got, want)
		for _, absent := range []string{"PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_WITH_GLOO"} {
			if _, ok := got[absent]; ok {
				t.Errorf("%s: collective pod got %s", name, absent)
			}
		}
	}
}

func TestEnvHeterPS(t *testing.T) {
	job := newJob("ml", "ctr", nil,
		testbuilders.PaddleTask{Name: "pserver", Replicas: 2}, testbuilders.PaddleTask{Name: "trainer", Replicas: 3}, testbuilders.PaddleTask{Name: "heter", Replicas: 2, GPUs: 1})
	_, pods := mustRun(t, job)
	heter := envOf(&podNamed(t, pods, "ctr-heter-1").Spec.Containers[0])
	want := map[string]string{
		"TRAINING_ROLE": "HETER_TRAINER", "STAGE_ID": "2", "STAGE_NUM": "2",
		"PADDLE_STAGE_TRAINERS_NUM":                  "[3, 2]",
		"PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST":      "ctr-heter-0.ctr:36000,ctr-heter-1.ctr:36000",
		"PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST": "ctr-trainer-0.ctr:36000,ctr-trainer-1.ctr:36000,ctr-trainer-2.ctr:36000",
		"HETER_DEVICE_TYPE":                          "gpu",
		"POD_IP":                                     "ctr-heter-1.ctr",
	}
	expectEnv(t, "heter", heter, want)
	trainer := envOf(&podNamed(t, pods, "ctr-trainer-2").Spec.Containers[0])
	if trainer["STAGE_ID"] != "1" || trainer["PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST"] != want["PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST"] {
		t.Errorf("trainer: STAGE_ID=%q next=%q", trainer["STAGE_ID"], trainer["PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST"])
	}
	if got := podNamed(t, pods, "ctr-heter-0").Labels[paddleapi.RoleLabel]; got != string(paddleapi.RoleHeter) {
		t.Errorf("heter pod role label = %q", got)
	}
}

// The seed 000 CTR job: tasks pserver/trainer, port from the example.
func TestEnvSeedCTRNames(t *testing.T) {
	job := newJob("default", "ctr-volcano", []string{"--port=30236"},
		testbuilders.PaddleTask{Name: "pserver", Replicas: 2}, testbuilders.PaddleTask{Name: "trainer", Replicas: 2})
	_, pods := mustRun(t, job)
	got := envOf(&podNamed(t, pods, "ctr-volcano-pserver-0").Spec.Containers[0])
	if got["PADDLE_PSERVERS"] != "ctr-volcano-pserver-0.ctr-volcano:30236,ctr-volcano-pserver-1.ctr-volcano:30237" ||
		got["PADDLE_PORT"] != "30236" || got["PADDLE_CURRENT_IP"] != "ctr-volcano-pserver-0.ctr-volcano" {
		t.Errorf("Fluid names: %v", got)
	}
}

// Variables the template sets win, and a consistent value is accepted.
func TestEnvUserValuesKept(t *testing.T) {
	job := newJob("ml", "wd", nil,
		testbuilders.PaddleTask{Name: "ps", Replicas: 1, Env: []v1.EnvVar{{Name: "PADDLE_PORT", Value: "36000"}, {Name: "GLOG_v", Value: "3"}}},
		testbuilders.PaddleTask{Name: "worker", Replicas: 1, Env: []v1.EnvVar{{Name: "PADDLE_JOB_ID", Value: "mine"}, {Name: "FLAGS_selected_gpus", Value: "1"}}})
	_, pods := mustRun(t, job)
	w := podNamed(t, pods, "wd-worker-0").Spec.Containers[0]
	count := map[string]int{}
	for _, e := range w.Env {
		count[e.Name]++
	}
	if envOf(&w)["PADDLE_JOB_ID"] != "mine" || count["PADDLE_JOB_ID"] != 1 {
		t.Errorf("user PADDLE_JOB_ID overwritten or duplicated: %v", w.Env)
	}
	ps := envOf(&podNamed(t, pods, "wd-ps-0").Spec.Containers[0])
	if ps["GLOG_v"] != "3" || ps["PADDLE_PORT"] != "36000" {
		t.Errorf("user env lost: %v", ps)
	}
}

func TestEnvNoProxy(t *testing.T) {
	job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "trainer", Replicas: 2, Env: []v1.EnvVar{{Name: "https_proxy", Value: "http://proxy:3128"}}})
	_, pods := mustRun(t, job)
	got := envOf(&pods[0].Spec.Containers[0])
	if got["no_proxy"] != ".wd,.wd.ml.svc,localhost,127.0.0.1" || got["NO_PROXY"] != got["no_proxy"] {
		t.Errorf("no_proxy = %q / NO_PROXY = %q", got["no_proxy"], got["NO_PROXY"])
	}
	job = newJob("ml", "wd2", nil, testbuilders.PaddleTask{Name: "trainer", Replicas: 2})
	_, pods = mustRun(t, job)
	if _, ok := envOf(&pods[0].Spec.Containers[0])["no_proxy"]; ok {
		t.Error("no_proxy set although the template has no proxy")
	}
}

// expectEnv reports each variable of want that pod's environment got lacks
// or sets to another value.
func expectEnv(t *testing.T, pod string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s=%q, want %q", pod, k, got[k], v)
		}
	}
}
