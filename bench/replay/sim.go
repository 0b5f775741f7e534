package replay

import (
	"container/heap"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingk8s "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

// Config is a scheduler configuration to replay: its tiers, and what it
// asks of every job (annotations or a network-topology spec on the
// PodGroup) and of the cluster (HyperNodes).
type Config struct {
	Sched *simsched.Config
	// Annotate shapes a job's PodGroup the way users of this configuration
	// must write their jobs; nil for none.
	Annotate func(j quality.Job, pg *schedulingv1.PodGroup)
	// RackHyperNodes installs the racks as Volcano HyperNodes.
	RackHyperNodes bool
	// PriorityClasses the cluster defines (the classes Annotate names).
	PriorityClasses []*schedulingk8s.PriorityClass
	// Note says what the configuration is, for the report.
	Note string
}

// Name of the configuration.
func (c Config) Name() string { return c.Sched.Name }

// JobResult is what happened to one job.
type JobResult struct {
	Name    string
	GPUs    int
	PS      bool
	Pods    int
	Arrival float64 // s after the window's first submission
	Start   float64 // -1: never started
	End     float64
	// Slowdown: step time under the placement it got over its best
	// placement's (the cost model); its run time is Duration x Slowdown.
	Slowdown float64
	// Collective jobs of more than one trainer: nodes and racks their
	// trainers span, and boundaries between consecutive trainer ranks
	// that cross a node or a rack (a ring all-reduce uses each one).
	Nodes, Racks                 int
	NodeCrossings, RackCrossings int
}

// Started reports whether the job ever started.
func (r JobResult) Started() bool { return r.Start >= 0 }

// Sample is the GPUs in use from time T on.
type Sample struct {
	T    float64
	Used int
}

// Run is one configuration's replay.
type Run struct {
	Config string
	Jobs   []JobResult
	// Samples: GPUs in use after every event.
	Samples []Sample
	// IdleWhileWaiting: GPU-seconds free that waiting jobs would fit, node
	// by node (see usableIdle).
	IdleWhileWaiting float64
	Cycles           int
	// SchedulerTime is the wall time spent in scheduling cycles.
	SchedulerTime time.Duration
}

// starvationAfter reads the paddle plugin's starvation threshold from the
// configuration's tiers (0: the plugin is absent or aging is off), so the
// replay runs a cycle when a waiting gang crosses it.
func starvationAfter(cfg *simsched.Config) time.Duration {
	if a, _, ok := paddle.ArgsIn(cfg.Tiers); ok {
		return a.StarvationAfter
	}
	return 0
}

// completion is a running job's end.
type completion struct {
	end float64
	job int
}

type completions []completion

func (h completions) Len() int { return len(h) }
func (h completions) Less(a, b int) bool {
	if h[a].end != h[b].end {
		return h[a].end < h[b].end
	}
	return h[a].job < h[b].job
}
func (h completions) Swap(a, b int)       { h[a], h[b] = h[b], h[a] }
func (h *completions) Push(x interface{}) { *h = append(*h, x.(completion)) }
func (h *completions) Pop() interface{} {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// sim is the state of one replay.
type sim struct {
	w      *Workload
	cfg    Config
	models map[string]quality.Model
	best   map[string]float64
	ns     string
	nodes  []*v1.Node

	pods      [][]*v1.Pod
	groups    []*schedulingv1.PodGroup
	pending   []int // job indices, in arrival order
	running   map[int]quality.Placement
	done      completions
	used      int
	free      map[string]int // free GPUs per node
	res       []JobResult
	run       *Run
	starveAt  []float64
	nextTimer int
}

// Simulate replays the workload under one configuration. best holds each
// job's step time at its best placement (BestSteps).
func Simulate(w *Workload, models map[string]quality.Model, best map[string]float64, cfg Config) (*Run, error) {
	s := &sim{w: w, cfg: cfg, models: models, best: best, ns: "replay-" + cfg.Name(),
		nodes: w.Cluster.SimCluster(nil).Nodes, running: map[int]quality.Placement{},
		run: &Run{Config: cfg.Name()}, free: map[string]int{}}
	for _, n := range s.nodes {
		s.free[n.Name] = w.Cluster.Preset.GPUsPerNode
	}
	s.pods = make([][]*v1.Pod, len(w.Jobs))
	s.groups = make([]*schedulingv1.PodGroup, len(w.Jobs))
	s.res = make([]JobResult, len(w.Jobs))
	after := starvationAfter(cfg.Sched).Seconds()
	for i, j := range w.Jobs {
		if _, ok := models[j.Model]; !ok {
			return nil, fmt.Errorf("job %s: no model %q", j.Name, j.Model)
		}
		s.res[i] = JobResult{Name: j.Name, GPUs: j.GPUs, PS: j.PS, Pods: j.Pods, Arrival: j.Arrival, Start: -1, End: -1}
		if after > 0 {
			s.starveAt = append(s.starveAt, j.Arrival+after)
		}
	}
	next := 0 // next arrival
	now := 0.0
	for {
		t, ok := s.nextEvent(next)
		if !ok {
			break
		}
		s.account(now, t)
		now = t
		for next < len(w.Jobs) && w.Jobs[next].Arrival <= t {
			s.arrive(next)
			next++
		}
		for len(s.done) > 0 && s.done[0].end <= t {
			c := heap.Pop(&s.done).(completion)
			s.release(c.job)
		}
		for s.nextTimer < len(s.starveAt) && s.starveAt[s.nextTimer] <= t {
			s.nextTimer++
		}
		// One cycle per change; a cycle that started jobs is a change too
		// (the real scheduler runs again a period later). A cycle is skipped
		// when no waiting gang's pods fit the free GPUs node by node: it
		// could place nothing.
		for s.anyFits() && s.cycle(t) > 0 {
		}
		s.run.Samples = append(s.run.Samples, Sample{T: t, Used: s.used})
	}
	s.run.Jobs = s.res
	return s.run, nil
}

// nextEvent is the earliest arrival, completion or starvation timer of a
// job still waiting; false when nothing is left that could change anything.
func (s *sim) nextEvent(next int) (float64, bool) {
	t, ok := 0.0, false
	take := func(x float64) {
		if !ok || x < t {
			t, ok = x, true
		}
	}
	if next < len(s.w.Jobs) {
		take(s.w.Jobs[next].Arrival)
	}
	if len(s.done) > 0 {
		take(s.done[0].end)
	}
	if len(s.pending) > 0 && s.nextTimer < len(s.starveAt) {
		take(s.starveAt[s.nextTimer])
	}
	return t, ok
}

// usableIdle is how many free GPUs waiting jobs would fit: the GPUs of
// every waiting job whose GPU pods fit the free GPUs node by node (each
// alone), at most the free GPUs. Free GPUs that no waiting job fits, such
// as 8 free GPUs spread over nodes while the only waiting job needs one
// 8-GPU pod, are not counted: that is fragmentation, not a job held back.
func (s *sim) usableIdle() int {
	free := s.w.GPUs() - s.used
	if free == 0 {
		return 0
	}
	want := 0
	for _, i := range s.pending {
		if j := s.w.Jobs[i]; s.fitsFree(j.Job) {
			want += j.GPUs
		}
	}
	return min(want, free)
}

// anyFits: some waiting job's pods fit the free GPUs node by node.
func (s *sim) anyFits() bool {
	for _, i := range s.pending {
		if s.fitsFree(s.w.Jobs[i].Job) {
			return true
		}
	}
	return false
}

// fitsFree: the job's GPU pods fit the free GPUs node by node (pservers
// need none).
func (s *sim) fitsFree(j quality.Job) bool {
	if j.PodGPUs == 0 {
		return true
	}
	slots := 0
	for _, f := range s.free {
		slots += f / j.PodGPUs
	}
	return slots >= j.Pods
}

// account adds the interval [from, to) to the idle-while-waiting total.
func (s *sim) account(from, to float64) {
	s.run.IdleWhileWaiting += float64(s.usableIdle()) * (to - from)
}

// release ends running job i: its GPUs are free again.
func (s *sim) release(i int) {
	p := s.running[i]
	for k, g := range quality.PodSizes(p.Job) {
		s.free[p.Nodes[k]] += g
	}
	delete(s.running, i)
	s.used -= s.w.Jobs[i].GPUs
}

func (s *sim) arrive(i int) {
	pods, pg := quality.GangOf(s.ns, s.w.Jobs[i].Job, time.Now())
	if s.cfg.Annotate != nil {
		s.cfg.Annotate(s.w.Jobs[i].Job, pg)
	}
	if name := pg.Spec.PriorityClassName; name != "" {
		// What Volcano's job controller and Kubernetes' Priority admission
		// plugin do with a job's priorityClassName: every pod names the
		// class and carries its value (the priority plugin's task order).
		for _, pc := range s.cfg.PriorityClasses {
			if pc.Name != name {
				continue
			}
			for _, p := range pods {
				value := pc.Value
				p.Spec.PriorityClassName, p.Spec.Priority = name, &value
			}
		}
	}
	s.pods[i], s.groups[i] = pods, pg
	s.pending = append(s.pending, i)
}

// cycle runs one allocate cycle at simulated time t and starts the gangs
// it placed whole; it returns how many started.
func (s *sim) cycle(t float64) int {
	wall := time.Now()
	c := &simsched.Cluster{Nodes: s.nodes, RackHyperNodes: s.cfg.RackHyperNodes, PriorityClasses: s.cfg.PriorityClasses}
	for _, i := range s.runningJobs() {
		// And how long a pod has run through the kubelet's start time (the
		// paddle plugin's reservation drains nodes with young pods first).
		started := at(wall, t, s.res[i].Start)
		for _, p := range s.pods[i] {
			p.Status.StartTime = &started
		}
		c.Pods = append(c.Pods, s.pods[i]...)
		c.PodGroups = append(c.PodGroups, s.groups[i])
	}
	for _, i := range s.pending {
		// The scheduler sees how long a job has waited through its
		// creation time (Volcano's job order, the paddle plugin's aging).
		created := at(wall, t, s.w.Jobs[i].Arrival)
		for _, p := range s.pods[i] {
			p.CreationTimestamp = created
		}
		s.groups[i].CreationTimestamp = created
		c.Pods = append(c.Pods, s.pods[i]...)
		c.PodGroups = append(c.PodGroups, s.groups[i])
	}
	cache := simsched.NewSnapshotCache(c)
	res := cache.Schedule(s.cfg.Sched)
	cache.Close()
	s.run.Cycles++
	s.run.SchedulerTime += res.Took

	var started []int
	var waiting []int
	for _, i := range s.pending {
		nodes, ok := s.placement(i, res.Placed)
		if !ok {
			waiting = append(waiting, i)
			continue
		}
		s.running[i] = quality.Placement{Job: s.w.Jobs[i].Job, Nodes: nodes}
		started = append(started, i)
	}
	s.pending = waiting
	if len(started) == 0 {
		return 0
	}
	all := make([]quality.Placement, 0, len(s.running))
	for _, i := range s.runningJobs() {
		all = append(all, s.running[i])
	}
	resolved := s.w.Cluster.Resolve(all)
	for _, i := range started {
		s.start(i, t, resolved[s.w.Jobs[i].Name])
	}
	return len(started)
}

// at is the wall-clock reading of simulated time x in a cycle that runs at
// simulated time t and wall time wall: the scheduler measures waits and run
// times against its own clock.
func at(wall time.Time, t, x float64) metav1.Time {
	return metav1.NewTime(wall.Add(-time.Duration((t - x) * float64(time.Second))))
}

// runningJobs are the running jobs' indices in order, so that every cycle
// hands the cache the same objects in the same order.
func (s *sim) runningJobs() []int {
	out := make([]int, 0, len(s.running))
	for i := range s.running {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// placement is where the cycle put job i's pods (pservers, then trainers
// by index), when it placed the whole gang.
func (s *sim) placement(i int, placed map[string]string) ([]string, bool) {
	var nodes []string
	for _, p := range s.pods[i] {
		n, ok := placed[p.Namespace+"/"+p.Name]
		if !ok {
			return nil, false
		}
		nodes = append(nodes, n)
	}
	return nodes, true
}

// start runs job i from t on the placement it got: its pods become
// running pods of the cluster, and it ends after its recorded duration
// stretched by the placement's slowdown.
func (s *sim) start(i int, t float64, pods []quality.Pod) {
	j := s.w.Jobs[i]
	slowdown := s.w.Cluster.Step(s.models[j.Model], j.Job, pods) / s.best[j.Name]
	r := &s.res[i]
	r.Start, r.Slowdown = t, slowdown
	r.End = t + j.Duration*slowdown
	if !j.PS && j.Pods > 1 {
		r.Nodes, r.Racks, r.NodeCrossings, r.RackCrossings = rankCrossings(pods)
	}
	heap.Push(&s.done, completion{end: r.End, job: i})
	s.used += j.GPUs
	for k, g := range quality.PodSizes(j.Job) {
		s.free[s.running[i].Nodes[k]] -= g
	}
	for k, p := range s.pods[i] {
		p.Spec.NodeName = s.running[i].Nodes[k]
		p.Status.Phase = v1.PodRunning
	}
	s.groups[i].Status.Phase = schedulingv1.PodGroupRunning
}

// rankCrossings counts the nodes and racks a collective job's trainers
// span and the boundaries between consecutive ranks that cross them.
func rankCrossings(pods []quality.Pod) (nodes, racks, nodeX, rackX int) {
	ns, rs := map[string]bool{}, map[string]bool{}
	for k, p := range pods {
		ns[p.Node], rs[p.Rack] = true, true
		if k == 0 {
			continue
		}
		if p.Node != pods[k-1].Node {
			nodeX++
		}
		if p.Rack != pods[k-1].Rack {
			rackX++
		}
	}
	return len(ns), len(rs), nodeX, rackX
}

// BestSteps is each job's step time at its best placement: alone on an
// empty cluster of the same nodes, as few nodes as possible, one rack.
func BestSteps(w *Workload, models map[string]quality.Model) map[string]float64 {
	best := make(map[string]float64, len(w.Jobs))
	for _, j := range w.Jobs {
		empty, p := w.Cluster.BestPlacement(j.Job)
		best[j.Name] = empty.Step(models[j.Model], j.Job, empty.Resolve([]quality.Placement{p})[j.Name])
	}
	return best
}
