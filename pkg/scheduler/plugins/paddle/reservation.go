package paddle

import (
	"sort"
	"sync"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// ReasonReservedForStarvingGang: a node's free resources are reserved for
// a starving gang and the task would take part of them.
const ReasonReservedForStarvingGang = "PaddleReservedForStarvingGang"

// book keeps each starving gang's reserved nodes from one session to the
// next (a plugin value lives for one session, Volcano's
// framework.OpenSession builds it anew). Keeping nodes is what bounds the
// wait: they only drain, and the gang moves only to nodes with fewer GPUs
// still busy, so it starts at the latest once the pods running on its
// first nodes when it was reserved have ended.
var book = &reservationBook{nodes: map[api.JobID][]string{}}

type reservationBook struct {
	mu    sync.Mutex
	nodes map[api.JobID][]string
}

// reservation is a starving gang's claim for one session: per reserved
// node, what its missing pods planned there need.
type reservation struct {
	job  *api.JobInfo
	need map[string]*api.Resource
}

// sessionReservations are the session's reservations, oldest gang first.
type sessionReservations struct {
	list   []*reservation
	byNode map[string][]*reservation
}

// guarded: the job may trigger the starvation guard and is subject to it.
// Only jobs the paddle job plugin marked (its pods carry the mode label), or,
// when the operator opts in, jobs recognised by task names alone: a plain
// job with a task named "worker" is neither held nor kept off reserved
// nodes.
func (p *paddlePlugin) guarded(job *api.JobInfo) bool {
	if markedPaddle(job) {
		return true
	}
	return p.args.StarvationTaskNameJobs && p.isPaddle(job)
}

// markedPaddle: a pod of the job carries the mode label the paddle job
// plugin sets on every pod it creates.
func markedPaddle(job *api.JobInfo) bool {
	for _, t := range job.Tasks {
		if t.Pod != nil {
			if _, ok := t.Pod.Labels[paddleapi.ModeLabel]; ok {
				return true
			}
		}
	}
	return false
}

// reservations computes, once per session, the nodes each queue's blocker
// (its oldest starving guarded gang that does not fit now) reserves: those
// it planned on in an earlier session while they can still take its
// missing pods and no other plan (chooseNodes) has fewer GPUs still busy,
// else the new plan. Older gangs plan first; a younger one plans on what
// they left.
func (p *paddlePlugin) reservations() *sessionReservations {
	p.reserveOnce.Do(func() {
		rs := &sessionReservations{byNode: map[string][]*reservation{}}
		p.reserved = rs
		// One gang per queue reserves: the oldest starving one that does
		// not fit now (blocker). Younger starving gangs are ordered after it
		// and take what it leaves, as in EASY backfilling; were every
		// starving gang to reserve, a saturated queue (where every job waits
		// past the threshold) would turn most free GPUs into reservations
		// for gangs that could not use them yet.
		var gangs []*api.JobInfo
		if p.args.StarvationGuard == GuardReserve {
			for _, b := range p.queueBlockers() {
				gangs = append(gangs, b)
			}
		}
		sort.Slice(gangs, func(a, b int) bool { return olderJob(gangs[a], gangs[b]) })
		book.mu.Lock()
		defer book.mu.Unlock()
		keep := make(map[api.JobID]bool, len(gangs))
		for _, j := range gangs {
			keep[j.UID] = true
		}
		for id := range book.nodes {
			if !keep[id] {
				delete(book.nodes, id)
			}
		}
		taken := map[string]*api.Resource{}
		var byIdle []*api.NodeInfo
		if len(gangs) > 0 {
			byIdle = p.nodesByIdle()
		}
		for _, j := range gangs {
			// blocker computed the gang's fit, its missing pods included.
			pods := p.fit(j).missing
			if len(pods) == 0 {
				continue
			}
			// The kept plan is replaced only by one with fewer GPUs still
			// busy (see book); one with none busy cannot be beaten.
			kept := book.nodes[j.UID]
			need, ok := p.planOn(p.nodesNamed(kept), pods, taken)
			busy := -1 // no kept plan
			if ok {
				busy = stillBusy(need, p.ssn.Nodes)
			}
			if busy != 0 {
				if nodes, fresh, freshOK := p.chooseNodes(byIdle, pods, taken); freshOK && (busy < 0 || stillBusy(fresh, p.ssn.Nodes) < busy) {
					need, ok = fresh, true
					book.nodes[j.UID] = nodes
					klog.V(3).InfoS("Reserving nodes for starving Paddle gang", "job", klog.KRef(j.Namespace, j.Name), "nodes", nodes, "previous", kept)
				}
			}
			if !ok {
				klog.V(3).InfoS("Starving Paddle gang cannot be planned even on allocatable resources; no reservation", "job", klog.KRef(j.Namespace, j.Name))
				delete(book.nodes, j.UID)
				continue
			}
			r := &reservation{job: j, need: need}
			rs.list = append(rs.list, r)
			for n, res := range need {
				rs.byNode[n] = append(rs.byNode[n], r)
				if taken[n] == nil {
					taken[n] = api.EmptyResource()
				}
				taken[n].Add(res)
			}
		}
	})
	return p.reserved
}

func olderJob(a, b *api.JobInfo) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.UID < b.UID
}

func (p *paddlePlugin) nodesNamed(names []string) []*api.NodeInfo {
	out := make([]*api.NodeInfo, 0, len(names))
	for _, n := range names {
		if ni, ok := p.ssn.Nodes[n]; ok {
			out = append(out, ni)
		}
	}
	if len(out) < len(names) {
		return nil // a reserved node is gone: plan again
	}
	return out
}

