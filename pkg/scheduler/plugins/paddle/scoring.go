package paddle

import (
	"fmt"
	"math"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// MaxScore is the top of each score component; the ConfigMap weights scale
// them (Volcano's nodeorder and binpack plugins also score 0..100 x weight).
const MaxScore = 100.0

// scoreContext is computed once per task and scoring pass (like a PreScore
// state): the job's placements, what is left of the gang, and rack
// headroom. Scoring a node then only reads it.
type scoreContext struct {
	p      *paddlePlugin
	task   *api.TaskInfo
	gpus   int
	paddle bool
	mode   paddleapi.Mode
	role   paddleapi.Role
	placed map[paddleapi.Role]map[string]int

	// remaining pods of the gang like this one (same task spec), this one
	// included, and how many of them each node / rack can take.
	remaining int
	nodeCap   map[string]int
	rackCap   map[string]int
	// rackFitsJob: the rack's idle resources hold everything the job still
	// needs (PS jobs: servers and trainers together).
	rackFitsJob map[string]float64
}

func (p *paddlePlugin) batchNodeOrderFn(task *api.TaskInfo, nodes []*api.NodeInfo) (map[string]float64, error) {
	js, placed := p.state.snapshot(task.Job)
	role, _, isRole := roleOf(task, p.args.TaskNameFallback)
	c := &scoreContext{p: p, task: task, gpus: gpusOf(task.Resreq), placed: placed, role: role}
	c.paddle = js != nil && isRole
	if js != nil {
		c.mode = js.mode
	}
	if !c.paddle && (c.gpus == 0 || !p.args.GPUTopologyAllJobs) {
		return nil, nil
	}
	if c.paddle {
		c.prepare(nodes)
	}
	scores := make(map[string]float64, len(nodes))
	for _, n := range nodes {
		s, why := c.score(n)
		scores[n.Name] = s
		if klog.V(4).Enabled() {
			klog.V(4).InfoS("paddle node score", "task", klog.KRef(task.Namespace, task.Name), "node", n.Name, "score", s, "why", why)
		}
	}
	return scores, nil
}

func (c *scoreContext) prepare(nodes []*api.NodeInfo) {
	job := c.p.ssn.Jobs[c.task.Job]
	if job == nil {
		return
	}
	jobLeft := api.EmptyResource()
	for _, t := range job.TaskStatusIndex[api.Pending] {
		jobLeft.Add(t.InitResreq)
		if t.TaskRole == c.task.TaskRole {
			c.remaining++
		}
	}
	c.remaining = max(c.remaining, 1)
	c.nodeCap = make(map[string]int, len(nodes))
	c.rackCap = map[string]int{}
	rackIdle := map[string]*api.Resource{}
	for _, n := range nodes {
		k := min(fitCount(c.task.InitResreq, n.Idle), c.remaining)
		c.nodeCap[n.Name] = k
		rack := c.p.state.places[n.Name].rack
		if rack == "" {
			continue
		}
		c.rackCap[rack] += k
		if rackIdle[rack] == nil {
			rackIdle[rack] = api.EmptyResource()
		}
		rackIdle[rack].Add(n.Idle)
	}
	c.rackFitsJob = map[string]float64{}
	for rack, idle := range rackIdle {
		c.rackFitsJob[rack] = coverage(idle, jobLeft)
	}
}

// fitCount is how many pods with request req fit in avail.
func fitCount(req, avail *api.Resource) int {
	n := math.MaxInt32
	bound := func(need, have float64) {
		if need > 0 {
			n = min(n, int(have/need))
		}
	}
	bound(req.MilliCPU, avail.MilliCPU)
	bound(req.Memory, avail.Memory)
	for name, v := range req.ScalarResources {
		bound(v, avail.Get(name))
	}
	if n == math.MaxInt32 {
		return 1
	}
	return max(n, 0)
}

// coverage in [0,1]: how much of need the resources in have cover (the
// scarcest resource decides).
func coverage(have, need *api.Resource) float64 {
	c := 1.0
	ratio := func(h, n float64) {
		if n > 0 {
			c = math.Min(c, h/n)
		}
	}
	ratio(have.MilliCPU, need.MilliCPU)
	ratio(have.Memory, need.Memory)
	for name, v := range need.ScalarResources {
		ratio(have.Get(name), v)
	}
	return math.Max(c, 0)
}

// score is the weighted sum of the three components for one node.
func (c *scoreContext) score(n *api.NodeInfo) (float64, string) {
	a := c.p.args
	var total float64
	var why string
	if c.paddle {
		switch c.mode {
		case paddleapi.ModePS, paddleapi.ModeHeterPS:
			s, w := c.locality(n)
			total += a.AffinityWeight * s
			why += w
		case paddleapi.ModeCollective:
			s, w := c.packing(n)
			total += a.PackingWeight * s
			why += w
		}
	}
	if c.gpus > 0 {
		s, w := gpuFit(n, c.gpus)
		total += a.GPUTopologyWeight * s
		why += w
	}
	return total, why
}

// locality scores PS jobs: a trainer (or heter trainer) near its job's
// pservers (same node, else rack, else spine); a pserver in the rack of the
// job's other pservers but on another node (pservers' NIC bandwidth adds
// up). The first pod of a job goes where the whole job fits.
func (c *scoreContext) locality(n *api.NodeInfo) (float64, string) {
	here := c.p.state.places[n.Name]
	servers := c.placed[paddleapi.RolePServer]
	if c.role != paddleapi.RolePServer {
		if len(servers) == 0 {
			return c.headroom(n)
		}
		var sum, count float64
		for node, k := range servers {
			sum += float64(k) * closeness(n.Name, node, here, c.p.state.places[node])
			count += float64(k)
		}
		s := MaxScore * sum / count
		return s, fmt.Sprintf("locality %.0f: near %d of its pservers; ", s, int(count))
	}
	if len(servers) == 0 && len(c.placed[paddleapi.RoleTrainer]) == 0 {
		return c.headroom(n)
	}
	best := 0.1
	for node := range servers {
		switch closeness(n.Name, node, here, c.p.state.places[node]) {
		case 1: // same node: allowed, but it shares one NIC
			best = math.Max(best, 0.4)
		case 0.6:
			best = math.Max(best, 1)
		case 0.3:
			best = math.Max(best, 0.5)
		}
	}
	for node := range c.placed[paddleapi.RoleTrainer] {
		best = math.Max(best, closeness(n.Name, node, here, c.p.state.places[node]))
	}
	s := MaxScore * best
	return s, fmt.Sprintf("locality %.0f: pserver spread within the job's rack; ", s)
}

// packing scores collective trainers: onto the nodes and racks that already
// hold the job's trainers; the first one where most of the gang fits.
func (c *scoreContext) packing(n *api.NodeInfo) (float64, string) {
	trainers := c.placed[paddleapi.RoleTrainer]
	if len(trainers) == 0 {
		return c.headroom(n)
	}
	here := c.p.state.places[n.Name]
	best := 0.0
	for node := range trainers {
		best = math.Max(best, closeness(n.Name, node, here, c.p.state.places[node]))
	}
	// Among nodes of the same closeness, prefer one that takes more of the
	// rest of the gang (fewer nodes in the end).
	s := MaxScore * (0.85*best + 0.15*float64(c.nodeCap[n.Name])/float64(c.remaining))
	return s, fmt.Sprintf("packing %.0f: closeness %.1f to its trainers, room for %d of %d; ", s, best, c.nodeCap[n.Name], c.remaining)
}

// headroom scores the first pod of a gang: a node that can take more of
// the gang, in a rack that can take all of it.
func (c *scoreContext) headroom(n *api.NodeInfo) (float64, string) {
	rack := c.p.state.places[n.Name].rack
	if c.mode != paddleapi.ModeCollective {
		// A PS job spreads its servers over nodes: only the rack matters.
		s := MaxScore * c.rackFitsJob[rack]
		return s, fmt.Sprintf("headroom %.0f: the rack covers %.0f%% of what the job still needs; ", s, 100*c.rackFitsJob[rack])
	}
	nodeShare := float64(c.nodeCap[n.Name]) / float64(c.remaining)
	rackShare := 0.0
	if rack != "" {
		rackShare = math.Min(1, float64(c.rackCap[rack])/float64(c.remaining))
	}
	s := MaxScore * (0.5*nodeShare + 0.5*rackShare)
	return s, fmt.Sprintf("headroom %.0f: node takes %d of %d, rack takes %d; ", s, c.nodeCap[n.Name], c.remaining, c.rackCap[rack])
}

// gpuFit scores where a task's GPUs would sit on the node: in one NVLink
// island (or NUMA node), tightly, without breaking a whole free island or
// node when a partly used one would do. Nodes without the topology
// annotation are scored by count (tightest fit), never rejected.
func gpuFit(n *api.NodeInfo, g int) (float64, string) {
	l := layoutOf(n.Node)
	alloc := gpusOf(n.Allocatable)
	if l == nil || l.total != alloc {
		free := gpusOf(n.Idle)
		if free < g || alloc == 0 {
			return 0, "gpu 0: not enough free GPUs; "
		}
		s := MaxScore * (1 - float64(free-g)/float64(alloc))
		return s, fmt.Sprintf("gpu %.0f: %d of %d free (no topology); ", s, free, alloc)
	}
	free := l.freePerDomain(n)
	totalFree := 0
	for _, f := range free {
		totalFree += f
	}
	if totalFree < g {
		return 0, "gpu 0: not enough free GPUs; "
	}
	wholeNodeFree := totalFree == l.total
	largest := 0
	for _, d := range l.domains {
		largest = max(largest, d)
	}
	penalty := 0.0
	if wholeNodeFree && g < l.total {
		penalty = 10 // keep fully free nodes for whole-node jobs
	}
	if g <= largest {
		best := -1
		for i, f := range free {
			if f >= g && (best < 0 || f < free[best]) {
				best = i
			}
		}
		if best >= 0 {
			leftover := free[best] - g
			s := MaxScore - 40*float64(leftover)/float64(l.domains[best]) - penalty
			return s, fmt.Sprintf("gpu %.0f: fits domain %d (%d free of %d); ", s, best, free[best], l.domains[best])
		}
		s := spanScore(l.fabric) - penalty
		return s, fmt.Sprintf("gpu %.0f: would span %d %s domains; ", s, domainsNeeded(free, g), l.fabric)
	}
	// Larger than a domain: best when it takes whole domains only.
	minimal := (g + largest - 1) / largest
	if need := domainsNeeded(free, g); need == minimal {
		s := MaxScore - penalty*float64(l.total-g)/float64(l.total)
		return s, fmt.Sprintf("gpu %.0f: takes %d whole domains; ", s, need)
	}
	s := spanScore(l.fabric)
	return s, fmt.Sprintf("gpu %.0f: spans partly used domains; ", s)
}

// spanScore: what spanning domains costs on each fabric. On NVSwitch nodes
// every GPU pair is at full NVLink speed and only NUMA locality is lost; on
// NVLink-island nodes traffic between islands drops to PCIe/QPI; on PCIe
// nodes crossing NUMA nodes crosses the CPU interconnect.
func spanScore(f paddleapi.Fabric) float64 {
	switch f {
	case paddleapi.FabricNVSwitch:
		return 70
	case paddleapi.FabricPCIe:
		return 40
	}
	return 20
}
