package paddle

import (
	"fmt"
	"math"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Shares of the score components, in [0,1] of MaxScore.
const (
	// A pserver next to the job's other pservers: best on another node of
	// their rack (the servers' NIC bandwidth adds up), then on another node
	// of their spine, on their node (shares one NIC), anywhere else.
	pserverSameRack  = 1.0
	pserverSameSpine = 0.5
	pserverSameNode  = 0.4
	pserverElsewhere = 0.1
	// Collective trainers: closeness to the job's trainers, then room on
	// the node for more of the gang (fewer nodes in the end).
	packingCloseness = 0.85
	packingRoom      = 0.15
	// The first pod of a collective gang: room on the node and in the rack.
	headroomNode = 0.5
	headroomRack = 0.5
)

// nonPaddleGPUWeight caps the GPU-topology weight for pods that are not
// Paddle pods (paddle.gpuTopology.allJobs), so their GPU score spans at
// most 100 points: below what Volcano's nodeorder gives a user's preferred
// node affinity (weight 2 x 100) and taint toleration (3 x 100), which must
// keep deciding for those pods.
const nonPaddleGPUWeight = 1.0

// scoreContext is computed once per task and scoring pass (like a PreScore
// state): the job's placements, what is left of the gang, and rack
// headroom. Scoring a node then only reads it.
type scoreContext struct {
	args   Args
	places map[string]place
	gpu    *gpuState
	job    *api.JobInfo
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
	// prevRank: the node of the trainer one rank before this one, when
	// placed (collective jobs): a ring all-reduce crosses every boundary
	// between consecutive ranks, so rank i goes next to rank i-1.
	prevRank    anchors
	hasPrevRank bool
}

func (s *session) batchNodeOrderFn(task *api.TaskInfo, nodes []*api.NodeInfo) (map[string]float64, error) {
	js, placed := s.snapshot(task.Job)
	role, idx, isRole := roleOf(task, s.args.TaskNameFallback)
	c := &scoreContext{args: s.args, places: s.places, gpu: s.gpu, job: s.ssn.Jobs[task.Job], task: task, gpus: gpusOf(task.Resreq),
		placed: placed, role: role, verbose: klog.V(4).Enabled()}
	c.paddle = js != nil && isRole
	if js != nil {
		c.mode = js.mode
	}
	if !c.paddle && (c.gpus == 0 || !s.args.GPUTopologyAllJobs) {
		return nil, nil
	}
	if c.paddle {
		c.prepare(nodes)
		if c.mode == paddleapi.ModeCollective && role == paddleapi.RoleTrainer && idx > 0 {
			if prev := s.trainerNode(task.Job, idx-1); prev != "" {
				c.prevRank, c.hasPrevRank = newAnchors(map[string]int{prev: 1}, s.places), true
			}
		}
	}
	// Held for the whole pass: no pod is placed while one task is scored.
	s.gpu.mu.Lock()
	defer s.gpu.mu.Unlock()
	scores := make(map[string]float64, len(nodes))
	for _, n := range nodes {
		score, why := c.score(n)
		scores[n.Name] = score
		if c.verbose {
			klog.V(4).InfoS("paddle node score", "task", klog.KRef(task.Namespace, task.Name), "node", n.Name, "score", score, "why", why)
		}
	}
	return scores, nil
}

func (c *scoreContext) prepare(nodes []*api.NodeInfo) {
	job := c.job
	if job == nil {
		return
	}
	places := c.places
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
	a := c.args
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
		s, w := c.gpu.fitScore(n, c.gpus, c.verbose)
		weight := a.GPUTopologyWeight
		if !c.paddle {
			// Other workloads' GPU pods: never more than a user's own
			// soft node affinity can outweigh (see nonPaddleGPUWeight).
			weight = min(weight, nonPaddleGPUWeight)
		}
		total += weight * s
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
	best := pserverElsewhere
	if c.servers.total > 0 {
		onNode, inRack, inSpine := c.servers.counts(n.Name)
		switch {
		case inRack > onNode: // another node of their rack: NICs add up
			best = pserverSameRack
		case inSpine > inRack:
			best = pserverSameSpine
		}
		if onNode > 0 {
			best = math.Max(best, pserverSameNode) // allowed, but shares one NIC
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
	if c.hasPrevRank {
		// Closeness to the previous rank, not to any trainer: the ranks then
		// fill a node, then the next node of the same rack, and never come
		// back, so consecutive ranks cross only as many node and rack
		// boundaries as the nodes and racks used require.
		best = c.prevRank.maxCloseness(n.Name)
	}
	// Among nodes of the same closeness, prefer one that takes more of the
	// rest of the gang (fewer nodes in the end).
	s := MaxScore * (packingCloseness*best + packingRoom*float64(c.nodeCap[n.Name])/float64(c.remaining))
	return s, c.why("packing %.0f: closeness %.1f to its trainers, room for %d of %d; ", s, best, c.nodeCap[n.Name], c.remaining)
}

// headroom scores the first pod of a gang: a node that can take more of
// the gang, in a rack that can take all of it.
func (c *scoreContext) headroom(n *api.NodeInfo) (float64, string) {
	rack := c.places[n.Name].rack
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
	s := MaxScore * (headroomNode*nodeShare + headroomRack*rackShare)
	return s, c.why("headroom %.0f: node takes %d of %d, rack takes %d; ", s, c.nodeCap[n.Name], c.remaining, c.rackCap[rack])
}