// planOn places pods first-fit, in order, on the nodes' allocatable
// resources less what older reservations took; it returns what each node
// must keep for them.
func (p *paddlePlugin) planOn(nodes []*api.NodeInfo, pods []*api.TaskInfo, taken map[string]*api.Resource) (map[string]*api.Resource, bool) {
	if len(nodes) == 0 {
		return nil, false
	}
	left := make([]*api.Resource, len(nodes))
	for i, n := range nodes {
		left[i] = n.Allocatable.Clone()
		if t := taken[n.Name]; t != nil {
			if !t.LessEqual(left[i], api.Zero) {
				left[i] = api.EmptyResource()
				continue
			}
			left[i].Sub(t)
		}
	}
	need := map[string]*api.Resource{}
	for _, t := range pods {
		placed := false
		for i, n := range nodes {
			if !n.Ready() || !selectorMatches(t, n) || !t.InitResreq.LessEqual(left[i], api.Zero) {
				continue
			}
			left[i].Sub(t.InitResreq)
			if need[n.Name] == nil {
				need[n.Name] = api.EmptyResource()
			}
			need[n.Name].Add(t.InitResreq)
			placed = true
			break
		}
		if !placed {
			return nil, false
		}
	}
	return need, true
}

// nodesByIdle is the session's nodes in the order chooseNodes tries them:
// most idle GPUs first, then most idle CPU, then by name.
func (p *paddlePlugin) nodesByIdle() []*api.NodeInfo {
	nodes := append([]*api.NodeInfo(nil), p.ssn.NodeList...)
	sort.SliceStable(nodes, func(a, b int) bool {
		ga, gb := gpusOf(nodes[a].Idle), gpusOf(nodes[b].Idle)
		if ga != gb {
			return ga > gb
		}
		if nodes[a].Idle.MilliCPU != nodes[b].Idle.MilliCPU {
			return nodes[a].Idle.MilliCPU > nodes[b].Idle.MilliCPU
		}
		return nodes[a].Name < nodes[b].Name
	})
	return nodes
}

// chooseNodes picks the nodes a starving gang reserves: within one rack
// when a rack can hold it (ring traffic stays under one switch), the rack
// whose chosen nodes have the least of the gang's share still in use
// (they drain first); otherwise across the cluster. Nodes are tried in
// nodesByIdle order, so the plan takes what is already free before what
// is still running.
func (p *paddlePlugin) chooseNodes(nodes []*api.NodeInfo, pods []*api.TaskInfo, taken map[string]*api.Resource) ([]string, map[string]*api.Resource, bool) {
	byRack := map[string][]*api.NodeInfo{}
	var racks []string
	for _, n := range nodes {
		rack := p.state.places[n.Name].rack
		if rack == "" {
			continue
		}
		if _, ok := byRack[rack]; !ok {
			racks = append(racks, rack)
		}
		byRack[rack] = append(byRack[rack], n)
	}
	sort.Strings(racks)
	var best map[string]*api.Resource
	bestBusy := -1
	for _, rack := range racks {
		need, ok := p.planOn(byRack[rack], pods, taken)
		if !ok {
			continue
		}
		if busy := stillBusy(need, p.ssn.Nodes); bestBusy < 0 || busy < bestBusy {
			best, bestBusy = need, busy
		}
	}
	if best == nil {
		var ok bool
		if best, ok = p.planOn(nodes, pods, taken); !ok {
			return nil, nil, false
		}
	}
	names := make([]string, 0, len(best))
	for _, n := range nodes {
		if _, ok := best[n.Name]; ok {
			names = append(names, n.Name)
		}
	}
	return names, best, true
}

// stillBusy is how many of the GPUs a plan needs are in use now.
func stillBusy(need map[string]*api.Resource, nodes map[string]*api.NodeInfo) int {
	busy := 0
	for n, r := range need {
		busy += max(0, gpusOf(r)-gpusOf(nodes[n].Idle))
	}
	return busy
}

// subjectTo: job must leave r's share alone. Jobs of r's queue with no
// higher priority are, except r's own gang and starving gangs older than
// it (they planned first and are not inside its share).
func (p *paddlePlugin) subjectTo(job *api.JobInfo, r *reservation) bool {
	if job == nil || job.UID == r.job.UID || job.Queue != r.job.Queue || job.Priority > r.job.Priority || !p.guarded(job) {
		return false
	}
	return !(p.starving(job) && olderJob(job, r.job))
}

// reservationPredicate keeps tasks off the part of a reserved node that a
// starving gang needs: a task may use the node only if what stays free
// after it still covers every reservation it is subject to. Everything
// else (other nodes, reserved nodes' spare room) stays usable, so no GPU a
// waiting job could use without delaying the gang is left idle.
func (p *paddlePlugin) reservationPredicate(task *api.TaskInfo, node *api.NodeInfo) error {
	// Computed in every mode: it also forgets the reservations of gangs
	// that are no longer starving (or of a guard switched off).
	rs := p.reservations().byNode[node.Name]
	if len(rs) == 0 {
		return nil
	}
	job := p.ssn.Jobs[task.Job]
	keep := api.EmptyResource()
	var holder *api.JobInfo
	for _, r := range rs {
		if p.subjectTo(job, r) {
			keep.Add(r.need[node.Name])
			holder = r.job
		}
	}
	if holder == nil {
		return nil
	}
	after := keep.Clone()
	after.Add(task.InitResreq)
	if after.LessEqual(node.Idle, api.Zero) {
		return nil
	}
	return api.NewFitError(task, node, ReasonReservedForStarvingGang+": reserved for starving gang "+holder.Namespace+"/"+holder.Name)
}
