// Package contract checks the pods of a Paddle job against the rules that
// PaddlePaddle's own start-up code (and the seed images' code) enforces when
// it reads its environment, one rule per entry point (Rules). It is written
// from that code, not from the job plugin, so the e2e and unit tests judge
// the plugin with an independent yardstick. It reads only what the API
// server holds: pod specs (the env of the first container, with
// configMapKeyRef and envFrom resolved against the given ConfigMaps as the
// kubelet would) and the job's Service.
//
// Paddle paths are PaddlePaddle's python/paddle/distributed/ (v2.6, v3.0).
package contract

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

// Violation is one broken rule, with the pod it was seen on.
type Violation struct {
	Pod  string
	Rule string // Rule.Name
	Msg  string
}

func (v Violation) String() string { return v.Pod + ": [" + v.Rule + "] " + v.Msg }

// Mode is how a job trains, as its pods show it.
type Mode string

const (
	PS         Mode = "ps"
	HeterPS    Mode = "heter-ps"
	Collective Mode = "collective"
)

// Rule is what one entry point of Paddle needs from the env of every pod of
// a job of the modes it serves.
type Rule struct {
	Name  string
	Code  string // the file and function the rule is read from
	Modes []Mode
	check func(c *checker, j *job)
}

// Rules, one per entry point, plus the DNS names every entry point resolves.
var Rules = []Rule{
	{Name: "role-maker-ps", Code: "fleet/base/role_maker.py: PaddleCloudRoleMaker._ps_env",
		Modes: []Mode{PS, HeterPS}, check: checkRoleMakerPS},
	{Name: "gloo-ps", Code: "fleet/base/role_maker.py: PaddleCloudRoleMaker._gloo_init",
		Modes: []Mode{PS, HeterPS}, check: checkGloo},
	{Name: "fluid-ctr", Code: "elasticdeeplearning/edl example/ctr/ctr/train.py: train (the seed-000 image volcanosh/edlctr:v1)",
		Modes: []Mode{PS}, check: checkFluidCTR},
	{Name: "fleetrun-cloud", Code: "fleet/cloud_utils.py: use_paddlecloud, get_cloud_cluster; fleet/launch.py: launch_ps, launch_collective",
		Modes: []Mode{PS, HeterPS, Collective}, check: checkFleetrun},
	{Name: "launch-ps", Code: "launch/context/args_envs.py: env_args_mapping; launch/controllers/ps.py: PSController.enable, _build_pod_with_args",
		Modes: []Mode{PS, HeterPS}, check: checkLaunchPS},
	{Name: "role-maker-collective", Code: "fleet/base/role_maker.py: PaddleCloudRoleMaker._collective_env; parallel.py: init_parallel_env",
		Modes: []Mode{Collective}, check: checkCollective},
	{Name: "launch-collective", Code: "launch/context/__init__.py: is_legacy_mode; launch/plugins/__init__.py: collective_compatible, rewrite_host_ip; launch/controllers/master.py: HTTPMaster.lazy_init",
		Modes: []Mode{Collective}, check: checkLaunchCollective},
	{Name: "dns", Code: "Kubernetes pod hostname/subdomain and headless Services; every entry point resolves the names in its lists",
		Modes: []Mode{PS, HeterPS, Collective}, check: checkDNS},
}

type pod struct {
	name string
	p    *v1.Pod
	env  map[string]string
	gpus int64
}

func (p *pod) has(name string) bool { _, ok := p.env[name]; return ok }

type job struct {
	mode                       Mode
	trainers, pservers, heters []*pod
	all                        []*pod
	elastic                    []*pod
	svc                        *v1.Service
}

type checker struct {
	rule string
	out  []Violation
}

func (c *checker) fail(pod, format string, args ...interface{}) {
	c.out = append(c.out, Violation{Pod: pod, Rule: c.rule, Msg: fmt.Sprintf(format, args...)})
}

