package paddlejob

import (
	"sort"
	"strings"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	v1 "k8s.io/api/core/v1"
)

// list builds one shared list; O(replicas), called once per incarnation.
func (l *Layout) list(key string) string {
	var b strings.Builder
	add := func(s string) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s)
	}
	each := func(r *RoleTask, f func(int) string) {
		if r == nil {
			return
		}
		for i := 0; i < r.Replicas; i++ {
			add(f(i))
		}
	}
	switch key {
	case listPServerEndpoints:
		each(l.PServer, func(i int) string { return l.endpoint(l.PServer, i) })
	case listFluidPServers:
		each(l.PServer, func(i int) string { return paddleapi.Endpoint(l.host(l.PServer, i), l.fluidPort(i)) })
	case listTrainerEndpoints:
		each(l.Trainer, func(i int) string { return l.endpoint(l.Trainer, i) })
	case listTrainerHosts:
		each(l.Trainer, func(i int) string { return l.host(l.Trainer, i) })
	case listHeterEndpoints:
		each(l.Heter, func(i int) string { return l.endpoint(l.Heter, i) })
	case listBarrierHosts:
		if l.Elastic != nil {
			add(EtcdName(l.Job)) // elastic.go: peers come and go; the launchers need their etcd
			break
		}
		for _, r := range l.barrierRoles() {
			each(r, func(i int) string { return l.host(r, i) })
		}
	default:
		panic("paddle: unknown list " + key)
	}
	return b.String()
}

// lists are the keys of the lists this job's pods refer to, sorted.
func (l *Layout) lists() []string {
	seen := map[string]bool{}
	for _, r := range l.roles() {
		for _, v := range l.roleEnv(r, 0) {
			if v.list != "" {
				seen[v.list] = true
			}
		}
	}
	if l.Args.Barrier {
		seen[listBarrierHosts] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// roleEnv is the Paddle env of replica index of role r: every variable of
// every entry point of the mode, once, in entry-point order. Variables that
// refer to an omitted list are left out (validation.go: checkListSizes).
// An elastic job's pods have one more source, first: the elastic
// launcher's variables (elasticenv.go), and of the entry points' variables
// only those elasticEnvUse gives them.
func (l *Layout) roleEnv(r *RoleTask, index int) []envVar {
	seen := map[string]bool{}
	var out []envVar
	add := func(v envVar) {
		if !seen[v.name] {
			seen[v.name] = true
			out = append(out, v)
		}
	}
	if l.Elastic != nil {
		for _, v := range l.elasticEnv() {
			add(v)
		}
	}
	p := replica{l: l, r: r, index: index}
	for i := range entryPoints {
		e := &entryPoints[i]
		if !e.serves(l.Mode) {
			continue
		}
		for _, v := range e.vars(p) {
			if v.list != "" && l.sizes.omitted[v.list] {
				continue
			}
			if l.Elastic != nil && !elasticEnvUse[v.name].given {
				continue // withheld from the elastic launcher
			}
			add(v)
		}
	}
	return out
}

// podEnv is roleEnv as Kubernetes env: lists become references to the
// incarnation's ConfigMap, fields references to the pod's own.
func (l *Layout) podEnv(r *RoleTask, index int) []v1.EnvVar {
	vs := l.roleEnv(r, index)
	out := make([]v1.EnvVar, len(vs))
	for i, v := range vs {
		out[i] = l.k8sEnv(v)
	}
	return out
}

func (l *Layout) k8sEnv(v envVar) v1.EnvVar {
	if v.field != "" {
		return v1.EnvVar{Name: v.name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: v.field}}}
	}
	if v.list == "" {
		return v1.EnvVar{Name: v.name, Value: v.value}
	}
	return v1.EnvVar{Name: v.name, ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: ConfigMapName(l.Job, l.Incarnation)},
		Key:                  v.list,
	}}}
}

// barrierHostsEnv is the barrier's host list, a reference to the
// incarnation's ConfigMap like the pods' other lists.
func (l *Layout) barrierHostsEnv() v1.EnvVar {
	return l.k8sEnv(shared(EnvBarrierHosts, listBarrierHosts))
}

// contractEnvNames are the names the entry points set (entrypoints.go), which
// Paddle cross-checks. PADDLE_JOB_ID and FLAGS_selected_gpus are not among
// them: a user's value for those breaks no check and simply wins.
var contractEnvNames = func() map[string]bool {
	m := map[string]bool{}
	a := &Args{Port: DefaultPort, PortsPerPod: DefaultPortsPerPod, Gloo: 1, HeterDevice: heterDeviceAuto}
	role := func(r paddleapi.Role) *RoleTask { return &RoleTask{Role: r, TaskName: string(r), Replicas: 1} }
	for _, mode := range allModes {
		l := &Layout{Job: "j", Mode: mode, Args: a, Trainer: role(paddleapi.RoleTrainer)}
		if mode != paddleapi.ModeCollective {
			l.PServer = role(paddleapi.RolePServer)
		}
		if mode == paddleapi.ModeHeterPS {
			l.Heter = role(paddleapi.RoleHeter)
		}
		for _, r := range l.roles() {
			for _, v := range l.roleEnv(r, 0) {
				m[v.name] = true
			}
		}
	}
	delete(m, EnvJobID)
	return m
}()
