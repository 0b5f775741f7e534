package contract

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A hand-written valid PS job (the worked example of design.md plus the
// variables of every PS entry point), to show the checker accepts a correct
// job and names each broken rule. The lists come from a ConfigMap, as the
// plugin writes them.
func validPS() ([]v1.Pod, *v1.Service, []v1.ConfigMap) {
	cm := v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wd-paddle-v0"}, Data: map[string]string{
		"PADDLE_PSERVERS_IP_PORT_LIST": "wd-ps-0.wd:36000,wd-ps-1.wd:36000",
		"PADDLE_PSERVERS":              "wd-ps-0.wd:36000,wd-ps-1.wd:36001",
		"PADDLE_TRAINER_ENDPOINTS":     "wd-worker-0.wd:36000,wd-worker-1.wd:36000",
		"PADDLE_TRAINERS":              "wd-worker-0.wd,wd-worker-1.wd",
	}}
	ref := func(name, key string) v1.EnvVar {
		return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
			LocalObjectReference: v1.LocalObjectReference{Name: cm.Name}, Key: key}}}
	}
	shared := map[string]string{
		"PADDLE_PORT": "36000", "TRAINER_PORTS_NUM": "20", "PADDLE_TRAINERS_NUM": "2",
		"PADDLE_WITH_GLOO": "1", "PADDLE_GLOO_RENDEZVOUS": "3", "PADDLE_GLOO_HTTP_ENDPOINT": "wd-ps-0.wd:36018",
		"PADDLE_RUN_MODE": "ps", "PADDLE_GLOO_PORT": "36018", "PADDLE_SERVER_NUM": "2", "PADDLE_TRAINER_NUM": "2",
	}
	mk := func(name, role, id string, ports ...int32) v1.Pod {
		env := []v1.EnvVar{
			ref("PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_PSERVERS_IP_PORT_LIST"), ref("PADDLE_SERVERS_ENDPOINTS", "PADDLE_PSERVERS_IP_PORT_LIST"),
			ref("PADDLE_PSERVERS", "PADDLE_PSERVERS"),
			ref("PADDLE_TRAINER_ENDPOINTS", "PADDLE_TRAINER_ENDPOINTS"), ref("PADDLE_TRAINERS_ENDPOINTS", "PADDLE_TRAINER_ENDPOINTS"),
			ref("PADDLE_TRAINERS", "PADDLE_TRAINERS"),
		}
		for k, v := range shared {
			env = append(env, v1.EnvVar{Name: k, Value: v})
		}
		env = append(env,
			v1.EnvVar{Name: "POD_IP", Value: name + ".wd"},
			v1.EnvVar{Name: "TRAINING_ROLE", Value: role},
			v1.EnvVar{Name: "PADDLE_TRAINER_ID", Value: id})
		if role == "PSERVER" {
			env = append(env, v1.EnvVar{Name: "PADDLE_PSERVER_ID", Value: id})
		}
		var cps []v1.ContainerPort
		for _, p := range ports {
			cps = append(cps, v1.ContainerPort{ContainerPort: p})
		}
		return v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"volcano.sh/job-name": "wd"}},
			Spec:       v1.PodSpec{Hostname: name, Subdomain: "wd", Containers: []v1.Container{{Name: "paddle", Env: env, Ports: cps}}},
		}
	}
	pods := []v1.Pod{
		mk("wd-ps-0", "PSERVER", "0", 36000, 36018), mk("wd-ps-1", "PSERVER", "1", 36000, 36001),
		mk("wd-worker-0", "TRAINER", "0", 36000), mk("wd-worker-1", "TRAINER", "1", 36000),
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "wd"}, Spec: v1.ServiceSpec{
		ClusterIP: v1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: map[string]string{"volcano.sh/job-name": "wd"}}}
	return pods, svc, []v1.ConfigMap{cm}
}

func setEnv(p *v1.Pod, name, value string) {
	for i, e := range p.Spec.Containers[0].Env {
		if e.Name == name {
			p.Spec.Containers[0].Env[i] = v1.EnvVar{Name: name, Value: value}
			return
		}
	}
	p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, v1.EnvVar{Name: name, Value: value})
}