// Check returns every violation of the rules of the job's mode found among
// the pods of one job (pods of helper tasks, without TRAINING_ROLE, are
// ignored), its Service and the ConfigMaps its pods refer to.
func Check(pods []v1.Pod, svc *v1.Service, cms ...v1.ConfigMap) []Violation {
	return CheckRules(Rules, pods, svc, cms...)
}

// CheckRules is Check with the given rules only.
func CheckRules(rules []Rule, pods []v1.Pod, svc *v1.Service, cms ...v1.ConfigMap) []Violation {
	c := &checker{rule: "env"}
	j := &job{svc: svc}
	for i := range pods {
		p := &pods[i]
		if len(p.Spec.Containers) == 0 {
			continue
		}
		q := &pod{name: p.Name, p: p, env: resolveEnv(c, p, &p.Spec.Containers[0], cms)}
		if isElastic(q) { // elastic.go: the etcd master's own rules
			j.elastic = append(j.elastic, q)
			continue
		}
		if l, ok := p.Spec.Containers[0].Resources.Limits[gputopology.ResourceName]; ok {
			q.gpus = l.Value()
		}
		switch q.env["TRAINING_ROLE"] {
		case "TRAINER":
			j.trainers = append(j.trainers, q)
		case "PSERVER":
			j.pservers = append(j.pservers, q)
		case "HETER_TRAINER":
			j.heters = append(j.heters, q)
		case "":
			continue
		default:
			// role_maker: TRAINING_ROLE must be PSERVER, TRAINER or HETER_TRAINER.
			c.fail(p.Name, "TRAINING_ROLE=%q is not one Paddle accepts", q.env["TRAINING_ROLE"])
		}
	}
	j.all = append(append(append([]*pod{}, j.trainers...), j.pservers...), j.heters...)
	if len(j.elastic) > 0 {
		checkElastic(c, j)
		return c.out
	}
	if len(j.trainers) == 0 {
		c.fail("job", "no pod has TRAINING_ROLE=TRAINER")
		return c.out
	}
	switch {
	case len(j.heters) > 0:
		j.mode = HeterPS
	case len(j.pservers) > 0 || j.trainers[0].env["PADDLE_PSERVERS_IP_PORT_LIST"] != "":
		j.mode = PS
	default:
		j.mode = Collective
	}
	// Every pod reads the lists and counts; they must be the same string on
	// all of them.
	c.sameEverywhere(j.all, "PADDLE_TRAINER_ENDPOINTS", "PADDLE_TRAINERS", "PADDLE_TRAINERS_NUM", "TRAINER_PORTS_NUM",
		"PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_PSERVERS", "PADDLE_WITH_GLOO", "PADDLE_GLOO_RENDEZVOUS", "PADDLE_GLOO_HTTP_ENDPOINT",
		"PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST", "STAGE_NUM", "PADDLE_STAGE_TRAINERS_NUM",
		"PADDLE_SERVERS_ENDPOINTS", "PADDLE_TRAINERS_ENDPOINTS", "PADDLE_RUN_MODE", "PADDLE_GLOO_PORT")
	for _, r := range rules {
		if !r.serves(j.mode) {
			continue
		}
		c.rule = r.Name
		r.check(c, j)
	}
	return c.out
}

func (r *Rule) serves(m Mode) bool {
	for _, x := range r.Modes {
		if x == m {
			return true
		}
	}
	return false
}

// Env is the environment of the pod's first container as the kubelet
// builds it from the pod and the ConfigMaps; problems (a reference to a
// missing ConfigMap or key) are returned as violations.
func Env(p *v1.Pod, cms ...v1.ConfigMap) (map[string]string, []Violation) {
	c := &checker{rule: "env"}
	if len(p.Spec.Containers) == 0 {
		return map[string]string{}, nil
	}
	return resolveEnv(c, p, &p.Spec.Containers[0], cms), c.out
}

