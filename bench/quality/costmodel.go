// Package quality judges placements: a communication cost model for
// collective (ring all-reduce) and parameter-server Paddle jobs, calibrated
// against measured step times, a workload generator from the Philly trace,
// reference placers and placement metrics. It is the yardstick the
// benchmarks hold the scheduler to; the scheduler plugin does not import it.
package quality

import (
	"math"
	"sort"
)

// Preset describes a GPU node type and its network. Bandwidths are what a
// ring all-reduce achieves ("bus bandwidth" in NCCL's terms), not line
// rates, unless said otherwise. Source says where each value comes from.
type Preset struct {
	Name        string
	GPUsPerNode int
	// IslandSize GPUs share full-speed links (NVLink/NVSwitch); a ring
	// inside one island runs at IslandGBps, one that spans islands of a
	// node at CrossIslandGBps.
	IslandSize      int
	IslandGBps      float64
	CrossIslandGBps float64
	// NICs: NICsPerNode of NICGbps line rate, spread evenly over the
	// islands; NICEfficiency is the achieved share of line rate.
	NICsPerNode   int
	NICGbps       float64
	NICEfficiency float64
	// NetLatency is the latency of one ring step across nodes (s).
	NetLatency float64
	// RackOversubscription divides bandwidth between racks.
	RackOversubscription float64
	// ComputeScale: how much faster a GPU computes than a T4 (the GPU of
	// the measured profiles).
	ComputeScale float64
	Source       string
}

// WithLinks is the preset with every interconnect bandwidth (island,
// between islands, NICs) times scale: the cost model's interconnect
// parameters are assumptions, and a result that holds at 0.5x and 2x does
// not hang on them. Compute, latency and the layout are unchanged.
func (p Preset) WithLinks(scale float64) Preset {
	p.IslandGBps *= scale
	p.CrossIslandGBps *= scale
	p.NICGbps *= scale
	return p
}

func (p Preset) islandsPerNode() int { return max(1, p.GPUsPerNode/max(1, p.IslandSize)) }

// nicGBps is the achieved bandwidth of one NIC in GB/s.
func (p Preset) nicGBps() float64 { return p.NICGbps / 8 * p.NICEfficiency }

// Model is a training workload: its gradient size and its compute time per
// step on one T4 at a per-GPU batch size.
type Model struct {
	Name   string
	Params float64 // parameters, 4 bytes each (fp32 gradients)
	// Gamma is the overlap exponent of Pollux's step-time model:
	// step = (compute^g + comm^g)^(1/g); 1 means no overlap.
	Gamma float64
	// Profile: measured single-GPU step time (s) by per-GPU batch size.
	Profile map[int]float64
	// Bsz is the per-GPU batch size used when none is given.
	Bsz int
}

// Bytes is the gradient volume all-reduced per step.
func (m Model) Bytes() float64 { return m.Params * 4 }

