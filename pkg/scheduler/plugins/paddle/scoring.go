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
	// verbose: build the reasons logged at -v=4 (skipped otherwise: string
	// formatting per node and task would dominate the plugin's cost).
	verbose bool
	// Where the job's pservers and trainers are, counted by node, rack and
	// spine, so closeness to them is O(1) per node.
	servers, trainers anchors
}

// anchors counts placed pods by node, rack and spine.
type anchors struct {
	total  int
	node   map[string]int
	rack   map[string]int
	spine  map[string]int
	places map[string]place
}

func newAnchors(placed map[string]int, places map[string]place) anchors {
	a := anchors{node: placed, rack: map[string]int{}, spine: map[string]int{}, places: places}
	for n, k := range placed {
		a.total += k
		p := places[n]
		if p.rack != "" {
			a.rack[p.rack] += k
		}
		if p.spine != "" {
			a.spine[p.spine] += k
		}
	}
	return a
}

// counts: pods on the node, in its rack (node included), in its spine
// (rack included); unknown racks and spines count as the level below.
func (a anchors) counts(node string) (onNode, inRack, inSpine int) {
	p := a.places[node]
	onNode, inRack, inSpine = a.node[node], a.node[node], a.node[node]
	if p.rack != "" {
		inRack = a.rack[p.rack]
	}
	inSpine = inRack
	if p.spine != "" {
		inSpine = max(a.spine[p.spine], inRack)
	}
	return
}

// meanCloseness is the average closeness (1 node, 0.6 rack, 0.3 spine) of
// node to the anchors.
func (a anchors) meanCloseness(node string) float64 {
	if a.total == 0 {
		return 0
	}
	n, r, sp := a.counts(node)
	return (float64(n) + 0.6*float64(r-n) + 0.3*float64(sp-r)) / float64(a.total)
}

// maxCloseness is the closeness of node to the nearest anchor.
func (a anchors) maxCloseness(node string) float64 {
	n, r, sp := a.counts(node)
	switch {
	case n > 0:
		return 1
	case r > 0:
		return 0.6
	case sp > 0:
		return 0.3
	}
	return 0
}

