package gputopology

import "math/bits"

// MaxGPUs is the most GPUs a node may have in the model (GPU sets are
// 64-bit masks).
const MaxGPUs = 64

// withIslands sets the fabric and islands the links give (switched: the
// NVLinks go through NVSwitches) and validates the result.
func (t *Topology) withIslands(switched bool) (*Topology, error) {
	fabric, islands := deriveIslands(t.linkMatrix(), switched)
	t.Fabric = fabric
	for i := range t.GPUs {
		t.GPUs[i].Island = islands[i]
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// deriveIslands groups GPUs into NVLink islands from the NV# count between
// every pair (nv[i][j] > 0: an NVLink path). An island is a set of GPUs every
// pair of which is NVLinked:
//   - behind NVSwitches (switched) every GPU reaches every other at full
//     speed, so the GPUs connected through the switches are one island;
//   - with direct links, islands are the largest cliques that partition the
//     GPUs, taken greedily: on a DGX-1's hybrid cube-mesh, where GPU 0 also
//     links to GPU 4, the two fully connected quads, not a clique that
//     steals GPUs from both;
//   - a GPU without NVLink is an island of its own (PCIe, SMP link).
//
// Island ids follow the lowest GPU position in each island.
func deriveIslands(nv [][]int, switched bool) (Fabric, []int) {
	n := len(nv)
	island := make([]int, n)
	adj := make([]uint64, n)
	any := false
	for i := range nv {
		for j, c := range nv[i] {
			if i != j && c > 0 {
				adj[i] |= 1 << j
				any = true
			}
		}
	}
	if !any {
		for i := range island {
			island[i] = i
		}
		return FabricPCIe, island
	}
	fabric := FabricNVLink
	if switched {
		fabric = FabricNVSwitch
	}
	remaining := ^uint64(0) >> (MaxGPUs - n)
	var groups []uint64
	for remaining != 0 {
		var g uint64
		if switched {
			g = component(adj, remaining)
		} else {
			g = bestClique(adj, nv, remaining)
		}
		groups = append(groups, g)
		remaining &^= g
	}
	// Groups are found largest first; number them by their lowest member.
	id := map[uint64]int{}
	for i := 0; i < n; i++ {
		for _, g := range groups {
			if g&(1<<i) == 0 {
				continue
			}
			if _, ok := id[g]; !ok {
				id[g] = len(id)
			}
			island[i] = id[g]
		}
	}
	return fabric, island
}

// component is the connected component, within set, of its lowest member.
func component(adj []uint64, set uint64) uint64 {
	start := uint64(1) << bits.TrailingZeros64(set)
	seen := start
	frontier := start
	for frontier != 0 {
		i := bits.TrailingZeros64(frontier)
		frontier &^= 1 << i
		next := adj[i] & set &^ seen
		seen |= next
		frontier |= next
	}
	return seen
}

// bestClique is the largest clique within set; among equally large ones the
// one with the most NVLinks inside, then the one with the lowest members.
func bestClique(adj []uint64, nv [][]int, set uint64) uint64 {
	var best uint64
	bestSize, bestLinks := 0, -1
	// Bron-Kerbosch with pivoting over maximal cliques: fast for the dozens
	// of GPUs a node can have.
	var visit func(r, p, x uint64)
	visit = func(r, p, x uint64) {
		if p == 0 && x == 0 {
			size := bits.OnesCount64(r)
			links := cliqueLinks(nv, r)
			if size > bestSize || (size == bestSize && links > bestLinks) ||
				(size == bestSize && links == bestLinks && lowerMembers(r, best)) {
				best, bestSize, bestLinks = r, size, links
			}
			return
		}
		pivot := bits.TrailingZeros64(p | x)
		for cand := p &^ adj[pivot]; cand != 0; {
			v := bits.TrailingZeros64(cand)
			cand &^= 1 << v
			visit(r|1<<v, p&adj[v], x&adj[v])
			p &^= 1 << v
			x |= 1 << v
		}
	}
	visit(0, set, 0)
	return best
}

func cliqueLinks(nv [][]int, set uint64) int {
	total := 0
	for s := set; s != 0; {
		i := bits.TrailingZeros64(s)
		s &^= 1 << i
		for t := s; t != 0; {
			j := bits.TrailingZeros64(t)
			t &^= 1 << j
			total += nv[i][j]
		}
	}
	return total
}

// lowerMembers reports whether a's members, listed in ascending order,
// come before b's.
func lowerMembers(a, b uint64) bool {
	for a != 0 && b != 0 {
		i, j := bits.TrailingZeros64(a), bits.TrailingZeros64(b)
		if i != j {
			return i < j
		}
		a &^= 1 << i
		b &^= 1 << j
	}
	return b != 0
}