func unsetEnv(p *v1.Pod, name string) {
	env := p.Spec.Containers[0].Env[:0]
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name != name {
			env = append(env, e)
		}
	}
	p.Spec.Containers[0].Env = env
}

func joined(v []Violation) string {
	var all []string
	for _, x := range v {
		all = append(all, x.String())
	}
	return strings.Join(all, "\n")
}

func TestCheckValid(t *testing.T) {
	pods, svc, cms := validPS()
	if v := Check(pods, svc, cms...); len(v) != 0 {
		t.Fatalf("valid job reported:\n%s", joined(v))
	}
}

func TestCheckViolations(t *testing.T) {
	cases := []struct {
		name   string
		mutate func([]v1.Pod, *v1.Service, []v1.ConfigMap)
		want   string
	}{
		{"pserver IP not in list", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) { setEnv(&p[1], "POD_IP", "10.0.0.7") }, "not in PADDLE_PSERVERS_IP_PORT_LIST"},
		{"trainers num disagrees", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) {
			for i := range p {
				setEnv(&p[i], "PADDLE_TRAINERS_NUM", "3")
			}
		}, "[role-maker-ps] PADDLE_TRAINERS_NUM"},
		{"shared value differs", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) { setEnv(&p[3], "PADDLE_WITH_GLOO", "2") }, "differs between pods"},
		{"trainer ids collide", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) { setEnv(&p[2], "PADDLE_TRAINER_ID", "1") }, "not a distinct id"},
		{"pserver id wrong", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) { setEnv(&p[0], "PADDLE_PSERVER_ID", "1") }, "PADDLE_PSERVER_ID"},
		{"gloo on PADDLE_PORT", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) {
			for i := range p {
				setEnv(&p[i], "PADDLE_GLOO_HTTP_ENDPOINT", "wd-ps-0.wd:36000")
			}
		}, "brpc server binds"},
		{"gloo not on pserver 0", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) {
			for i := range p {
				setEnv(&p[i], "PADDLE_GLOO_HTTP_ENDPOINT", "wd-ps-1.wd:36018")
			}
		}, "is not pserver 0"},
		{"gloo port not declared", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) { p[0].Spec.Containers[0].Ports = nil }, "does not declare it"},
		{"heter role string of paddle-operator", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) { setEnv(&p[3], "TRAINING_ROLE", "HETER") }, "not one Paddle accepts"},
		{"service hides starting pods", func(_ []v1.Pod, s *v1.Service, _ []v1.ConfigMap) { s.Spec.PublishNotReadyAddresses = false }, "not-ready"},
		{"service not headless", func(_ []v1.Pod, s *v1.Service, _ []v1.ConfigMap) { s.Spec.ClusterIP = "10.96.0.10" }, "not headless"},
		{"no service", nil, "no headless Service"},
		{"pod without hostname", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) { p[0].Spec.Hostname = "" }, "no stable DNS name"},
		{"POD_IP is an IP", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) { setEnv(&p[2], "POD_IP", "10.0.0.1") }, "the launcher would start [] in this pod"},
		{"POD_IP without a dot", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) { setEnv(&p[2], "POD_IP", "wd-worker-0") }, "has no dot"},
		{"ConfigMap missing", func(_ []v1.Pod, _ *v1.Service, cms []v1.ConfigMap) { cms[0].Name = "other" }, `ConfigMap "wd-paddle-v0", which does not exist`},
		{"ConfigMap key missing", func(_ []v1.Pod, _ *v1.Service, cms []v1.ConfigMap) { delete(cms[0].Data, "PADDLE_PSERVERS") }, `key "PADDLE_PSERVERS"`},
		{"fluid pserver 1 at PADDLE_PORT", func(_ []v1.Pod, _ *v1.Service, cms []v1.ConfigMap) {
			cms[0].Data["PADDLE_PSERVERS"] = cms[0].Data["PADDLE_PSERVERS_IP_PORT_LIST"]
		}, "[fluid-ctr] its Fluid endpoint"},
		{"fluid port not declared", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) { p[1].Spec.Containers[0].Ports = nil }, "does not declare that port"},
		{"pserver without PADDLE_TRAINER_ID", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) { unsetEnv(&p[1], "PADDLE_TRAINER_ID") }, "[fleetrun-cloud] use_paddlecloud() is false"},
		{"launcher sees no PS", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) {
			for _, n := range []string{"PADDLE_RUN_MODE", "PADDLE_SERVER_NUM", "PADDLE_TRAINER_NUM", "PADDLE_SERVERS_ENDPOINTS", "PADDLE_TRAINERS_ENDPOINTS"} {
				unsetEnv(&p[2], n)
			}
		}, "[launch-ps] PSController.enable is false"},
		{"launcher gloo store elsewhere", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) {
			for i := range p {
				unsetEnv(&p[i], "PADDLE_GLOO_PORT")
			}
		}, "[launch-ps] the launcher puts gloo's store at wd-ps-0.wd:6767"},
		{"launcher in legacy mode", func(p []v1.Pod, _ *v1.Service, _ []v1.ConfigMap) { setEnv(&p[0], "FLAGS_START_PORT", "6070") }, "legacy launch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods, svc, cms := validPS()
			if tc.mutate != nil {
				tc.mutate(pods, svc, cms)
			} else {
				svc = nil
			}
			if got := joined(Check(pods, svc, cms...)); !strings.Contains(got, tc.want) {
				t.Errorf("want a violation mentioning %q, got:\n%s", tc.want, got)
			}
		})
	}
}

