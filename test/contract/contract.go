// Package contract checks the pods of a Paddle job against the rules that
// PaddlePaddle's own code enforces when it reads its environment (design.md
// section 3: role_maker.py _ps_env/_collective_env/_gloo_init, parallel.py
// init_parallel_env, fleet cloud_utils.py/launch_utils.py, the new launcher's
// collective_compatible and HTTPMaster). It is written from those rules, not
// from the job plugin, so the e2e and unit tests judge the plugin with an
// independent yardstick. It reads only what the API server holds: pod
// specs (literal env of the first container) and the job's Service.
package contract

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Violation is one broken rule, with the pod it was seen on.
type Violation struct {
	Pod  string
	Rule string
}

func (v Violation) String() string { return v.Pod + ": " + v.Rule }

type pod struct {
	name string
	p    *v1.Pod
	env  map[string]string
	gpus int64
}

type checker struct {
	out []Violation
}

func (c *checker) fail(pod, format string, args ...interface{}) {
	c.out = append(c.out, Violation{Pod: pod, Rule: fmt.Sprintf(format, args...)})
}

// Check returns every violation found among the pods of one job (pods of
// helper tasks, without TRAINING_ROLE, are ignored) and its Service.
func Check(pods []v1.Pod, svc *v1.Service) []Violation {
	c := &checker{}
	var trainers, pservers, heters []*pod
	for i := range pods {
		p := &pods[i]
		if len(p.Spec.Containers) == 0 {
			continue
		}
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			if e.ValueFrom != nil {
				env[e.Name] = "<valueFrom>"
				continue
			}
			env[e.Name] = e.Value
		}
		q := &pod{name: p.Name, p: p, env: env}
		if l, ok := p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; ok {
			q.gpus = l.Value()
		}
		switch env["TRAINING_ROLE"] {
		case "TRAINER":
			trainers = append(trainers, q)
		case "PSERVER":
			pservers = append(pservers, q)
		case "HETER_TRAINER":
			heters = append(heters, q)
		case "":
			continue
		default:
			// role_maker: TRAINING_ROLE must be PSERVER, TRAINER or HETER_TRAINER.
			c.fail(p.Name, "TRAINING_ROLE=%q is not one Paddle accepts", env["TRAINING_ROLE"])
		}
	}
	all := append(append(append([]*pod{}, trainers...), pservers...), heters...)
	if len(trainers) == 0 {
		c.fail("job", "no pod has TRAINING_ROLE=TRAINER")
		return c.out
	}
	c.sameEverywhere(all, "PADDLE_TRAINER_ENDPOINTS", "PADDLE_TRAINERS", "PADDLE_TRAINERS_NUM", "TRAINER_PORTS_NUM",
		"PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_WITH_GLOO", "PADDLE_GLOO_RENDEZVOUS", "PADDLE_GLOO_HTTP_ENDPOINT",
		"PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST", "STAGE_NUM", "PADDLE_STAGE_TRAINERS_NUM")

	ref := trainers[0].env
	trainerEPs := split(ref["PADDLE_TRAINER_ENDPOINTS"])
	c.noDuplicates("PADDLE_TRAINER_ENDPOINTS", trainerEPs)
	if n, err := strconv.Atoi(ref["PADDLE_TRAINERS_NUM"]); err != nil || n != len(trainerEPs) {
		// role_maker takes the world size from the list, the store from
		// PADDLE_TRAINERS_NUM: they must agree.
		c.fail("job", "PADDLE_TRAINERS_NUM=%q but PADDLE_TRAINER_ENDPOINTS has %d entries", ref["PADDLE_TRAINERS_NUM"], len(trainerEPs))
	}
	if len(trainerEPs) != len(trainers) {
		c.fail("job", "%d trainer pods but %d trainer endpoints", len(trainers), len(trainerEPs))
	}
	// fleetrun's cloud path: PADDLE_TRAINERS are the hosts, in rank order.
	var hosts []string
	for _, ep := range trainerEPs {
		hosts = append(hosts, hostOf(ep))
	}
	if got := ref["PADDLE_TRAINERS"]; got != strings.Join(hosts, ",") {
		c.fail("job", "PADDLE_TRAINERS=%q is not the hosts of PADDLE_TRAINER_ENDPOINTS in order (%q)", got, strings.Join(hosts, ","))
	}

	for _, t := range trainers {
		c.endpointPod(t, trainerEPs, "PADDLE_TRAINER_ID", "PADDLE_TRAINER_ENDPOINTS")
		if cur := t.env["PADDLE_CURRENT_ENDPOINT"]; cur != t.env["POD_IP"]+":"+t.env["PADDLE_PORT"] {
			c.fail(t.name, "PADDLE_CURRENT_ENDPOINT=%q is not POD_IP:PADDLE_PORT", cur)
		}
		if n, err := strconv.Atoi(t.env["TRAINER_PORTS_NUM"]); err != nil || n < 1 || int64(n) < t.gpus {
			// launch: TRAINER_PORTS_NUM must cover one port per GPU process.
			c.fail(t.name, "TRAINER_PORTS_NUM=%q does not cover the pod's %d GPUs", t.env["TRAINER_PORTS_NUM"], t.gpus)
		}
		if t.gpus > 0 && t.env["FLAGS_selected_gpus"] == "" {
			c.fail(t.name, "a GPU trainer without FLAGS_selected_gpus")
		}
	}

	psList := ref["PADDLE_PSERVERS_IP_PORT_LIST"]
	switch {
	case len(pservers) > 0 || psList != "":
		c.checkPS(trainers, pservers, heters, split(psList))
	default:
		c.checkCollective(trainers, trainerEPs)
	}
	c.checkDNS(all, svc)
	return c.out
}