// resolveEnv is the container's environment as the kubelet builds it:
// envFrom first, then env (which wins); configMapKeyRef resolved; other
// valueFrom sources are runtime values the API server does not hold.
func resolveEnv(c *checker, p *v1.Pod, ctr *v1.Container, cms []v1.ConfigMap) map[string]string {
	find := func(name string) *v1.ConfigMap {
		for i := range cms {
			if cms[i].Name == name {
				return &cms[i]
			}
		}
		return nil
	}
	env := map[string]string{}
	for _, from := range ctr.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		cm := find(from.ConfigMapRef.Name)
		if cm == nil {
			c.fail(p.Name, "envFrom ConfigMap %q does not exist: the container cannot start", from.ConfigMapRef.Name)
			continue
		}
		for k, v := range cm.Data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm := find(ref.Name)
			v, ok := "", false
			if cm != nil {
				v, ok = cm.Data[ref.Key]
			}
			if !ok {
				c.fail(p.Name, "%s refers to key %q of ConfigMap %q, which does not exist: the container cannot start", e.Name, ref.Key, ref.Name)
				continue
			}
			env[e.Name] = v
		default:
			env[e.Name] = "<valueFrom>"
		}
	}
	return env
}

// role maker, parameter-server mode: the server list must be set (unset:
// Paddle silently trains alone), a pserver's id is
// list.index(POD_IP:PADDLE_PORT) (ValueError otherwise), trainers need
// PADDLE_TRAINER_ID, PADDLE_PORT and POD_IP (2.2+); heter stages need their
// own lists.
func checkRoleMakerPS(c *checker, j *job) {
	ref := j.trainers[0].env
	psEPs := split(ref["PADDLE_PSERVERS_IP_PORT_LIST"])
	if len(psEPs) == 0 {
		c.fail("job", "PADDLE_PSERVERS_IP_PORT_LIST is empty: Paddle trains non-distributed")
	}
	c.noDuplicates("PADDLE_PSERVERS_IP_PORT_LIST", psEPs)
	if len(psEPs) != len(j.pservers) {
		c.fail("job", "%d pserver pods but %d pserver endpoints", len(j.pservers), len(psEPs))
	}
	if n, err := strconv.Atoi(ref["PADDLE_TRAINERS_NUM"]); err != nil || n != len(j.trainers) {
		c.fail("job", "PADDLE_TRAINERS_NUM=%q but the job has %d trainer pods", ref["PADDLE_TRAINERS_NUM"], len(j.trainers))
	}
	for _, s := range j.pservers {
		self := s.env["POD_IP"] + ":" + s.env["PADDLE_PORT"]
		idx := indexOf(psEPs, self)
		if idx < 0 {
			c.fail(s.name, "POD_IP:PADDLE_PORT=%q is not in PADDLE_PSERVERS_IP_PORT_LIST (Paddle raises ValueError)", self)
			continue
		}
		if id := s.env["PADDLE_PSERVER_ID"]; id != "" && id != strconv.Itoa(idx) {
			c.fail(s.name, "PADDLE_PSERVER_ID=%s but its endpoint is entry %d", id, idx)
		}
	}
	ids := map[string]bool{}
	for _, t := range j.trainers {
		id, err := strconv.Atoi(t.env["PADDLE_TRAINER_ID"])
		if err != nil || id < 0 || id >= len(j.trainers) || ids[t.env["PADDLE_TRAINER_ID"]] {
			c.fail(t.name, "PADDLE_TRAINER_ID=%q is not a distinct id below %d", t.env["PADDLE_TRAINER_ID"], len(j.trainers))
		}
		ids[t.env["PADDLE_TRAINER_ID"]] = true
		if t.env["PADDLE_PORT"] == "" || t.env["POD_IP"] == "" {
			c.fail(t.name, "a PS trainer without PADDLE_PORT or POD_IP")
		}
	}
	if eps := split(ref["PADDLE_TRAINER_ENDPOINTS"]); len(eps) > 0 {
		c.noDuplicates("PADDLE_TRAINER_ENDPOINTS", eps)
		if len(eps) != len(j.trainers) {
			c.fail("job", "%d trainer pods but %d trainer endpoints", len(j.trainers), len(eps))
		}
	}
	if j.mode != HeterPS {
		return
	}
	allHeter := split(ref["PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST"])
	c.noDuplicates("PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST", allHeter)
	if len(allHeter) != len(j.heters) {
		c.fail("job", "%d heter pods but %d heter endpoints", len(j.heters), len(allHeter))
	}
	stages := ref["PADDLE_STAGE_TRAINERS_NUM"]
	if want := fmt.Sprintf("[%d,%d]", len(j.trainers), len(j.heters)); strings.ReplaceAll(stages, " ", "") != want {
		c.fail("job", "PADDLE_STAGE_TRAINERS_NUM=%q, want %s (trainers per stage)", stages, want)
	}
	for _, t := range j.trainers {
		if t.env["STAGE_ID"] != "1" || t.env["PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST"] == "" || t.env["STAGE_NUM"] == "" {
			// role_maker asserts: no next stage only for heter trainers and pservers.
			c.fail(t.name, "a heter-PS trainer needs STAGE_ID=1, STAGE_NUM and PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST")
		}
	}
	for _, h := range j.heters {
		self := h.env["POD_IP"] + ":" + h.env["PADDLE_PORT"]
		if indexOf(allHeter, self) < 0 {
			c.fail(h.name, "POD_IP:PADDLE_PORT=%q is not in PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST", self)
		}
		if h.env["PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST"] == "" {
			c.fail(h.name, "a heter trainer without PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST (Paddle asserts it)")
		}
		if h.env["STAGE_ID"] != "2" {
			c.fail(h.name, "STAGE_ID=%q, want 2", h.env["STAGE_ID"])
		}
		switch h.env["HETER_DEVICE_TYPE"] {
		case "cpu", "gpu", "xpu":
		default:
			c.fail(h.name, "HETER_DEVICE_TYPE=%q is not cpu, gpu or xpu", h.env["HETER_DEVICE_TYPE"])
		}
	}
}