// Compute is the T4 step time at batch size bsz (linear between measured
// sizes, clamped at the ends).
func (m Model) Compute(bsz int) float64 {
	if t, ok := m.Profile[bsz]; ok {
		return t
	}
	keys := make([]int, 0, len(m.Profile))
	for k := range m.Profile {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	if len(keys) == 0 {
		return 0
	}
	if bsz <= keys[0] {
		return m.Profile[keys[0]]
	}
	for i := 1; i < len(keys); i++ {
		if bsz <= keys[i] {
			a, b := keys[i-1], keys[i]
			f := float64(bsz-a) / float64(b-a)
			return m.Profile[a]*(1-f) + m.Profile[b]*f
		}
	}
	return m.Profile[keys[len(keys)-1]]
}

// Pod is where one pod of a job sits: its node and rack, its GPUs and the
// NVLink islands of that node they occupy.
type Pod struct {
	Node, Rack string
	GPUs       int
	Islands    []int // island ids on the node
	PServer    bool  // a parameter server (PS jobs), CPU only
}

// stepTime is Pollux's form: compute and communication overlap by gamma.
func stepTime(compute, comm, gamma float64) float64 {
	if comm <= 0 {
		return compute
	}
	return math.Pow(math.Pow(compute, gamma)+math.Pow(comm, gamma), 1/gamma)
}

// CollectiveStep is the step time of a data-parallel job whose pods sit as
// given: a ring all-reduce over all its GPUs, limited by the slowest link
// it uses - the island bandwidth inside one island, the cross-island
// bandwidth when a node's share spans islands, the NICs of the islands it
// uses when it spans nodes, divided by the oversubscription when it spans
// racks.
func CollectiveStep(p Preset, m Model, bsz int, pods []Pod) float64 {
	compute := m.Compute(bsz) / p.ComputeScale
	n := 0
	byNode := map[string]map[int]bool{}
	racks := map[string]bool{}
	for _, pod := range pods {
		n += pod.GPUs
		if byNode[pod.Node] == nil {
			byNode[pod.Node] = map[int]bool{}
		}
		for _, i := range pod.Islands {
			byNode[pod.Node][i] = true
		}
		racks[pod.Rack] = true
	}
	if n <= 1 {
		return compute
	}
	bw := math.Inf(1)
	nicsPerIsland := float64(p.NICsPerNode) / float64(p.islandsPerNode())
	for _, islands := range byNode {
		if len(islands) > 1 {
			bw = math.Min(bw, p.CrossIslandGBps)
		} else {
			bw = math.Min(bw, p.IslandGBps)
		}
		if len(byNode) > 1 {
			nics := math.Max(1, math.Min(float64(p.NICsPerNode), nicsPerIsland*float64(len(islands))))
			bw = math.Min(bw, nics*p.nicGBps())
		}
	}
	latency := 0.0
	if len(byNode) > 1 {
		if len(racks) > 1 {
			bw /= p.RackOversubscription
		}
		latency = 2 * float64(n-1) * p.NetLatency
	}
	comm := 2*float64(n-1)/float64(n)*m.Bytes()/(bw*1e9) + latency
	return stepTime(compute, comm, m.Gamma)
}

// PSStep is the step time of a parameter-server job: every trainer sends
// its gradients to and pulls the parameters from every pserver, model
// bytes / pservers each way per pair. A pair on one node costs nothing; any
// other pair loads both nodes' NICs (through the rack uplinks, at the
// oversubscription, when the racks differ). The busiest node's NICs set the
// communication time.
func PSStep(p Preset, m Model, bsz int, pods []Pod) float64 {
	servers, trainers := splitPS(pods)
	compute := m.Compute(bsz) / p.ComputeScale
	if len(servers) == 0 || len(trainers) == 0 {
		return compute
	}
	perPair := 2 * m.Bytes() / float64(len(servers))
	load := map[string]float64{}
	for _, t := range trainers {
		for _, s := range servers {
			if t.Node == s.Node {
				continue
			}
			b := perPair
			if t.Rack != s.Rack {
				b *= p.RackOversubscription
			}
			load[t.Node] += b
			load[s.Node] += b
		}
	}
	comm := 0.0
	for _, bytes := range load {
		comm = math.Max(comm, bytes/(float64(p.NICsPerNode)*p.nicGBps()*1e9))
	}
	return stepTime(compute, comm, m.Gamma)
}

// PSCrossNICBytes returns the bytes per step of a PS job that cross a NIC,
// and all its trainer-pserver bytes.
func PSCrossNICBytes(m Model, pods []Pod) (crossing, total float64) {
	servers, trainers := splitPS(pods)
	if len(servers) == 0 {
		return 0, 0
	}
	perPair := 2 * m.Bytes() / float64(len(servers))
	for _, t := range trainers {
		for _, s := range servers {
			total += perPair
			if t.Node != s.Node {
				crossing += perPair
			}
		}
	}
	return crossing, total
}

// splitPS separates a PS job's pservers from its trainers.
func splitPS(pods []Pod) (servers, trainers []Pod) {
	for _, pod := range pods {
		if pod.PServer {
			servers = append(servers, pod)
		} else {
			trainers = append(trainers, pod)
		}
	}
	return servers, trainers
}

// StepLowerBound is a step time no placement of job j can beat under this
// cost model, on racks of nodesPerRack nodes of p: what a bound on job
// completion needs, where BestPlacement is only a good placement (its PS
// layout spreads pservers round-robin, and some schedulers find better).
//
// Collective: the all-reduce at the fastest link any placement can have:
// one island, one node across islands, or several nodes whose every link
// runs at the node's fastest and all its NICs (racks crossed only when the
// job needs more nodes than a rack has), each with its latency; the least
// of those that fit. PS: every pserver exchanges model bytes / pservers
// with each trainer off its node, and a node holds at most a node's worth
// of trainers, so a pserver's node carries at least that much for the
// trainers beyond them; none when all trainers fit one node.
func StepLowerBound(p Preset, m Model, j Job, nodesPerRack int) float64 {
	compute := m.Compute(m.Bsz) / p.ComputeScale
	if j.PS {
		perNode := p.GPUsPerNode / max(1, j.PodGPUs)
		if j.PServers == 0 || j.Pods <= perNode {
			return compute
		}
		perPair := 2 * m.Bytes() / float64(j.PServers)
		comm := perPair * float64(j.Pods-perNode) / (float64(p.NICsPerNode) * p.nicGBps() * 1e9)
		return stepTime(compute, comm, m.Gamma)
	}
	n := j.GPUs
	if n <= 1 {
		return compute
	}
	ring := func(gbps, latency float64) float64 {
		return stepTime(compute, 2*float64(n-1)/float64(n)*m.Bytes()/(gbps*1e9)+latency, m.Gamma)
	}
	fastest := math.Max(p.IslandGBps, p.CrossIslandGBps)
	best := math.Inf(1)
	switch {
	case n <= p.IslandSize:
		best = ring(fastest, 0)
	case n <= p.GPUsPerNode:
		best = ring(p.CrossIslandGBps, 0)
	}
	if j.Pods < 2 {
		return best // a pod never spans nodes
	}
	// Several nodes: possible for a job of two pods or more, whether or not
	// it would fit one.
	bw := math.Min(fastest, float64(p.NICsPerNode)*p.nicGBps())
	if nodes := (n + p.GPUsPerNode - 1) / p.GPUsPerNode; nodesPerRack > 0 && nodes > nodesPerRack {
		bw /= p.RackOversubscription
	}
	return math.Min(best, ring(bw, 2*float64(n-1)*p.NetLatency))
}
