package paddlejob

import (
	"testing"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Two entry points that read the same variable agree on its value in every
// mode and role, so the pod can carry it once.
func TestEntryPointsAgree(t *testing.T) {
	jobs := []*batch.Job{
		newJob("ml", "ps", []string{"--gloo=2"}, testbuilders.PaddleTask{Name: "ps", Replicas: 2}, testbuilders.PaddleTask{Name: "worker", Replicas: 3}),
		newJob("ml", "het", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2}, testbuilders.PaddleTask{Name: "heter", Replicas: 2}),
		newJob("ml", "col", nil, testbuilders.PaddleTask{Name: "trainer", Replicas: 3, GPUs: 2}),
	}
	for _, job := range jobs {
		a, _ := parseArgs(job.Spec.Plugins[PluginName])
		l, errs := ValidateJob(job, a)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		for _, lay := range []*Layout{l, l.At(4)} {
			for _, r := range lay.roles() {
				for idx := 0; idx < r.Replicas; idx++ {
					p := replica{l: lay, r: r, index: idx}
					seen := map[string]envVar{}
					by := map[string]string{}
					for _, e := range entryPoints {
						if !e.serves(lay.Mode) {
							continue
						}
						for _, v := range e.vars(p) {
							if was, ok := seen[v.name]; ok && was != v {
								t.Errorf("%s %s-%d: %s is %+v for %q but %+v for %q", job.Name, r.TaskName, idx, v.name, was, by[v.name], v, e.Name)
							}
							seen[v.name], by[v.name] = v, e.Name
						}
					}
				}
			}
		}
	}
}

// The ConfigMap stays under its 1 MiB limit whatever the job: every list
// in it passed the MAX_ARG_STRLEN check, and there are at most six.
func TestConfigMapBound(t *testing.T) {
	keys := map[string]bool{listBarrierHosts: true}
	for _, e := range entryPoints {
		a := &Args{Port: DefaultPort, PortsPerPod: DefaultPortsPerPod, Gloo: 1, HeterDevice: heterDeviceAuto}
		one := func(r paddleapi.Role) *RoleTask { return &RoleTask{Role: r, TaskName: string(r), Replicas: 1} }
		for _, m := range e.Modes {
			l := &Layout{Job: "j", Mode: m, Args: a, PServer: one(paddleapi.RolePServer), Trainer: one(paddleapi.RoleTrainer), Heter: one(paddleapi.RoleHeter)}
			for _, r := range l.roles() {
				for _, v := range e.vars(replica{l: l, r: r}) {
					if v.list != "" {
						keys[v.list] = true
					}
				}
			}
		}
	}
	const configMapLimit = 1 << 20 // k8s.io/kubernetes pkg/apis/core/validation: ValidateConfigMap (MaxSecretSize)
	if n := len(keys) * (maxEnvStringBytes + 64); len(keys) > 6 || n >= configMapLimit {
		t.Errorf("%d lists could need %d bytes, over the ConfigMap limit: %v", len(keys), n, keys)
	}
}