// gloo with PS: PADDLE_WITH_GLOO 0/1/2; on, it rendezvouses over HTTP at
// the store pserver 0 serves, on a port of its own (brpc binds PADDLE_PORT)
// that pserver 0 declares.
func checkGloo(c *checker, j *job) {
	ref := j.trainers[0].env
	psEPs := split(ref["PADDLE_PSERVERS_IP_PORT_LIST"])
	gloo := ref["PADDLE_WITH_GLOO"]
	switch gloo {
	case "", "0":
		return
	case "1", "2":
	default:
		c.fail("job", "PADDLE_WITH_GLOO=%q is not 0, 1 or 2", gloo)
		return
	}
	if r := ref["PADDLE_GLOO_RENDEZVOUS"]; r != "3" {
		c.fail("job", "PADDLE_WITH_GLOO=%s needs PADDLE_GLOO_RENDEZVOUS=3 (HTTP), got %q", gloo, r)
	}
	ep := ref["PADDLE_GLOO_HTTP_ENDPOINT"]
	h, port, err := net.SplitHostPort(ep)
	if err != nil {
		c.fail("job", "PADDLE_GLOO_HTTP_ENDPOINT=%q is not host:port", ep)
		return
	}
	if len(psEPs) == 0 {
		return
	}
	if h != hostOf(psEPs[0]) {
		c.fail("job", "PADDLE_GLOO_HTTP_ENDPOINT host %q is not pserver 0 (%q)", h, hostOf(psEPs[0]))
	}
	if port == portOf(psEPs[0]) {
		c.fail("job", "PADDLE_GLOO_HTTP_ENDPOINT uses PADDLE_PORT %s, which pserver 0's brpc server binds", port)
	}
	for _, s := range j.pservers {
		if s.env["POD_IP"] == h && !declares(s.p, port) {
			c.fail(s.name, "pserver 0 serves gloo's store on port %s but does not declare it", port)
		}
	}
}

