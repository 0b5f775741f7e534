package contract

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func elasticPods(change func(env map[string]string), n int) []v1.Pod {
	var pods []v1.Pod
	for i := 0; i < n; i++ {
		env := map[string]string{"PADDLE_MASTER": "etcd://paddle-etcd-el.ml.svc:2379", "PADDLE_NNODES": "2:4", "PADDLE_ELASTIC_LEVEL": "1",
			"PADDLE_ELASTIC_TIMEOUT": "10", "PADDLE_MAX_RESTART": "100", "PADDLE_JOB_ID": "ml-el"}
		if change != nil {
			change(env)
		}
		vars := []v1.EnvVar{{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
		for k, v := range env {
			vars = append(vars, v1.EnvVar{Name: k, Value: v})
		}
		pods = append(pods, v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "el-worker-" + string(rune('0'+i))},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "paddle", Env: vars}}}})
	}
	return pods
}

func TestCheckElastic(t *testing.T) {
	cases := []struct {
		name   string
		change func(map[string]string)
		pods   int
		want   string // "" = valid
	}{
		{"valid", nil, 3, ""},
		{"host loses its first letter", func(e map[string]string) { e["PADDLE_MASTER"] = "etcd://etcd-el.ml.svc:2379" }, 3, "reaches Paddle as"},
		{"MIN equals MAX", func(e map[string]string) { e["PADDLE_NNODES"] = "3:3" }, 3, "1 <= MIN < MAX"},
		{"more pods than MAX", nil, 5, "more than MAX"},
		{"default elastic level", func(e map[string]string) { delete(e, "PADDLE_ELASTIC_LEVEL") }, 3, "PADDLE_ELASTIC_LEVEL"},
		{"timeout 5", func(e map[string]string) { e["PADDLE_ELASTIC_TIMEOUT"] = "5" }, 3, "PADDLE_ELASTIC_TIMEOUT"},
		{"default max restart", func(e map[string]string) { delete(e, "PADDLE_MAX_RESTART") }, 3, "PADDLE_MAX_RESTART"},
		{"pinned rank", func(e map[string]string) { e["PADDLE_TRAINER_ID"] = "0" }, 3, "PADDLE_TRAINER_ID is set"},
		{"fixed endpoints", func(e map[string]string) { e["PADDLE_TRAINER_ENDPOINTS"] = "a:1" }, 3, "PADDLE_TRAINER_ENDPOINTS is set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vs := Check(elasticPods(tc.change, tc.pods), nil)
			if tc.want == "" {
				if len(vs) > 0 {
					t.Fatalf("violations: %v", vs)
				}
				return
			}
			for _, v := range vs {
				if strings.Contains(v.Msg, tc.want) && v.Rule == "launch-elastic" {
					return
				}
			}
			t.Fatalf("violations %v; want one mentioning %q", vs, tc.want)
		})
	}
}
