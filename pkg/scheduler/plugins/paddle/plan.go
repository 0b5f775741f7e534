package paddle

import (
	"math"
	"sort"
	"time"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
)

// This file is the session's plan: which nodes each starving gang reserves
// this session (planner), from the session's nodes and places given as
// values, and what a gang books from one session to the next (booked, kept
// in the store's reservation book). Which gangs reserve is reservation.go's.

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

// booked is a gang's reservation across sessions: its nodes, and how long
// the gang had waited when it first reserved. The gang then waits at most
// until the pods running at that moment have ended: every plan it holds,
// now and later, must have room for it once those pods are gone (see
// admissible). The moment is kept as a wait, not a clock reading, so it
// follows the moment the gang began to wait (waitingSince; the trace
// replay re-bases both).
type booked struct {
	nodes  []string
	waited time.Duration
}

// since is the moment the gang first reserved, given when it began to
// wait.
func (b *booked) since(waitStart time.Time) time.Time {
	return waitStart.Add(b.waited)
}

// planOn places pods first-fit, in order, on the nodes' allocatable
// resources less what older reservations took; it returns what each node
// must keep for them.
func planOn(nodes []*api.NodeInfo, pods []*api.TaskInfo, taken map[string]*api.Resource) (map[string]*api.Resource, bool) {
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

// planner chooses the session's reservations: what older gangs took, and
// each node's running pods, computed once. It holds the session's nodes and
// their places as values, never the plugin.
type planner struct {
	nodes    map[string]*api.NodeInfo
	nodeList []*api.NodeInfo
	places   map[string]place
	// book is the store's reservation book (Store.book), whose lock
	// the caller holds.
	book map[api.JobID]*booked
	now  time.Time
	// waitingSince: when a gang began to wait (sessionState.waitingSince).
	waitingSince func(*api.JobInfo) time.Time
	taken        map[string]*api.Resource
	drains       map[string]*nodeDrain
}

func (pl *planner) nodesNamed(names []string) []*api.NodeInfo {
	out := make([]*api.NodeInfo, 0, len(names))
	for _, n := range names {
		if ni, ok := pl.nodes[n]; ok {
			out = append(out, ni)
		}
	}
	if len(out) < len(names) {
		return nil // a reserved node is gone: plan again
	}
	return out
}

// nodeDrain is a node's use: its idle resources and the pods holding the
// rest, youngest first.
type nodeDrain struct {
	idle *api.Resource
	pods []runningPod
}

type runningPod struct {
	start time.Time
	req   *api.Resource
	// leaving: the pod is being deleted (Volcano's Releasing status).
	leaving bool
}

// drain is node n's use, computed once per session.
func (pl *planner) drain(n *api.NodeInfo) *nodeDrain {
	if d, ok := pl.drains[n.Name]; ok {
		return d
	}
	d := &nodeDrain{idle: n.Idle.Clone()}
	for _, t := range n.Tasks {
		if t.Status == api.Pending || t.Status == api.Pipelined {
			continue
		}
		d.pods = append(d.pods, runningPod{start: taskStart(t, pl.now), req: t.Resreq, leaving: t.Status == api.Releasing})
	}
	sort.SliceStable(d.pods, func(a, b int) bool {
		pa, pb := d.pods[a], d.pods[b]
		if pa.leaving != pb.leaving {
			return pa.leaving
		}
		return pa.start.After(pb.start)
	})
	pl.drains[n.Name] = d
	return d
}

// taskStart is when a task began to hold its node's resources: the
// kubelet's Status.StartTime, else the pod's creation; a task placed but
// not started yet starts now.
func taskStart(t *api.TaskInfo, now time.Time) time.Time {
	switch t.Status {
	case api.Allocated, api.Binding, api.Bound:
		return now
	}
	if t.Pod == nil {
		return now
	}
	if st := t.Pod.Status.StartTime; st != nil {
		return st.Time
	}
	return t.Pod.CreationTimestamp.Time
}

// neverDrains is the drain age of a node that cannot free enough.
const neverDrains = time.Duration(math.MaxInt64)

// drainAge is how long the youngest pods whose end leaves want free on
// node n (on top of what older reservations keep there) have run: the
// oldest of them. Run times of training jobs are heavy-tailed, so the
// longer a pod has run the longer it is likely to run on (Tiresias,
// NSDI'19, orders jobs by attained service for this reason;
// docs/scheduler-plugin.md gives the Philly trace's figures). A younger
// drain age is expected to drain sooner. busy is the GPUs still in use of
// those wanted.
func (pl *planner) drainAge(n *api.NodeInfo, want *api.Resource) (age time.Duration, busy int) {
	d := pl.drain(n)
	want = pl.withTaken(n.Name, want)
	busy = max(0, gpusOf(want)-gpusOf(d.idle))
	free := d.idle.Clone()
	for _, pod := range d.pods {
		if want.LessEqual(free, api.Zero) {
			return age, busy
		}
		if !pod.leaving {
			age = max(age, pl.now.Sub(pod.start))
		}
		free.Add(pod.req)
	}
	if want.LessEqual(free, api.Zero) {
		return age, busy
	}
	return neverDrains, busy
}

// plan is nodes a gang could reserve: what each must keep for it, and what
// the plan waits for.
type plan struct {
	nodes []string
	need  map[string]*api.Resource
	cost  planCost
}

// withTaken is what node name must have free to give a gang r: r and
// what older reservations keep there.
func (pl *planner) withTaken(name string, r *api.Resource) *api.Resource {
	want := r.Clone()
	if t := pl.taken[name]; t != nil {
		want.Add(t)
	}
	return want
}

// planCost is what a plan waits for: the drain age of its slowest node,
// then the GPUs still busy.
type planCost struct {
	age  time.Duration
	busy int
}

func (a planCost) less(b planCost) bool {
	if a.age != b.age {
		return a.age < b.age
	}
	return a.busy < b.busy
}

func (pl *planner) cost(need map[string]*api.Resource) planCost {
	var c planCost
	for n, r := range need {
		age, busy := pl.drainAge(pl.nodes[n], r)
		c.age = max(c.age, age)
		c.busy += busy
	}
	return c
}

// admissible: the plan has room for the gang once every pod running at
// since has ended. On each node what the gang needs is free already, or
// fits beside what older reservations keep and the pods started after
// since. A reserved node's share is kept off limits, so the booked plan
// stays admissible; a move to an admissible plan keeps the bound.
func (pl *planner) admissible(need map[string]*api.Resource, since time.Time) bool {
	for name, r := range need {
		n := pl.nodes[name]
		d := pl.drain(n)
		want := pl.withTaken(name, r)
		if want.LessEqual(d.idle, api.Zero) {
			continue
		}
		for _, pod := range d.pods {
			if !pod.leaving && pod.start.After(since) {
				want.Add(pod.req)
			}
		}
		if !want.LessEqual(n.Allocatable, api.Zero) {
			return false
		}
	}
	return true
}

// order is the session's nodes in the order a plan for pods tries them:
// those expected to drain first (drainAge) for as many of the gang's
// largest pods as their room holds, then most idle GPUs, most idle CPU, by
// name.
func (pl *planner) order(pods []*api.TaskInfo) []*api.NodeInfo {
	var unit *api.Resource
	size := 0
	for _, t := range pods {
		if g := gpusOf(t.InitResreq); unit == nil || g > size {
			unit, size = t.InitResreq, g
		}
	}
	type keyed struct {
		n   *api.NodeInfo
		age time.Duration
	}
	nodes := make([]keyed, 0, len(pl.nodeList))
	for _, n := range pl.nodeList {
		k := keyed{n: n}
		count := 1
		if size > 0 {
			room := max(0, gpusOf(n.Allocatable)-gpusOf(pl.taken[n.Name]))
			count = min(room/size, len(pods))
		}
		if count == 0 || unit == nil {
			k.age = neverDrains
		} else {
			k.age, _ = pl.drainAge(n, unit.Clone().Multi(float64(count)))
		}
		nodes = append(nodes, k)
	}
	sort.SliceStable(nodes, func(a, b int) bool {
		na, nb := nodes[a].n, nodes[b].n
		if nodes[a].age != nodes[b].age {
			return nodes[a].age < nodes[b].age
		}
		if ga, gb := gpusOf(na.Idle), gpusOf(nb.Idle); ga != gb {
			return ga > gb
		}
		if na.Idle.MilliCPU != nb.Idle.MilliCPU {
			return na.Idle.MilliCPU > nb.Idle.MilliCPU
		}
		return na.Name < nb.Name
	})
	out := make([]*api.NodeInfo, len(nodes))
	for i, k := range nodes {
		out[i] = k.n
	}
	return out
}

// choose picks the nodes a starving gang reserves among admissible plans:
// within one rack when a rack can hold it (ring traffic stays under one
// switch), the rack whose plan is expected to drain first (planCost);
// otherwise across the cluster; nil when no plan is admissible. Nodes are
// tried in order, so a plan takes what drains first.
func (pl *planner) choose(pods []*api.TaskInfo, since time.Time) *plan {
	nodes := pl.order(pods)
	byRack := map[string][]*api.NodeInfo{}
	var racks []string
	for _, n := range nodes {
		rack := pl.places[n.Name].rack
		if rack == "" {
			continue
		}
		if _, ok := byRack[rack]; !ok {
			racks = append(racks, rack)
		}
		byRack[rack] = append(byRack[rack], n)
	}
	sort.Strings(racks)
	var best *plan
	for _, rack := range racks {
		need, ok := planOn(byRack[rack], pods, pl.taken)
		if !ok || !pl.admissible(need, since) {
			continue
		}
		if c := pl.cost(need); best == nil || c.less(best.cost) {
			best = &plan{need: need, cost: c}
		}
	}
	if best == nil {
		need, ok := planOn(nodes, pods, pl.taken)
		if !ok || !pl.admissible(need, since) {
			return nil
		}
		best = &plan{need: need, cost: pl.cost(need)}
	}
	for _, n := range nodes {
		if _, ok := best.need[n.Name]; ok {
			best.nodes = append(best.nodes, n.Name)
		}
	}
	return best
}

// replan returns what gang j reserves this session and updates its book
// entry. The booked plan is kept unless a new admissible plan is expected
// to drain sooner; one with nothing left to drain cannot be beaten. When
// the booked plan can no longer hold the gang (a node is gone, or a job
// the guard does not cover took its room) and no plan is admissible, the
// gang reserves afresh and its bound starts again.
func (pl *planner) replan(j *api.JobInfo, pods []*api.TaskInfo) (map[string]*api.Resource, bool) {
	start := pl.waitingSince(j)
	b := pl.book[j.UID]
	if b == nil {
		b = &booked{waited: pl.now.Sub(start)}
	}
	since := b.since(start)
	var cur *plan
	if b.nodes != nil {
		if need, ok := planOn(pl.nodesNamed(b.nodes), pods, pl.taken); ok && pl.admissible(need, since) {
			cur = &plan{nodes: b.nodes, need: need, cost: pl.cost(need)}
		}
	}
	if cur == nil || cur.cost != (planCost{}) {
		fresh := pl.choose(pods, since)
		if fresh == nil && cur == nil && b.nodes != nil {
			b.waited = pl.now.Sub(start)
			since = b.since(start)
			fresh = pl.choose(pods, since)
		}
		if fresh != nil && (cur == nil || fresh.cost.less(cur.cost)) {
			klog.V(3).InfoS("Reserving nodes for starving Paddle gang", "job", klog.KRef(j.Namespace, j.Name), "nodes", fresh.nodes, "previous", b.nodes, "reservedFor", pl.now.Sub(since).Round(time.Second))
			cur, b.nodes = fresh, fresh.nodes
		}
	}
	if cur == nil {
		return nil, false
	}
	pl.book[j.UID] = b
	return cur.need, true
}
