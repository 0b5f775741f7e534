package paddlejob

import (
	"sort"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Every variable an entry point sets, in every mode and role, is
// classified for elastic pods: a variable added to the entry-point table
// must say whether Paddle's elastic launcher gets it, and why.
func TestElasticEnvClassifiesEveryVariable(t *testing.T) {
	a := &Args{Port: DefaultPort, PortsPerPod: DefaultPortsPerPod, Gloo: 1, HeterDevice: heterDeviceAuto}
	one := func(r paddleapi.Role) *RoleTask { return &RoleTask{Role: r, TaskName: string(r), Replicas: 1} }
	reported := map[string]bool{}
	for _, e := range entryPoints {
		for _, m := range e.Modes {
			l := &Layout{Job: "j", Mode: m, Args: a, PServer: one(paddleapi.RolePServer), Trainer: one(paddleapi.RoleTrainer), Heter: one(paddleapi.RoleHeter)}
			for _, r := range l.roles() {
				for _, v := range e.vars(replica{l: l, r: r}) {
					if _, ok := elasticEnvUse[v.name]; !ok && !reported[v.name] {
						reported[v.name] = true
						t.Errorf("%s, set by entry point %q, is not classified for elastic pods: add it to elasticEnvUse (elasticenv.go), given (elasticEnv sets it) or withheld, with why", v.name, e.Name)
					}
				}
			}
		}
	}
	for name, use := range elasticEnvUse {
		if use.why == "" {
			t.Errorf("%s: no reason", name)
		}
		if use.given && use.refused {
			t.Errorf("%s is both given and refused", name)
		}
	}
}

// An elastic pod carries the elastic source's variables, which are
// exactly the ones elasticEnvUse gives.
func TestElasticPodEnvIsTheGivenVariables(t *testing.T) {
	job := elasticJob("el", 2, 3, 4)
	a, errs := parseArgs(job.Spec.Plugins[PluginName])
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	l, errs := ValidateJob(job, a)
	if len(errs) > 0 || l.Elastic == nil {
		t.Fatalf("elastic job: %v", errs)
	}
	var given []string
	for name, use := range elasticEnvUse {
		if use.given {
			given = append(given, name)
		}
	}
	sort.Strings(given)
	var source []string
	for _, v := range l.elasticEnv() {
		source = append(source, v.name)
	}
	sort.Strings(source)
	if !equalStrings(source, given) {
		t.Errorf("elasticEnv sets %v, elasticEnvUse gives %v", source, given)
	}
	for idx := 0; idx < l.Trainer.Replicas; idx++ {
		var got []string
		for _, e := range l.podEnv(l.Trainer, idx) {
			got = append(got, e.Name)
		}
		sort.Strings(got)
		if !equalStrings(got, given) {
			t.Errorf("trainer %d gets %v, want the given variables %v", idx, got, given)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