// The seed's CTR image (Fluid DistributeTranspiler): a pserver's endpoint is
// POD_IP:(PADDLE_PORT+PADDLE_PSERVER_ID), looked up in PADDLE_PSERVERS (the
// transpiler finds no parameters to serve otherwise), where it listens;
// trainers read their id and the trainer count.
func checkFluidCTR(c *checker, j *job) {
	ref := j.trainers[0].env
	list := split(ref["PADDLE_PSERVERS"])
	if len(list) != len(j.pservers) {
		c.fail("job", "PADDLE_PSERVERS has %d entries for %d pserver pods", len(list), len(j.pservers))
	}
	for _, s := range j.pservers {
		port, err1 := strconv.Atoi(s.env["PADDLE_PORT"])
		id, err2 := strconv.Atoi(s.env["PADDLE_PSERVER_ID"])
		if err1 != nil || err2 != nil {
			c.fail(s.name, "PADDLE_PORT=%q and PADDLE_PSERVER_ID=%q must be numbers", s.env["PADDLE_PORT"], s.env["PADDLE_PSERVER_ID"])
			continue
		}
		self := s.env["POD_IP"] + ":" + strconv.Itoa(port+id)
		if i := indexOf(list, self); i != id {
			c.fail(s.name, "its Fluid endpoint POD_IP:(PADDLE_PORT+PADDLE_PSERVER_ID)=%q is not entry %d of PADDLE_PSERVERS %q", self, id, ref["PADDLE_PSERVERS"])
		}
		if !declares(s.p, strconv.Itoa(port+id)) {
			c.fail(s.name, "listens on %d (PADDLE_PORT+PADDLE_PSERVER_ID) but does not declare that port", port+id)
		}
	}
	if n, err := strconv.Atoi(ref["PADDLE_TRAINERS_NUM"]); err != nil || n != len(j.trainers) {
		c.fail("job", "PADDLE_TRAINERS_NUM=%q but the job has %d trainers", ref["PADDLE_TRAINERS_NUM"], len(j.trainers))
	}
	for _, t := range j.trainers {
		if _, err := strconv.Atoi(t.env["PADDLE_TRAINER_ID"]); err != nil {
			c.fail(t.name, "PADDLE_TRAINER_ID=%q is not a number", t.env["PADDLE_TRAINER_ID"])
		}
	}
}

