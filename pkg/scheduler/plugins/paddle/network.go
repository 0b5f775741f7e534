package paddle

import (
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// The network model: where each node sits (rack, spine), how close two
// nodes are, and where a job's pods are counted by node, rack and spine.

// place is where a node sits in the network: its rack and spine (the tier
// above racks). Empty names are unknown.
type place struct{ rack, spine string }

// buildPlaces maps every node to its rack and spine: from Volcano HyperNodes
// when the cluster has them (the lowest tier as rack, the next as spine),
// else from the configured node labels.
func buildPlaces(ssn *framework.Session, a Args) map[string]place {
	out := make(map[string]place, len(ssn.Nodes))
	if len(ssn.HyperNodesTiers) > 0 && ssn.HyperNodesReadyToSchedule {
		for level, tier := range ssn.HyperNodesTiers {
			if level > 1 {
				break
			}
			for hn := range ssn.HyperNodesSetByTier[tier] {
				if hn == framework.ClusterTopHyperNode {
					continue
				}
				for _, n := range ssn.RealNodesList[hn] {
					p := out[n.Name]
					if level == 0 {
						p.rack = hn
					} else {
						p.spine = hn
					}
					out[n.Name] = p
				}
			}
		}
	}
	for name, n := range ssn.Nodes {
		p := out[name]
		if n.Node != nil {
			if p.rack == "" && a.RackLabel != "" {
				p.rack = n.Node.Labels[a.RackLabel]
			}
			if p.spine == "" && a.SpineLabel != "" {
				p.spine = n.Node.Labels[a.SpineLabel]
			}
		}
		out[name] = p
	}
	return out
}

// Closeness of two nodes in [0,1]: the share of a pod pair's bandwidth left
// when traffic leaves the node (NIC), the rack (top-of-rack switch) and the
// spine; unknown racks and spines count as farther.
const (
	closenessSameNode  = 1.0
	closenessSameRack  = 0.6
	closenessSameSpine = 0.3
	closenessFar       = 0.0
)

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

// meanCloseness is the average closeness of node to the anchors.
func (a anchors) meanCloseness(node string) float64 {
	if a.total == 0 {
		return closenessFar
	}
	n, r, sp := a.counts(node)
	return (closenessSameNode*float64(n) + closenessSameRack*float64(r-n) + closenessSameSpine*float64(sp-r)) / float64(a.total)
}

// maxCloseness is the closeness of node to the nearest anchor.
func (a anchors) maxCloseness(node string) float64 {
	n, r, sp := a.counts(node)
	switch {
	case n > 0:
		return closenessSameNode
	case r > 0:
		return closenessSameRack
	case sp > 0:
		return closenessSameSpine
	}
	return closenessFar
}