func TestCheckCollective(t *testing.T) {
	env := func(name, id, master string) []v1.EnvVar {
		return []v1.EnvVar{
			{Name: "TRAINING_ROLE", Value: "TRAINER"}, {Name: "PADDLE_TRAINER_ID", Value: id},
			{Name: "PADDLE_TRAINERS_NUM", Value: "2"}, {Name: "PADDLE_PORT", Value: "36000"}, {Name: "TRAINER_PORTS_NUM", Value: "8"},
			{Name: "PADDLE_TRAINER_ENDPOINTS", Value: "r-t-0.r:36000,r-t-1.r:36000"}, {Name: "PADDLE_TRAINERS", Value: "r-t-0.r,r-t-1.r"},
			{Name: "POD_IP", Value: name + ".r"}, {Name: "PADDLE_CURRENT_ENDPOINT", Value: name + ".r:36000"},
			{Name: "PADDLE_MASTER", Value: master}, {Name: "PADDLE_NNODES", Value: "2"},
		}
	}
	mk := func(name, id, master string) v1.Pod {
		return v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"j": "r"}},
			Spec: v1.PodSpec{Hostname: name, Subdomain: "r", Containers: []v1.Container{{Env: env(name, id, master)}}}}
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: v1.ServiceSpec{ClusterIP: "None", PublishNotReadyAddresses: true, Selector: map[string]string{"j": "r"}}}
	good := []v1.Pod{mk("r-t-0", "0", "r-t-0.r:36000"), mk("r-t-1", "1", "r-t-0.r:36000")}
	if v := Check(good, svc); len(v) != 0 {
		t.Fatalf("valid collective job reported:\n%s", joined(v))
	}
	bad := []v1.Pod{mk("r-t-0", "0", "r-t-1.r:36000"), mk("r-t-1", "1", "r-t-1.r:36000")}
	if got := joined(Check(bad, svc)); !strings.Contains(got, "is not the first trainer endpoint") {
		t.Fatalf("a master that is not the first trainer endpoint was accepted:\n%s", got)
	}
	ps := []v1.Pod{mk("r-t-0", "0", "r-t-0.r:36000"), mk("r-t-1", "1", "r-t-0.r:36000")}
	setEnv(&ps[1], "PADDLE_RUN_MODE", "ps")
	if got := joined(Check(ps, svc)); !strings.Contains(got, "[launch-collective] PSController.enable is true") {
		t.Fatalf("a collective pod the launcher would run as PS was accepted:\n%s", got)
	}
	sameIP := []v1.Pod{mk("r-t-0", "0", "r-t-0.r:36000"), mk("r-t-1", "1", "r-t-0.r:36000")}
	setEnv(&sameIP[1], "POD_IP", "r-t-0.r")
	if got := joined(Check(sameIP, svc)); !strings.Contains(got, "2 pods have POD_IP equal to the master host") {
		t.Fatalf("two self-elected masters were accepted:\n%s", got)
	}
}