// fleetrun (and the legacy launch) take the cloud path only when
// PADDLE_TRAINERS, POD_IP, PADDLE_TRAINER_ID and TRAINER_PORTS_NUM are all
// set; otherwise they emulate a cluster on 127.0.0.1. In PS mode the cloud
// path starts the script with the pod's env (direct_start). In collective
// mode get_cloud_cluster makes pod PADDLE_TRAINER_ID the node of that rank
// in PADDLE_TRAINERS (POD_IP must be that host), with TRAINER_PORTS_NUM
// ports per node from PADDLE_PORT.
func checkFleetrun(c *checker, j *job) {
	for _, p := range j.all {
		var missing []string
		for _, n := range []string{"PADDLE_TRAINERS", "POD_IP", "PADDLE_TRAINER_ID", "TRAINER_PORTS_NUM"} {
			if !p.has(n) {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			c.fail(p.name, "use_paddlecloud() is false (no %s): fleetrun starts local servers and trainers on 127.0.0.1 instead of this pod's process", strings.Join(missing, ", "))
		}
	}
	if j.mode != Collective {
		return
	}
	hosts := split(j.trainers[0].env["PADDLE_TRAINERS"])
	for _, t := range j.trainers {
		id, err := strconv.Atoi(t.env["PADDLE_TRAINER_ID"])
		if err != nil || id < 0 || id >= len(hosts) || hosts[id] != t.env["POD_IP"] {
			c.fail(t.name, "POD_IP=%q is not entry PADDLE_TRAINER_ID=%q of PADDLE_TRAINERS", t.env["POD_IP"], t.env["PADDLE_TRAINER_ID"])
		}
		if n, err := strconv.Atoi(t.env["TRAINER_PORTS_NUM"]); err != nil || n < 1 || int64(n) < t.gpus {
			// one port per GPU process of the node
			c.fail(t.name, "TRAINER_PORTS_NUM=%q does not cover the pod's %d GPUs", t.env["TRAINER_PORTS_NUM"], t.gpus)
		}
	}
}

// The new launcher in PS mode: PSController.enable needs PADDLE_RUN_MODE=ps
// or one of the server/trainer variables (otherwise the collective
// controller waits for peers forever); with both endpoint lists set,
// _build_pod_with_args starts one server per PADDLE_SERVERS_ENDPOINTS entry
// and one trainer per PADDLE_TRAINERS_ENDPOINTS entry that starts with the
// pod's host (POD_IP, honoured only with a dot), with PADDLE_PORT the
// entry's port and trainer rank the entry's position; gloo's store is
// server 0's host at PADDLE_GLOO_PORT (default 6767) unless
// PADDLE_WITH_GLOO (default "1") is "0". Heter trainers have no process in
// it (Paddle's PS controller knows no heter role): they are not judged.
func checkLaunchPS(c *checker, j *job) {
	for _, p := range append(append([]*pod{}, j.pservers...), j.trainers...) {
		if legacy := legacyLaunch(p); legacy != "" {
			c.fail(p.name, "%s is set: the launcher falls back to the legacy launch", legacy)
			continue
		}
		e := p.env
		if e["PADDLE_RUN_MODE"] != "ps" && e["PADDLE_SERVER_NUM"] == "" && e["PADDLE_SERVERS_ENDPOINTS"] == "" &&
			e["PADDLE_TRAINER_NUM"] == "" && e["PADDLE_TRAINERS_ENDPOINTS"] == "" {
			c.fail(p.name, "PSController.enable is false: the launcher picks the collective controller and waits for peers forever")
			continue
		}
		servers, trainers := split(e["PADDLE_SERVERS_ENDPOINTS"]), split(e["PADDLE_TRAINERS_ENDPOINTS"])
		if len(servers) == 0 || len(trainers) == 0 {
			c.fail(p.name, "PADDLE_SERVERS_ENDPOINTS and PADDLE_TRAINERS_ENDPOINTS are not both set: the launcher starts processes on random ports and syncs them through a master")
			continue
		}
		host := e["POD_IP"]
		if !strings.Contains(host, ".") {
			c.fail(p.name, "POD_IP=%q has no dot: the launcher ignores it and matches its own address against the lists", host)
			continue
		}
		var mine []string
		offset := -1
		for _, s := range servers {
			if strings.HasPrefix(s, host) {
				mine = append(mine, "server "+s)
			}
		}
		for i, t := range trainers {
			if strings.HasPrefix(t, host) {
				mine = append(mine, "trainer "+t)
				if offset < 0 {
					offset = i
				}
			}
		}
		want := "server " + host + ":" + e["PADDLE_PORT"]
		if e["TRAINING_ROLE"] == "TRAINER" {
			want = "trainer " + host + ":" + e["PADDLE_PORT"]
			if strconv.Itoa(offset) != e["PADDLE_TRAINER_ID"] {
				c.fail(p.name, "the launcher gives its trainer rank %d, not PADDLE_TRAINER_ID=%s", offset, e["PADDLE_TRAINER_ID"])
			}
		}
		if len(mine) != 1 || mine[0] != want {
			c.fail(p.name, "the launcher would start %v in this pod, want exactly its own %s", mine, want)
		}
		if e["PADDLE_WITH_GLOO"] != "0" {
			port := e["PADDLE_GLOO_PORT"]
			if port == "" {
				port = "6767"
			}
			store := hostOf(servers[0]) + ":" + port
			if g := e["PADDLE_GLOO_HTTP_ENDPOINT"]; g != store {
				c.fail(p.name, "the launcher puts gloo's store at %s, but PADDLE_GLOO_HTTP_ENDPOINT=%q", store, g)
			}
		}
	}
}

// role maker, collective: the current endpoint is entry PADDLE_TRAINER_ID
// of PADDLE_TRAINER_ENDPOINTS (world size = its length; the store uses
// PADDLE_TRAINERS_NUM: they must agree); PADDLE_TRAINING_ROLE is TRAINER if
// set; rank 0 hosts the TCP store at PADDLE_MASTER; GPU processes need
// FLAGS_selected_gpus.
func checkCollective(c *checker, j *job) {
	ref := j.trainers[0].env
	eps := split(ref["PADDLE_TRAINER_ENDPOINTS"])
	c.noDuplicates("PADDLE_TRAINER_ENDPOINTS", eps)
	if n, err := strconv.Atoi(ref["PADDLE_TRAINERS_NUM"]); err != nil || n != len(eps) {
		c.fail("job", "PADDLE_TRAINERS_NUM=%q but PADDLE_TRAINER_ENDPOINTS has %d entries", ref["PADDLE_TRAINERS_NUM"], len(eps))
	}
	if len(eps) != len(j.trainers) {
		c.fail("job", "%d trainer pods but %d trainer endpoints", len(j.trainers), len(eps))
	}
	if m := ref["PADDLE_MASTER"]; m != "" && (len(eps) == 0 || m != eps[0]) {
		c.fail("job", "PADDLE_MASTER=%q is not the first trainer endpoint", m)
	}
	for _, t := range j.trainers {
		if r, ok := t.env["PADDLE_TRAINING_ROLE"]; ok && r != "TRAINER" {
			c.fail(t.name, "PADDLE_TRAINING_ROLE=%q; _collective_env asserts TRAINER", r)
		}
		id, err := strconv.Atoi(t.env["PADDLE_TRAINER_ID"])
		if err != nil || id < 0 || id >= len(eps) {
			c.fail(t.name, "PADDLE_TRAINER_ID=%q is outside PADDLE_TRAINER_ENDPOINTS (%d entries)", t.env["PADDLE_TRAINER_ID"], len(eps))
			continue
		}
		if cur := t.env["PADDLE_CURRENT_ENDPOINT"]; cur != eps[id] {
			c.fail(t.name, "PADDLE_CURRENT_ENDPOINT=%q is not entry %d of PADDLE_TRAINER_ENDPOINTS (%q)", cur, id, eps[id])
		}
		if t.gpus > 0 && t.env["FLAGS_selected_gpus"] == "" {
			c.fail(t.name, "a GPU trainer without FLAGS_selected_gpus")
		}
	}
}

// The new launcher, collective: not the legacy launch, not the PS
// controller; collective_compatible takes the master from the first
// PADDLE_TRAINER_ENDPOINTS entry and nnodes from its hosts; exactly one pod
// sees its own POD_IP (with a dot) as the master host and serves it, or
// every pod waits forever.
func checkLaunchCollective(c *checker, j *job) {
	eps := split(j.trainers[0].env["PADDLE_TRAINER_ENDPOINTS"])
	if len(eps) == 0 {
		c.fail("job", "no PADDLE_TRAINER_ENDPOINTS: the launcher has no master")
		return
	}
	master := hostOf(eps[0])
	hosts := map[string]bool{}
	for _, ep := range eps {
		hosts[hostOf(ep)] = true
	}
	seen := 0
	for _, t := range j.trainers {
		e := t.env
		if legacy := legacyLaunch(t); legacy != "" {
			c.fail(t.name, "%s is set: the launcher falls back to the legacy launch", legacy)
		}
		if e["PADDLE_RUN_MODE"] == "ps" || e["PADDLE_SERVER_NUM"] != "" || e["PADDLE_SERVERS_ENDPOINTS"] != "" ||
			e["PADDLE_TRAINER_NUM"] != "" || e["PADDLE_TRAINERS_ENDPOINTS"] != "" {
			c.fail(t.name, "PSController.enable is true in a collective job")
		}
		if !strings.Contains(e["POD_IP"], ".") {
			c.fail(t.name, "POD_IP=%q has no dot: the launcher ignores it", e["POD_IP"])
		}
		if e["POD_IP"] == master {
			seen++
		}
		if n := e["PADDLE_NNODES"]; n != "" && n != strconv.Itoa(len(hosts)) {
			c.fail(t.name, "PADDLE_NNODES=%q, want %d hosts", n, len(hosts))
		}
	}
	if seen != 1 {
		c.fail("job", "%d pods have POD_IP equal to the master host %q, want exactly 1", seen, master)
	}
}

// legacyLaunch names the variable that makes the new launcher run the
// legacy one (launch/context/__init__.py: is_legacy_mode), if any.
func legacyLaunch(p *pod) string {
	for _, n := range []string{"DISTRIBUTED_TRAINER_ENDPOINTS", "PADDLE_ELASTIC_JOB_ID", "FLAGS_START_PORT"} {
		if p.has(n) {
			return n
		}
	}
	return ""
}

// checkDNS: every address in the lists is the DNS name of one of the pods
// (hostname.subdomain), published by a headless Service that selects the
// pods and publishes them before they are Ready, and POD_IP is the pod's
// own name.
func checkDNS(c *checker, j *job) {
	names := map[string]*pod{}
	for _, p := range j.all {
		if p.p.Spec.Hostname == "" || p.p.Spec.Subdomain == "" {
			c.fail(p.name, "no hostname/subdomain: the pod has no stable DNS name")
			continue
		}
		own := p.p.Spec.Hostname + "." + p.p.Spec.Subdomain
		names[own] = p
		if p.env["POD_IP"] != own {
			c.fail(p.name, "POD_IP=%q is not the pod's own DNS name %s", p.env["POD_IP"], own)
		}
	}
	for _, l := range []string{"PADDLE_TRAINER_ENDPOINTS", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_PSERVERS", "PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST", "PADDLE_TRAINERS"} {
		for _, ep := range split(j.all[0].env[l]) {
			if names[hostOf(ep)] == nil {
				c.fail("job", "%s names %q, which is no pod of the job", l, hostOf(ep))
			}
		}
	}
	svc := j.svc
	if svc == nil {
		c.fail("job", "no headless Service for the pods' subdomain")
		return
	}
	if svc.Spec.ClusterIP != v1.ClusterIPNone {
		c.fail("job", "Service %s is not headless (clusterIP %q): pods get no per-pod DNS records", svc.Name, svc.Spec.ClusterIP)
	}
	if !svc.Spec.PublishNotReadyAddresses {
		c.fail("job", "Service %s does not publish not-ready addresses: peers cannot resolve each other while starting", svc.Name)
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	for _, p := range j.all {
		if p.p.Spec.Subdomain != svc.Name {
			c.fail(p.name, "subdomain %q is not the Service %q", p.p.Spec.Subdomain, svc.Name)
		}
		if len(svc.Spec.Selector) == 0 || !sel.Matches(labels.Set(p.p.Labels)) {
			c.fail(p.name, "the Service %s does not select this pod", svc.Name)
		}
	}
}

// declares reports whether a container of the pod declares the port.
func declares(p *v1.Pod, port string) bool {
	for _, ctr := range p.Spec.Containers {
		for _, cp := range ctr.Ports {
			if strconv.Itoa(int(cp.ContainerPort)) == port {
				return true
			}
		}
	}
	return false
}

func (c *checker) sameEverywhere(all []*pod, names ...string) {
	for _, n := range names {
		vals := map[string][]string{}
		for _, p := range all {
			vals[p.env[n]] = append(vals[p.env[n]], p.name)
		}
		if len(vals) > 1 {
			var parts []string
			for v, ps := range vals {
				if len(v) > 80 {
					v = v[:80] + "..."
				}
				parts = append(parts, fmt.Sprintf("%q on %d pods (%s...)", v, len(ps), ps[0]))
			}
			sort.Strings(parts)
			c.fail("job", "%s differs between pods: %s", n, strings.Join(parts, "; "))
		}
	}
}

func (c *checker) noDuplicates(name string, list []string) {
	seen := make(map[string]bool, len(list))
	for _, e := range list {
		if seen[e] {
			c.fail("job", "%s lists %q twice", name, e)
		}
		seen[e] = true
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func hostOf(ep string) string {
	if h, _, err := net.SplitHostPort(ep); err == nil {
		return h
	}
	return ep
}

func portOf(ep string) string {
	if _, p, err := net.SplitHostPort(ep); err == nil {
		return p
	}
	return ""
}

func indexOf(list []string, s string) int {
	for i, e := range list {
		if e == s {
			return i
		}
	}
	return -1
}
