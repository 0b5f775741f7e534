package contract

import (
	"strconv"
	"strings"
)

// Elastic collective jobs: Paddle's launcher with an etcd master
// (launch/controllers/collective.py: CollectiveElasticController.enable,
// launch/controllers/master.py: ETCDMaster). Read from Paddle v2.6.2 and
// v3.0.0-beta2, python/paddle/distributed/launch/.

func isElastic(p *pod) bool { return strings.HasPrefix(p.env["PADDLE_MASTER"], "etcd://") }

// pyStrip is Python's str.strip(chars).
func pyStrip(s, chars string) string { return strings.Trim(s, chars) }

func checkElastic(c *checker, j *job) {
	c.rule = "launch-elastic"
	if len(j.trainers)+len(j.pservers)+len(j.heters) > 0 {
		c.fail("job", "pods with an etcd PADDLE_MASTER next to pods with a fixed role: Paddle's elastic launcher is collective only")
	}
	c.sameEverywhere(j.elastic, "PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_JOB_ID", "PADDLE_ELASTIC_TIMEOUT")
	for _, p := range j.elastic {
		// ETCDMaster.__init__: master.strip("etcd://") strips characters.
		master := p.env["PADDLE_MASTER"]
		addr := pyStrip(master, "etcd:/")
		if addr != strings.TrimPrefix(master, "etcd://") {
			c.fail(p.name, "PADDLE_MASTER=%s reaches Paddle as %q (strip(\"etcd://\") removes e, t, c, d, ':' and '/' from both ends)", master, addr)
		}
		if parts := strings.Split(addr, ":"); len(parts) != 2 || parts[0] == "" {
			c.fail(p.name, "PADDLE_MASTER=%s: ETCDMaster splits host:port at ':'", master)
		} else if _, err := strconv.Atoi(parts[1]); err != nil {
			c.fail(p.name, "PADDLE_MASTER=%s: the port is not a number", master)
		}
		// job/job.py: nnodes MIN:MAX; elastic only when they differ.
		mm := strings.Split(p.env["PADDLE_NNODES"], ":")
		lo, err1 := strconv.Atoi(mm[0])
		hi, err2 := 0, error(nil)
		if len(mm) == 2 {
			hi, err2 = strconv.Atoi(mm[1])
		}
		switch {
		case len(mm) != 2 || err1 != nil || err2 != nil:
			c.fail(p.name, "PADDLE_NNODES=%q is not MIN:MAX", p.env["PADDLE_NNODES"])
		case lo < 1 || lo >= hi:
			c.fail(p.name, "PADDLE_NNODES=%q: Paddle is elastic only with 1 <= MIN < MAX", p.env["PADDLE_NNODES"])
		case len(j.elastic) > hi:
			c.fail(p.name, "%d pods, more than MAX %d: a launcher that sees more peers ends (wait_peer_ready)", len(j.elastic), hi)
		}
		// controllers/controller.py: watch: -1 stops every survivor on a loss.
		if p.env["PADDLE_ELASTIC_LEVEL"] != "1" {
			c.fail(p.name, "PADDLE_ELASTIC_LEVEL=%q: survivors keep training only with 1", p.env["PADDLE_ELASTIC_LEVEL"])
		}
		if t, err := strconv.Atoi(p.env["PADDLE_ELASTIC_TIMEOUT"]); err != nil || t < 10 {
			c.fail(p.name, "PADDLE_ELASTIC_TIMEOUT=%q: below 10 s the first rendezvous splits (heartbeats every 5 s)", p.env["PADDLE_ELASTIC_TIMEOUT"])
		}
		if r, err := strconv.Atoi(p.env["PADDLE_MAX_RESTART"]); err != nil || r < 10 {
			c.fail(p.name, "PADDLE_MAX_RESTART=%q: every re-formed world counts (default 3)", p.env["PADDLE_MAX_RESTART"])
		}
		if p.env["PADDLE_JOB_ID"] == "" {
			c.fail(p.name, "PADDLE_JOB_ID unset: jobs sharing the id 'default' restart each other")
		}
		// plugins/__init__.py: collective_compatible; master.py: sync_peers.
		for _, v := range []string{"PADDLE_TRAINER_ENDPOINTS", "DISTRIBUTED_TRAINER_ENDPOINTS", "PADDLE_TRAINER_ID", "PADDLE_RANK"} {
			if p.has(v) {
				c.fail(p.name, "%s is set: it pins a fixed world", v)
			}
		}
		// args_envs.py: POD_IP -> --host, the pod's own address.
		podIP := false
		for _, e := range p.p.Spec.Containers[0].Env {
			if e.Name == "POD_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP" {
				podIP = true
			}
		}
		if !podIP {
			c.fail(p.name, "POD_IP is not the pod's IP (status.podIP)")
		}
	}
}