func (c *checker) checkPS(trainers, pservers, heters []*pod, psEPs []string) {
	c.noDuplicates("PADDLE_PSERVERS_IP_PORT_LIST", psEPs)
	if len(psEPs) != len(pservers) {
		c.fail("job", "%d pserver pods but %d pserver endpoints", len(pservers), len(psEPs))
	}
	for _, s := range pservers {
		// role_maker: a pserver's id is list.index(POD_IP:PADDLE_PORT).
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
	for _, t := range trainers {
		// Trainers read PADDLE_PORT and POD_IP too since Paddle 2.2.
		if t.env["PADDLE_PORT"] == "" || t.env["POD_IP"] == "" {
			c.fail(t.name, "a PS trainer without PADDLE_PORT or POD_IP")
		}
	}
	gloo := trainers[0].env["PADDLE_WITH_GLOO"]
	switch gloo {
	case "", "0":
	case "1", "2":
		if r := trainers[0].env["PADDLE_GLOO_RENDEZVOUS"]; r != "3" {
			c.fail("job", "PADDLE_WITH_GLOO=%s needs PADDLE_GLOO_RENDEZVOUS=3 (HTTP), got %q", gloo, r)
		}
		ep := trainers[0].env["PADDLE_GLOO_HTTP_ENDPOINT"]
		h, port, err := net.SplitHostPort(ep)
		if err != nil {
			c.fail("job", "PADDLE_GLOO_HTTP_ENDPOINT=%q is not host:port", ep)
			break
		}
		// pserver 0 starts the HTTP store on that endpoint.
		if len(psEPs) > 0 && h != hostOf(psEPs[0]) {
			c.fail("job", "PADDLE_GLOO_HTTP_ENDPOINT host %q is not pserver 0 (%q)", h, hostOf(psEPs[0]))
		}
		if len(psEPs) > 0 && port == portOf(psEPs[0]) {
			c.fail("job", "PADDLE_GLOO_HTTP_ENDPOINT uses PADDLE_PORT %s, which pserver 0's brpc server binds", port)
		}
	default:
		c.fail("job", "PADDLE_WITH_GLOO=%q is not 0, 1 or 2", gloo)
	}

	allHeter := split(trainers[0].env["PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST"])
	if len(heters) == 0 && len(allHeter) == 0 {
		return
	}
	c.noDuplicates("PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST", allHeter)
	if len(allHeter) != len(heters) {
		c.fail("job", "%d heter pods but %d heter endpoints", len(heters), len(allHeter))
	}
	stages := trainers[0].env["PADDLE_STAGE_TRAINERS_NUM"]
	if want := fmt.Sprintf("[%d, %d]", len(trainers), len(heters)); strings.ReplaceAll(stages, " ", "") != strings.ReplaceAll(want, " ", "") {
		c.fail("job", "PADDLE_STAGE_TRAINERS_NUM=%q, want %s (trainers per stage)", stages, want)
	}
	for _, t := range trainers {
		if t.env["STAGE_ID"] != "1" || t.env["PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST"] == "" || t.env["STAGE_NUM"] == "" {
			// role_maker asserts: no next stage only for heter trainers and pservers.
			c.fail(t.name, "a heter-PS trainer needs STAGE_ID=1, STAGE_NUM and PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST")
		}
	}
	for _, h := range heters {
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

func (c *checker) checkCollective(trainers []*pod, trainerEPs []string) {
	master := trainers[0].env["PADDLE_MASTER"]
	if len(trainerEPs) > 0 && master != trainerEPs[0] {
		c.fail("job", "PADDLE_MASTER=%q is not the first trainer endpoint %q", master, trainerEPs[0])
	}
	nodes := map[string]bool{}
	for _, ep := range trainerEPs {
		nodes[hostOf(ep)] = true
	}
	if n := trainers[0].env["PADDLE_NNODES"]; n != strconv.Itoa(len(nodes)) {
		c.fail("job", "PADDLE_NNODES=%q, want %d hosts", n, len(nodes))
	}
	// New launcher: exactly one pod may see its POD_IP equal to the master
	// host, or every pod waits forever.
	seen := 0
	for _, t := range trainers {
		if t.env["POD_IP"] == hostOf(master) {
			seen++
		}
	}
	if seen != 1 {
		c.fail("job", "%d pods have POD_IP equal to the master host %q, want exactly 1", seen, hostOf(master))
	}
}

// endpointPod checks that a pod's id is the position of its own endpoint.
func (c *checker) endpointPod(p *pod, eps []string, idVar, listVar string) {
	id, err := strconv.Atoi(p.env[idVar])
	if err != nil {
		c.fail(p.name, "%s=%q is not a number", idVar, p.env[idVar])
		return
	}
	if id < 0 || id >= len(eps) {
		c.fail(p.name, "%s=%d is outside %s (%d entries)", idVar, id, listVar, len(eps))
		return
	}
	if cur := p.env["PADDLE_CURRENT_ENDPOINT"]; cur != eps[id] {
		c.fail(p.name, "PADDLE_CURRENT_ENDPOINT=%q is not entry %d of %s (%q)", cur, id, listVar, eps[id])
	}
	ip := p.env["POD_IP"]
	if !strings.Contains(ip, ".") {
		// The new launcher honours POD_IP only if it contains a dot.
		c.fail(p.name, "POD_IP=%q has no dot", ip)
	}
	if hostOf(eps[id]) != ip {
		c.fail(p.name, "POD_IP=%q is not the host of its endpoint %q (fleetrun needs POD_IP in PADDLE_TRAINERS)", ip, eps[id])
	}
}

// checkDNS: every address in the lists is the stable name of one of the
// pods (hostname.subdomain), published by a headless Service that selects
// the pods and publishes them before they are Ready.
func (c *checker) checkDNS(all []*pod, svc *v1.Service) {
	names := map[string]*pod{}
	for _, p := range all {
		if p.p.Spec.Hostname == "" || p.p.Spec.Subdomain == "" {
			c.fail(p.name, "no hostname/subdomain: the pod has no stable DNS name")
			continue
		}
		names[p.p.Spec.Hostname+"."+p.p.Spec.Subdomain] = p
		if p.env["POD_IP"] != p.p.Spec.Hostname+"."+p.p.Spec.Subdomain {
			c.fail(p.name, "POD_IP=%q is not the pod's own DNS name %s.%s", p.env["POD_IP"], p.p.Spec.Hostname, p.p.Spec.Subdomain)
		}
	}
	lists := []string{"PADDLE_TRAINER_ENDPOINTS", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST"}
	for _, l := range lists {
		for _, ep := range split(all[0].env[l]) {
			if names[hostOf(ep)] == nil {
				c.fail("job", "%s names %q, which is no pod of the job", l, hostOf(ep))
			}
		}
	}
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
	for _, p := range all {
		if p.p.Spec.Subdomain != svc.Name {
			c.fail(p.name, "subdomain %q is not the Service %q", p.p.Spec.Subdomain, svc.Name)
		}
		if len(svc.Spec.Selector) == 0 || !sel.Matches(labels.Set(p.p.Labels)) {
			c.fail(p.name, "the Service %s does not select this pod", svc.Name)
		}
	}
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
				parts = append(parts, fmt.Sprintf("%q on %s", v, strings.Join(ps, ",")))
			}
			sort.Strings(parts)
			c.fail("job", "%s differs between pods: %s", n, strings.Join(parts, "; "))
		}
	}
}

func (c *checker) noDuplicates(name string, list []string) {
	seen := map[string]bool{}
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
