package contract

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A hand-written valid PS job (the worked example of design.md), to show the
// checker accepts a correct job and names each broken rule.
func validPS() ([]v1.Pod, *v1.Service) {
	shared := map[string]string{
		"PADDLE_PORT": "36000", "TRAINER_PORTS_NUM": "20", "PADDLE_TRAINERS_NUM": "2",
		"PADDLE_PSERVERS_IP_PORT_LIST": "wd-ps-0.wd:36000,wd-ps-1.wd:36000",
		"PADDLE_TRAINER_ENDPOINTS":     "wd-worker-0.wd:36000,wd-worker-1.wd:36000",
		"PADDLE_TRAINERS":              "wd-worker-0.wd,wd-worker-1.wd",
		"PADDLE_WITH_GLOO":             "1", "PADDLE_GLOO_RENDEZVOUS": "3", "PADDLE_GLOO_HTTP_ENDPOINT": "wd-ps-0.wd:36018",
	}
	mk := func(name, role, idVar, id string) v1.Pod {
		env := []v1.EnvVar{}
		for k, v := range shared {
			env = append(env, v1.EnvVar{Name: k, Value: v})
		}
		env = append(env,
			v1.EnvVar{Name: "POD_IP", Value: name + ".wd"},
			v1.EnvVar{Name: "PADDLE_CURRENT_ENDPOINT", Value: name + ".wd:36000"},
			v1.EnvVar{Name: "TRAINING_ROLE", Value: role},
			v1.EnvVar{Name: idVar, Value: id})
		return v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"volcano.sh/job-name": "wd"}},
			Spec:       v1.PodSpec{Hostname: name, Subdomain: "wd", Containers: []v1.Container{{Name: "paddle", Env: env}}},
		}
	}
	pods := []v1.Pod{
		mk("wd-ps-0", "PSERVER", "PADDLE_PSERVER_ID", "0"), mk("wd-ps-1", "PSERVER", "PADDLE_PSERVER_ID", "1"),
		mk("wd-worker-0", "TRAINER", "PADDLE_TRAINER_ID", "0"), mk("wd-worker-1", "TRAINER", "PADDLE_TRAINER_ID", "1"),
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "wd"}, Spec: v1.ServiceSpec{
		ClusterIP: v1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: map[string]string{"volcano.sh/job-name": "wd"}}}
	return pods, svc
}

func setEnv(p *v1.Pod, name, value string) {
	for i, e := range p.Spec.Containers[0].Env {
		if e.Name == name {
			p.Spec.Containers[0].Env[i].Value = value
			return
		}
	}
	p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, v1.EnvVar{Name: name, Value: value})
}

func TestCheckValid(t *testing.T) {
	pods, svc := validPS()
	if v := Check(pods, svc); len(v) != 0 {
		t.Fatalf("valid job reported: %v", v)
	}
}

func TestCheckViolations(t *testing.T) {
	cases := []struct {
		name   string
		mutate func([]v1.Pod, *v1.Service)
		want   string
	}{
		{"pserver IP not in list", func(p []v1.Pod, _ *v1.Service) { setEnv(&p[1], "POD_IP", "10.0.0.7") }, "not in PADDLE_PSERVERS_IP_PORT_LIST"},
		{"trainers num disagrees", func(p []v1.Pod, _ *v1.Service) {
			for i := range p {
				setEnv(&p[i], "PADDLE_TRAINERS_NUM", "3")
			}
		}, "PADDLE_TRAINERS_NUM"},
		{"shared value differs", func(p []v1.Pod, _ *v1.Service) { setEnv(&p[3], "PADDLE_WITH_GLOO", "2") }, "differs between pods"},
		{"trainer id off by one", func(p []v1.Pod, _ *v1.Service) { setEnv(&p[2], "PADDLE_TRAINER_ID", "1") }, "is not entry 1"},
		{"pserver id wrong", func(p []v1.Pod, _ *v1.Service) { setEnv(&p[0], "PADDLE_PSERVER_ID", "1") }, "PADDLE_PSERVER_ID"},
		{"gloo on PADDLE_PORT", func(p []v1.Pod, _ *v1.Service) {
			for i := range p {
				setEnv(&p[i], "PADDLE_GLOO_HTTP_ENDPOINT", "wd-ps-0.wd:36000")
			}
		}, "brpc server binds"},
		{"gloo not on pserver 0", func(p []v1.Pod, _ *v1.Service) {
			for i := range p {
				setEnv(&p[i], "PADDLE_GLOO_HTTP_ENDPOINT", "wd-ps-1.wd:36018")
			}
		}, "is not pserver 0"},
		{"heter role string of paddle-operator", func(p []v1.Pod, _ *v1.Service) { setEnv(&p[3], "TRAINING_ROLE", "HETER") }, "not one Paddle accepts"},
		{"service hides starting pods", func(_ []v1.Pod, s *v1.Service) { s.Spec.PublishNotReadyAddresses = false }, "not-ready"},
		{"service not headless", func(_ []v1.Pod, s *v1.Service) { s.Spec.ClusterIP = "10.96.0.10" }, "not headless"},
		{"no service", nil, "no headless Service"},
		{"pod without hostname", func(p []v1.Pod, _ *v1.Service) { p[0].Spec.Hostname = "" }, "no stable DNS name"},
		{"POD_IP is an IP", func(p []v1.Pod, _ *v1.Service) {
			setEnv(&p[2], "POD_IP", "10.0.0.1")
			setEnv(&p[2], "PADDLE_CURRENT_ENDPOINT", "10.0.0.1:36000")
		}, "is not entry 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods, svc := validPS()
			if tc.mutate != nil {
				tc.mutate(pods, svc)
			} else {
				svc = nil
			}
			v := Check(pods, svc)
			var all []string
			for _, x := range v {
				all = append(all, x.String())
			}
			if !strings.Contains(strings.Join(all, "\n"), tc.want) {
				t.Errorf("want a violation mentioning %q, got %v", tc.want, all)
			}
		})
	}
}

func TestCheckCollectiveMaster(t *testing.T) {
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
		t.Fatalf("valid collective job reported: %v", v)
	}
	bad := []v1.Pod{mk("r-t-0", "0", "r-t-1.r:36000"), mk("r-t-1", "1", "r-t-1.r:36000")}
	if v := Check(bad, svc); len(v) == 0 {
		t.Fatal("a master that is not the first trainer endpoint was accepted")
	}
}