func (p *paddlePlugin) batchNodeOrderFn(task *api.TaskInfo, nodes []*api.NodeInfo) (map[string]float64, error) {
	js, placed := p.state.snapshot(task.Job)
	role, _, isRole := roleOf(task, p.args.TaskNameFallback)
	c := &scoreContext{p: p, task: task, gpus: gpusOf(task.Resreq), placed: placed, role: role, verbose: klog.V(4).Enabled()}
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
	// Held for the whole pass: no pod is placed while one task is scored.
	p.state.gpuMu.Lock()
	defer p.state.gpuMu.Unlock()
	scores := make(map[string]float64, len(nodes))
	for _, n := range nodes {
		s, why := c.score(n)
		scores[n.Name] = s
		if c.verbose {
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
	places := c.p.state.places
	c.servers = newAnchors(c.placed[paddleapi.RolePServer], places)
	c.trainers = newAnchors(c.placed[paddleapi.RoleTrainer], places)
	collective := c.mode == paddleapi.ModeCollective
	headroom := c.needsHeadroom()
	if !collective && !headroom {
		return
	}
	jobLeft := api.EmptyResource()
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if !collective {
			jobLeft.Add(t.InitResreq)
		}
		if t.TaskRole == c.task.TaskRole {
			c.remaining++
		}
	}
	c.remaining = max(c.remaining, 1)
	if collective {
		c.nodeCap = make(map[string]int, len(nodes))
		c.rackCap = map[string]int{}
		for _, n := range nodes {
			k := min(fitCount(c.task.InitResreq, n.Idle), c.remaining)
			c.nodeCap[n.Name] = k
			if rack := places[n.Name].rack; headroom && rack != "" {
				c.rackCap[rack] += k
			}
		}
		return
	}
	rackIdle := map[string]*api.Resource{}
	for _, n := range nodes {
		rack := places[n.Name].rack
		if rack == "" {
			continue
		}
		if rackIdle[rack] == nil {
			rackIdle[rack] = api.EmptyResource()
		}
		rackIdle[rack].Add(n.Idle)
	}
	c.rackFitsJob = make(map[string]float64, len(rackIdle))
	for rack, idle := range rackIdle {
		c.rackFitsJob[rack] = coverage(idle, jobLeft)
	}
}

// needsHeadroom: the task is the first of its job to place by the rules in
// locality and packing, which then look for room for the whole gang.
func (c *scoreContext) needsHeadroom() bool {
	switch {
	case c.mode == paddleapi.ModeCollective:
		return c.trainers.total == 0
	case c.role == paddleapi.RolePServer:
		return c.servers.total == 0 && c.trainers.total == 0
	default:
		return c.servers.total == 0
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
		s, w := c.p.state.gpuFit(n, c.gpus, c.verbose)
		total += a.GPUTopologyWeight * s
		why += w
	}
	return total, why
}

// why formats a reason, only when it will be logged.
func (c *scoreContext) why(format string, args ...interface{}) string {
	if !c.verbose {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

// locality scores PS jobs: a trainer (or heter trainer) near its job's
// pservers (same node, else rack, else spine); a pserver in the rack of the
// job's other pservers but on another node (pservers' NIC bandwidth adds
// up). The first pod of a job goes where the whole job fits.
func (c *scoreContext) locality(n *api.NodeInfo) (float64, string) {
	if c.needsHeadroom() {
		return c.headroom(n)
	}
	if c.role != paddleapi.RolePServer {
		s := MaxScore * c.servers.meanCloseness(n.Name)
		return s, c.why("locality %.0f: near %d pservers; ", s, c.servers.total)
	}
	best := 0.1
	if c.servers.total > 0 {
		onNode, inRack, inSpine := c.servers.counts(n.Name)
		switch {
		case inRack > onNode: // another node of their rack: NICs add up
			best = 1
		case inSpine > inRack:
			best = 0.5
		}
		if onNode > 0 {
			best = math.Max(best, 0.4) // allowed, but shares one NIC
		}
	}
	best = math.Max(best, c.trainers.maxCloseness(n.Name))
	s := MaxScore * best
	return s, c.why("locality %.0f: pserver spread within the job's rack; ", s)
}

// packing scores collective trainers: onto the nodes and racks that already
// hold the job's trainers; the first one where most of the gang fits.
func (c *scoreContext) packing(n *api.NodeInfo) (float64, string) {
	if c.needsHeadroom() {
		return c.headroom(n)
	}
	best := c.trainers.maxCloseness(n.Name)
	// Among nodes of the same closeness, prefer one that takes more of the
	// rest of the gang (fewer nodes in the end).
	s := MaxScore * (0.85*best + 0.15*float64(c.nodeCap[n.Name])/float64(c.remaining))
	return s, c.why("packing %.0f: closeness %.1f to its trainers, room for %d of %d; ", s, best, c.nodeCap[n.Name], c.remaining)
}

// headroom scores the first pod of a gang: a node that can take more of
// the gang, in a rack that can take all of it.
func (c *scoreContext) headroom(n *api.NodeInfo) (float64, string) {
	rack := c.p.state.places[n.Name].rack
	if c.mode != paddleapi.ModeCollective {
		// A PS job spreads its servers over nodes: only the rack matters.
		s := MaxScore * c.rackFitsJob[rack]
		return s, c.why("headroom %.0f: the rack covers %.0f%% of what the job still needs; ", s, 100*c.rackFitsJob[rack])
	}
	nodeShare := float64(c.nodeCap[n.Name]) / float64(c.remaining)
	rackShare := 0.0
	if rack != "" {
		rackShare = math.Min(1, float64(c.rackCap[rack])/float64(c.remaining))
	}
	s := MaxScore * (0.5*nodeShare + 0.5*rackShare)
	return s, c.why("headroom %.0f: node takes %d of %d, rack takes %d; ", s, c.nodeCap[n.Name], c.remaining, c.rackCap[rack])
}

// gpuFit scores where a task's GPUs would sit on the node: in one NVLink
// island (or NUMA node), tightly, without breaking a whole free island or
// node when a partly used one would do. Nodes without the topology
// annotation are scored by count (tightest fit), never rejected.
func (st *sessionState) gpuFit(n *api.NodeInfo, g int, verbose bool) (float64, string) {
	why := func(format string, args ...interface{}) string {
		if !verbose {
			return ""
		}
		return fmt.Sprintf(format, args...)
	}
	l := st.layout(n)
	alloc := gpusOf(n.Allocatable)
	if l == nil || l.total != alloc {
		free := gpusOf(n.Idle)
		if free < g || alloc == 0 {
			return 0, why("gpu 0: not enough free GPUs; ")
		}
		s := MaxScore * (1 - float64(free-g)/float64(alloc))
		return s, why("gpu %.0f: %d of %d free (no topology); ", s, free, alloc)
	}
	free := st.freeGPUs(n, l)
	totalFree := 0
	for _, f := range free {
		totalFree += f
	}
	if totalFree < g {
		return 0, why("gpu 0: not enough free GPUs; ")
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
			return s, why("gpu %.0f: fits domain %d (%d free of %d); ", s, best, free[best], l.domains[best])
		}
		s := spanScore(l.fabric) - penalty
		return s, why("gpu %.0f: would span %d %s domains; ", s, domainsNeeded(free, g), l.fabric)
	}
	// Larger than a domain: best when it takes whole domains only.
	minimal := (g + largest - 1) / largest
	if need := domainsNeeded(free, g); need == minimal {
		s := MaxScore - penalty*float64(l.total-g)/float64(l.total)
		return s, why("gpu %.0f: takes %d whole domains; ", s, need)
	}
	s := spanScore(l.fabric)
	return s, why("gpu %.0f: spans partly used domains; ", s)
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