// mainEnv loads the pods the job plugin produced before issue 11 (commit
// 47712fd, captured from its OnPodCreate for the examples and two more
// jobs; first container, hostname and labels only).
func mainEnv(t *testing.T, name string) []v1.Pod {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "main-47712fd-"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var pods []v1.Pod
	if err := json.Unmarshal(b, &pods); err != nil {
		t.Fatal(err)
	}
	return pods
}

func headless(job string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: job}, Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone,
		PublishNotReadyAddresses: true, Selector: map[string]string{"volcano.sh/job-name": job}}}
}

func rule(t *testing.T, name string) Rule {
	t.Helper()
	for _, r := range Rules {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no rule %s", name)
	return Rule{}
}

// Every rule judged on the env main produced before this change: the rules
// of the three entry points it broke fail there (the seed's CTR pserver 1,
// fleetrun on pservers, the new launcher in PS mode), naming what is wrong;
// the others held and still pass.
func TestRulesOnMainBeforeIssue11(t *testing.T) {
	cases := []struct {
		job, rule, want string // want "" = passes
	}{
		{"ctr-volcano", "fluid-ctr", `ctr-volcano-pserver-1: [fluid-ctr] its Fluid endpoint POD_IP:(PADDLE_PORT+PADDLE_PSERVER_ID)="ctr-volcano-pserver-1.ctr-volcano:30237" is not entry 1`},
		{"ps-nogloo", "fluid-ctr", "ps-ps-2: [fluid-ctr] its Fluid endpoint"},
		{"ctr-volcano", "fleetrun-cloud", "ctr-volcano-pserver-0: [fleetrun-cloud] use_paddlecloud() is false (no PADDLE_TRAINER_ID)"},
		{"wide-and-deep", "fleetrun-cloud", "wide-and-deep-ps-1: [fleetrun-cloud] use_paddlecloud() is false (no PADDLE_TRAINER_ID)"},
		{"heter-ctr", "fleetrun-cloud", "heter-ctr-heter-0: [fleetrun-cloud] use_paddlecloud() is false"},
		{"ctr-volcano", "launch-ps", "ctr-volcano-trainer-0: [launch-ps] PSController.enable is false"},
		{"wide-and-deep", "launch-ps", "wide-and-deep-ps-0: [launch-ps] PSController.enable is false"},
		{"heter-ctr", "launch-ps", "heter-ctr-ps-0: [launch-ps] PSController.enable is false"},
		{"ctr-volcano", "role-maker-ps", ""},
		{"wide-and-deep", "gloo-ps", ""},
		{"heter-ctr", "role-maker-ps", ""},
		{"resnet", "role-maker-collective", ""},
		{"resnet", "fleetrun-cloud", ""},
		{"resnet", "launch-collective", ""},
		{"wide-and-deep", "dns", ""},
		{"resnet", "dns", ""},
	}
	for _, tc := range cases {
		t.Run(tc.job+"/"+tc.rule, func(t *testing.T) {
			pods := mainEnv(t, tc.job)
			got := joined(CheckRules([]Rule{rule(t, tc.rule)}, pods, headless(pods[0].Spec.Subdomain)))
			switch {
			case tc.want == "" && got != "":
				t.Errorf("main's env was right for this rule, but:\n%s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("want a violation %q on main's env, got:\n%s", tc.want, got)
			}
		})
	}
}
