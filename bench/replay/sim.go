package replay

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingk8s "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
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
	// Queues: every job goes to the queue of its trace's virtual cluster,
	// weighted by that cluster's share of the trace before the window
	// (Workload.Queues); otherwise all jobs share the default queue.
	Queues bool
	// Remaining: the replay writes every job's remaining GPU-seconds on its
	// PodGroup before each cycle (remainingAnnotation), for the clairvoyant
	// reference; no deployable configuration can know it.
	Remaining bool
	// Role says what the configuration stands for in a comparison: a stock
	// configuration an operator can deploy, paddle, or a bench-only
	// reference no cluster can run.
	Role Role
}

// Role of a configuration, or of a row of figures, in a comparison.
type Role string

const (
	// RoleStock: Volcano without paddle, as an operator can configure it.
	RoleStock Role = "stock"
	// RolePaddle: with the paddle plugin.
	RolePaddle Role = "paddle"
	// RoleReference: a bench-only ordering that knows what no scheduler
	// can (every job's duration); not deployable.
	RoleReference Role = "reference"
	// RoleBound: figures no configuration can beat, computed without a
	// replay.
	RoleBound Role = "bound"
)

// Name of the configuration.
func (c Config) Name() string { return c.Sched.Name }

// JobResult is what happened to one job.
type JobResult struct {
	Name string
	GPUs int
	PS   bool
	Pods int
	// Queue the job ran in.
	Queue   string
	Arrival float64 // s after the window's first submission
	// Admitted: when the enqueue action admitted its PodGroup (Arrival for
	// configurations without enqueue).
	Admitted float64
	Start    float64 // -1: never started
	End      float64
	// Slowdown: step time under the placement it got over its best
	// placement's (the cost model); its run time is Duration x Slowdown.
	Slowdown float64
	// Collective jobs of more than one trainer: nodes and racks their
	// trainers span, and boundaries between consecutive trainer ranks
	// that cross a node or a rack (a ring all-reduce uses each one).
	Nodes, Racks                 int
	NodeCrossings, RackCrossings int
	// With Flex: times the job was preempted below its minimum and
	// restarted from a checkpoint, and times its trainers changed while it
	// ran (an elastic job grew or shrank).
	Restarts, Resizes int
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
	Role   Role
	Jobs   []JobResult
	// Samples: GPUs in use after every event.
	Samples []Sample
	// IdleWhileWaiting: GPU-seconds free that waiting jobs would fit, node
	// by node (see usableIdle).
	IdleWhileWaiting float64
	// FreeWhileWaiting: GPU-seconds free while any job waits, whether or
	// not a waiting job would fit them (fragmentation included).
	FreeWhileWaiting float64
	Cycles           int
	// Evictions: running pods the cycles' preempt and reclaim actions
	// evicted.
	Evictions int
	// SchedulerTime is the wall time spent in scheduling cycles.
	SchedulerTime time.Duration
}

// starvationAfter reads the paddle plugin's starvation threshold from the
// configuration's tiers (0: the plugin is absent or aging is off).
func starvationAfter(cfg *simsched.Config) time.Duration {
	if a, _, ok := paddle.ArgsIn(cfg.Tiers); ok {
		return a.StarvationAfter
	}
	return 0
}

// slaWaitingTime reads the sla plugin's sla-waiting-time from the tiers
// (0: absent).
func slaWaitingTime(cfg *simsched.Config) time.Duration {
	for _, t := range cfg.Tiers {
		for _, p := range t.Plugins {
			if p.Name != "sla" {
				continue
			}
			v, _ := p.Arguments[slaWaitingTimeArg].(string)
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				return d
			}
		}
	}
	return 0
}

// slaWaitingTimeArg is the sla plugin's argument (Volcano
// pkg/scheduler/plugins/sla: JobWaitingTime).
const slaWaitingTimeArg = "sla-waiting-time"

// DeclaredTimers are the waits after which a configuration's order of a
// waiting job changes: paddle's starvation threshold, the sla plugin's
// waiting time. The real scheduler runs a cycle every second, so it acts
// on them when they come due; the replay runs a cycle then too, for every
// configuration compared (Workload.Timers), so that none is simulated at
// coarser times than another.
func DeclaredTimers(cfgs []Config) []time.Duration {
	seen := map[time.Duration]bool{}
	var out []time.Duration
	for _, c := range cfgs {
		for _, d := range []time.Duration{starvationAfter(c.Sched), slaWaitingTime(c.Sched)} {
			if d > 0 && !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// timersOf are the timers a replay of cfg runs cycles at, in seconds: the
// workload's (the compared configurations') and cfg's own, and, where jobs
// can be checkpointed, their restart cost: a gang that has waited that
// long may stop one (paddle's stop guards, pkg/scheduler/plugins/paddle
// stopping.go), for every configuration alike.
func timersOf(w *Workload, cfg Config) []float64 {
	all := append(append([]time.Duration(nil), w.Timers...), DeclaredTimers([]Config{cfg})...)
	if f := w.Options.Flex; f.CheckpointShare > 0 && f.RestartCost > 0 {
		all = append(all, time.Duration(f.RestartCost*float64(time.Second)))
	}
	slices.Sort(all)
	all = slices.Compact(all)
	out := make([]float64, len(all))
	for k, d := range all {
		out[k] = d.Seconds()
	}
	return out
}

// stopTimersOf are the times after a checkpointable job starts at which
// paddle's stop guards may change their answer for it (stopping.go): once
// it has run its restart cost. None for a configuration that does not stop
// checkpointable jobs.
func stopTimersOf(cfg *simsched.Config, restartCost float64) []float64 {
	if a, _, ok := paddle.ArgsIn(cfg.Tiers); !ok || !a.PreemptCheckpointable {
		return nil
	}
	return []float64{restartCost}
}

// completion is a running job's end.
type completion struct {
	end float64
	job int
	// gen: the job's progress generation when this end was computed; a
	// resize or restart makes it stale.
	gen int
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
	w   *Workload
	cfg Config
	// sched is the scheduler the replay runs: one per replay, as one
	// process would run the whole window. Every cycle stamps the
	// cluster's objects against the clock at its start (at), so waits and
	// run times are the simulated ones, and a gang whose starvation timer
	// fires has waited past its threshold. Its paddle plugin reads now,
	// the simulated time on the trace's clock (the workload's epoch plus
	// t), so that what it remembers from one cycle to the next ages as
	// simulated time passes; except where the configuration runs Volcano's
	// sla plugin, which measures waits with the real clock (sla: time.Since
	// of the job's creation): there (realClock) every cycle stamps against
	// the real clock at its start, and the plugin reads that too.
	sched     *simsched.Scheduler
	now       time.Time
	epoch     time.Time
	realClock bool
	models    map[string]quality.Model
	best      map[string]float64
	ns        string
	nodes     []*v1.Node

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

	// on[i][k]: pod k of job i runs (pservers first, then trainers).
	on [][]bool
	// created[i][k], started[i][k]: when pod k of job i was last created
	// and last started, in simulated seconds. The job controller creates a
	// new pod for an evicted one and every pod anew on a restart, while
	// the PodGroup keeps the job's arrival (pkg/controllers/job: killJob,
	// syncJob), so the scheduler sees a restarted gang's wait and a
	// restarted pod's run time from then, not from the job's arrival and
	// first start.
	created, started [][]float64
	// hist: the run-time history the paddle plugin reads (history.go);
	// nil for configurations that do not read it.
	hist *simHistory
	// after: the timers of the compared configurations (Workload.Timers
	// and this configuration's own), in seconds: a cycle runs when a
	// waiting job has waited that long (the paddle plugin's starvation
	// threshold, the sla plugin's waiting time).
	after []float64
	// stopAfter: the timers after a checkpointable job starts
	// (stopTimersOf), in seconds.
	stopAfter []float64
	// enqueues: the configuration runs the enqueue action, so jobs arrive
	// with a Pending PodGroup and no pods until it admits them.
	enqueues bool
	// queues: the window's queues for a configuration that uses them
	// (Workload.QueueObjects), built once; every cycle hands them over.
	queues []*schedulingv1.Queue
	// rem: job i's remaining work, in seconds of its recorded run (its
	// recorded trainers at their best placement); last: when rem was last
	// brought up to date; factor: seconds per second of recorded run now
	// (placement slowdown over elastic speed-up); gen: completion
	// generation.
	rem, last, factor []float64
	gen               []int
	// bestStep: step time at the best placement, per job and trainers.
	bestStep map[string]float64
}

// Simulate replays the workload under one configuration. best holds each
// job's step time at its best placement (BestSteps). It stops with ctx's
// error when ctx is cancelled.
func Simulate(ctx context.Context, w *Workload, models map[string]quality.Model, best map[string]float64, cfg Config) (*Run, error) {
	w.normalizeFlex()
	s := &sim{w: w, cfg: cfg, models: models, best: best, ns: "replay-" + cfg.Name(),
		nodes: w.Cluster.SimCluster(nil).Nodes, running: map[int]quality.Placement{},
		run: &Run{Config: cfg.Name(), Role: cfg.Role}, free: map[string]int{},
		epoch: time.Unix(int64(w.Start0), 0).UTC(), realClock: slaWaitingTime(cfg.Sched) > 0}
	s.sched = simsched.NewScheduler(func() time.Time { return s.now })
	for _, n := range s.nodes {
		s.free[n.Name] = w.Cluster.Preset.GPUsPerNode
	}
	s.pods = make([][]*v1.Pod, len(w.Jobs))
	s.groups = make([]*schedulingv1.PodGroup, len(w.Jobs))
	s.res = make([]JobResult, len(w.Jobs))
	s.on = make([][]bool, len(w.Jobs))
	s.created, s.started = make([][]float64, len(w.Jobs)), make([][]float64, len(w.Jobs))
	s.rem, s.last, s.factor = make([]float64, len(w.Jobs)), make([]float64, len(w.Jobs)), make([]float64, len(w.Jobs))
	s.gen = make([]int, len(w.Jobs))
	s.bestStep = map[string]float64{}
	s.after = timersOf(w, cfg)
	s.stopAfter = stopTimersOf(cfg.Sched, w.Options.Flex.RestartCost)
	s.enqueues = slices.Contains(cfg.Sched.Actions, "enqueue")
	if cfg.Queues {
		s.queues = w.QueueObjects()
	}
	if usesHistory(cfg) {
		s.hist = newSimHistory(w)
	}
	for i, j := range w.Jobs {
		if _, ok := models[j.Model]; !ok {
			return nil, fmt.Errorf("job %s: no model %q", j.Name, j.Model)
		}
		s.res[i] = JobResult{Name: j.Name, GPUs: j.GPUs, PS: j.PS, Pods: j.Pods, Arrival: j.Arrival, Admitted: j.Arrival, Start: -1, End: -1}
		s.rem[i] = j.Duration
		for _, d := range s.after {
			s.starveAt = append(s.starveAt, j.Arrival+d)
		}
	}
	sort.Float64s(s.starveAt)
	next := 0 // next arrival
	now := 0.0
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
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
			if c.gen != s.gen[c.job] {
				continue // resized or restarted since
			}
			s.recordFinished(c.job, c.end)
			s.release(c.job, c.end)
			s.res[c.job].End = c.end
		}
		for s.nextTimer < len(s.starveAt) && s.starveAt[s.nextTimer] <= t {
			s.nextTimer++
		}
		// One cycle per change; a cycle that started jobs is a change too
		// (the real scheduler runs again a period later). A cycle is skipped
		// when no waiting gang's pods fit the free GPUs node by node: it
		// could place nothing.
		for n := 0; s.wantCycle() && s.cycle(t) > 0 && n < maxCyclesPerEvent; n++ {
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
		if j := minShape(s.w.Jobs[i]); s.fitsFree(j) {
			want += j.GPUs
		}
	}
	return min(want, free)
}

// anyFits: some waiting job's pods fit the free GPUs node by node.
func (s *sim) anyFits() bool {
	for _, i := range s.pending {
		if s.fitsFree(minShape(s.w.Jobs[i])) {
			return true
		}
	}
	return false
}

// maxCyclesPerEvent bounds the cycles run at one moment: with preemption a
// cycle that only evicted is a change too, and an eviction the next cycle
// undoes must not loop.
const maxCyclesPerEvent = 8

// wantCycle: a cycle could change something. Without Flex, only when some
// waiting gang fits the free GPUs; with it, also when a job waits (the
// preempt action may make room) or an elastic job could grow.
func (s *sim) wantCycle() bool {
	if !s.w.Options.Flex.On() {
		return s.anyFits()
	}
	if len(s.pending) > 0 {
		return true
	}
	for i := range s.running {
		if j := s.w.Jobs[i]; j.Elastic() && s.trainersOn(i) < j.MaxPods && s.fitsFree(quality.Job{PodGPUs: j.PodGPUs, Pods: 1}) {
			return true
		}
	}
	return false
}

// minShape is the job at its fewest trainers: what must fit for it to start.
func minShape(j Job) quality.Job {
	if j.MinPods == 0 { // not normalized (normalizeFlex): the trace's shape
		return j.Job
	}
	return withTrainers(j, j.MinPods)
}

// withTrainers is the job with n trainers (an elastic job's shape now).
func withTrainers(j Job, n int) quality.Job {
	q := j.Job
	q.Pods, q.GPUs = n, n*j.PodGPUs
	return q
}

// trainersOn counts job i's running trainers.
func (s *sim) trainersOn(i int) int {
	n := 0
	for k := s.w.Jobs[i].PServers; k < len(s.on[i]); k++ {
		if s.on[i][k] {
			n++
		}
	}
	return n
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

// account adds the interval [from, to) to the idle- and free-while-waiting
// totals.
func (s *sim) account(from, to float64) {
	s.run.IdleWhileWaiting += float64(s.usableIdle()) * (to - from)
	if len(s.pending) > 0 {
		s.run.FreeWhileWaiting += float64(s.w.GPUs()-s.used) * (to - from)
	}
}

// release ends running job i at t: its pods stop and their GPUs are free
// again.
func (s *sim) release(i int, t float64) {
	for k := range s.pods[i] {
		if s.on[i][k] {
			s.stopPod(i, k, t)
		}
	}
	delete(s.running, i)
}

// stopPod: pod k of job i no longer runs from t (its job ended, or it was
// evicted); the job controller recreates an evicted pod, pending.
func (s *sim) stopPod(i, k int, t float64) {
	p := s.pods[i][k]
	g := s.podGPUs(i, k)
	s.free[p.Spec.NodeName] += g
	s.used -= g
	s.on[i][k] = false
	p.Spec.NodeName = ""
	p.Status.Phase = v1.PodPending
	p.Status.StartTime = nil
	s.created[i][k] = t
}

// podGPUs: GPUs of pod k of job i (pservers none).
func (s *sim) podGPUs(i, k int) int {
	if k < s.w.Jobs[i].PServers {
		return 0
	}
	return s.w.Jobs[i].PodGPUs
}

func (s *sim) arrive(i int) {
	j := s.w.Jobs[i]
	ns := s.ns
	if j.Namespace != "" {
		ns = j.Namespace
	}
	pods, pg := quality.GangOf(ns, withTrainers(j, j.MaxPods), time.Now())
	if j.Elastic() {
		// minAvailable is the fewest trainers (and every pserver).
		pg.Spec.MinMember = int32(j.PServers + j.MinPods)
	}
	if s.cfg.Queues && j.Queue != "" {
		pg.Spec.Queue = j.Queue
	}
	// The paddle admission labels a Paddle job with its mode, and Volcano's
	// job controller copies the job's labels to its PodGroup
	// (paddlejob.Defaults: modeLabel).
	if pg.Labels == nil {
		pg.Labels = map[string]string{}
	}
	pg.Labels[paddleapi.ModeLabel] = string(paddleapi.ModeCollective)
	if j.PS {
		pg.Labels[paddleapi.ModeLabel] = string(paddleapi.ModePS)
	}
	s.res[i].Queue = pg.Spec.Queue
	if s.enqueues {
		// What Volcano's job controller creates: a Pending PodGroup whose
		// minResources are its minMember pods' requests (pkg/controllers/job
		// createOrUpdatePodGroup, CalcPGMinResources), and no pod until
		// the enqueue action admits it (syncJob waits for Inqueue).
		pg.Status.Phase = schedulingv1.PodGroupPending
		pg.Spec.MinResources = minResources(pods, int(pg.Spec.MinMember))
	}
	markPreemption(j, pods, time.Duration(s.w.Options.Flex.RestartCost*float64(time.Second)))
	s.on[i] = make([]bool, len(pods))
	s.created[i], s.started[i] = make([]float64, len(pods)), make([]float64, len(pods))
	for k := range pods {
		s.created[i][k] = j.Arrival
	}
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

// minResources sums the requests of a gang's first n pods (pservers
// first, then trainers: the pods its minMember counts).
func minResources(pods []*v1.Pod, n int) *v1.ResourceList {
	out := v1.ResourceList{}
	for _, p := range pods[:min(n, len(pods))] {
		for _, c := range p.Spec.Containers {
			for name, q := range c.Resources.Requests {
				sum := out[name]
				sum.Add(q)
				out[name] = sum
			}
		}
	}
	return &out
}

// markPreemption writes a job's preemption opt-in on its pods as our job
// plugin does (pkg/controllers/job/plugins/paddle: markPreemption,
// labelElasticPod), for every configuration alike: volcano.sh/preemptable
// "true" on an elastic job's trainers and on every pod of a checkpointable
// job, "false" elsewhere (Volcano takes a pod without it as preemptable,
// api.GetPodPreemptable); paddleapi.ElasticLabel on elastic trainers and
// paddleapi.CheckpointableLabel on checkpointable pods, which paddle's
// levers read. Stock's gang plugin takes no pod below minAvailable
// whatever the annotation says. A checkpointable job's pods carry its
// restart cost (paddleapi.RestartCostAnnotation, the workload's) as the
// job plugin writes it, but no spec.maxRetry: the replay's jobs never fail
// at it under any configuration, so paddle's own bound
// (paddle.checkpointable.maxPreemptions) is the only one; Volcano's retry
// count is written at each restart (setRetryCount).
func markPreemption(j Job, pods []*v1.Pod, restartCost time.Duration) {
	for k, p := range pods {
		trainer := k >= j.PServers
		elastic := j.Elastic() && trainer
		p.Annotations[schedulingv1.PodPreemptable] = strconv.FormatBool(elastic || j.Checkpointable)
		if elastic {
			p.Labels[paddleapi.ElasticLabel] = "true"
		}
		if j.Checkpointable {
			p.Labels[paddleapi.CheckpointableLabel] = "true"
			p.Annotations[paddleapi.RestartCostAnnotation] = restartCost.String()
		}
	}
	setRetryCount(pods, 0)
}

// setRetryCount writes the job's restarts on its pods, as Volcano's job
// controller does on the pods it creates after a restart
// (paddleapi.RetryCountAnnotation).
func setRetryCount(pods []*v1.Pod, n int) {
	for _, p := range pods {
		p.Annotations[paddleapi.RetryCountAnnotation] = strconv.Itoa(n)
	}
}

// cycle runs one allocate cycle at simulated time t and starts the gangs
// it placed whole; it returns how many started.
func (s *sim) cycle(t float64) int {
	wall := s.epoch.Add(time.Duration(t * float64(time.Second)))
	if s.realClock {
		wall = time.Now()
	}
	s.now = wall
	c := &simsched.Cluster{Nodes: s.nodes, RackHyperNodes: s.cfg.RackHyperNodes, PriorityClasses: s.cfg.PriorityClasses}
	// The scheduler sees how long a job has waited through its PodGroup's
	// and its pending pods' creation times (Volcano's job order, the
	// paddle plugin's aging), and how long a pod has run through the
	// kubelet's start time (the paddle plugin's reservation drains nodes
	// with young pods first, its checkpoint lever stops the job with the
	// most attained GPU time first).
	stamp := func(i int) {
		s.groups[i].CreationTimestamp = at(wall, t, s.w.Jobs[i].Arrival)
		if s.cfg.Remaining {
			if s.groups[i].Annotations == nil {
				s.groups[i].Annotations = map[string]string{}
			}
			gpuSeconds := s.remaining(i, t) * float64(s.w.Jobs[i].GPUs)
			s.groups[i].Annotations[remainingAnnotation] = strconv.FormatFloat(gpuSeconds, 'f', 0, 64)
		}
		for k, p := range s.pods[i] {
			p.CreationTimestamp = at(wall, t, s.created[i][k])
			if s.on[i][k] {
				started := at(wall, t, s.started[i][k])
				p.Status.StartTime = &started
			}
		}
		if s.groups[i].Status.Phase != schedulingv1.PodGroupPending {
			c.Pods = append(c.Pods, s.pods[i]...)
		}
		c.PodGroups = append(c.PodGroups, s.groups[i])
	}
	c.Queues = s.queues
	if s.hist != nil {
		s.hist.learn(t, s.cfg.Queues)
		c.QueueAnnotations = s.hist.annotations(t, wall)
	}
	// The jobs running when the cycle starts, which grow below takes too:
	// nothing starts or stops while the scheduler runs.
	running := s.runningJobs()
	for _, i := range running {
		stamp(i)
	}
	for _, i := range s.pending {
		stamp(i)
	}
	cache := simsched.NewSnapshotCache(c)
	res := s.sched.Schedule(cache, s.cfg.Sched)
	cache.Close()
	s.run.Cycles++
	s.run.SchedulerTime += res.Took
	admitted := 0
	for _, i := range s.pending {
		pg := s.groups[i]
		if pg.Status.Phase == schedulingv1.PodGroupPending && res.Phases[pg.Namespace+"/"+pg.Name] == schedulingv1.PodGroupInqueue {
			// The job controller creates the pods now; the next cycle can
			// place them.
			pg.Status.Phase = schedulingv1.PodGroupInqueue
			s.waitFrom(i, t)
			s.res[i].Admitted = t
			admitted++
		}
	}

	// The cycle's actions ran in order: allocate placed pods on free GPUs,
	// then preempt and reclaim evicted. Running elastic jobs grow first:
	// Volcano's gang plugin counts a job's allocated pods among its ready
	// ones (JobInfo.ReadyTaskNum) when it offers victims above
	// minAvailable, so one cycle can evict running trainers of a job while
	// it places others; the job keeps running on them.
	grown := s.grow(running, res.Placed, t)
	changes := s.evict(t, res.Evicted)
	s.run.Evictions += changes
	var started, waiting []int
	for _, i := range s.pending {
		nodes, ok := s.placement(i, res.Placed)
		if !ok {
			waiting = append(waiting, i)
			continue
		}
		for k, n := range nodes {
			if n != "" {
				s.startPod(i, k, n, t)
			}
		}
		started = append(started, i)
	}
	s.pending = waiting
	// A job that grew and was then preempted below its minimum waits again.
	var still []int
	for _, i := range grown {
		if _, ok := s.running[i]; ok {
			still = append(still, i)
		}
	}
	grown = still
	if len(started) == 0 && len(grown) == 0 {
		return changes + admitted
	}
	for _, i := range started {
		s.running[i] = quality.Placement{}
	}
	resolved := s.resolve()
	for _, i := range started {
		s.start(i, t, resolved[s.w.Jobs[i].Name])
	}
	for _, i := range grown {
		s.res[i].Resizes++
		s.progress(i, t, resolved[s.w.Jobs[i].Name])
	}
	return changes + admitted + len(started) + len(grown)
}

// grow starts at t the pods a cycle placed for the elastic ones among the
// running jobs and returns those that grew.
func (s *sim) grow(running []int, placed map[string]string, t float64) []int {
	var grown []int
	for _, i := range running {
		if !s.w.Jobs[i].Elastic() {
			continue
		}
		grew := false
		for k, p := range s.pods[i] {
			if n, ok := placed[p.Namespace+"/"+p.Name]; ok && !s.on[i][k] {
				s.startPod(i, k, n, t)
				grew = true
			}
		}
		if grew {
			grown = append(grown, i)
		}
	}
	return grown
}

// startPod runs pod k of job i on node n from t.
func (s *sim) startPod(i, k int, n string, t float64) {
	p := s.pods[i][k]
	g := s.podGPUs(i, k)
	s.free[n] -= g
	s.used += g
	s.on[i][k] = true
	p.Spec.NodeName = n
	p.Status.Phase = v1.PodRunning
	s.started[i][k] = t
}

// resolve places every running job's running pods on their GPUs (the
// device plugin's pick, in job order) and records each job's placement.
func (s *sim) resolve() map[string][]quality.Pod {
	all := make([]quality.Placement, 0, len(s.running))
	for _, i := range s.runningJobs() {
		var nodes []string
		for k, p := range s.pods[i] {
			if s.on[i][k] {
				nodes = append(nodes, p.Spec.NodeName)
			}
		}
		pl := quality.Placement{Job: withTrainers(s.w.Jobs[i], s.trainersOn(i)), Nodes: nodes}
		s.running[i] = pl
		all = append(all, pl)
	}
	return s.w.Cluster.Resolve(all)
}

// evict applies a cycle's evictions: an evicted pod stops; a job left
// without a pserver or below its fewest trainers stops and waits again,
// to restart from its checkpoint (RestartCost more work); an elastic job
// still at or above them shrinks. It returns how many pods stopped.
func (s *sim) evict(t float64, keys []string) int {
	if len(keys) == 0 {
		return 0
	}
	hit := map[int]bool{}
	for _, key := range keys {
		i, k, ok := s.podIndex(key)
		if !ok || !s.on[i][k] {
			continue
		}
		s.stopPod(i, k, t)
		hit[i] = true
	}
	var shrunk []int
	for i := range hit {
		j := s.w.Jobs[i]
		psOff := false
		for k := 0; k < j.PServers; k++ {
			psOff = psOff || !s.on[i][k]
		}
		if psOff || s.trainersOn(i) < j.MinPods {
			s.advance(i, t)
			s.release(i, t)
			s.restart(i, t)
			s.rem[i] += s.w.Options.Flex.RestartCost
			s.gen[i]++
			s.res[i].Restarts++
			setRetryCount(s.pods[i], s.res[i].Restarts)
			s.groups[i].Status.Phase = schedulingv1.PodGroupInqueue
			s.pending = insertSorted(s.pending, i)
			continue
		}
		shrunk = append(shrunk, i)
	}
	if len(shrunk) > 0 {
		sort.Ints(shrunk)
		resolved := s.resolve()
		for _, i := range shrunk {
			s.res[i].Resizes++
			s.progress(i, t, resolved[s.w.Jobs[i].Name])
		}
	}
	return len(keys)
}

// restart: job i, stopped at t, gets all its pods anew (RestartJob kills
// pending pods too), so it waits from t.
func (s *sim) restart(i int, t float64) {
	s.waitFrom(i, t)
}

// waitFrom: job i's pods are created at t (admitted by enqueue, or
// restarted), and paddle measures its wait from their creation
// (waitingSince), so its timers run from t too; those from its arrival
// stay (the sla plugin counts from the PodGroup's creation).
func (s *sim) waitFrom(i int, t float64) {
	for k := range s.created[i] {
		s.created[i][k] = t
	}
	for _, d := range s.after {
		s.timerAt(t + d)
	}
}

// timerAt runs a cycle at x, should a job still wait then.
func (s *sim) timerAt(x float64) {
	rest := s.starveAt[s.nextTimer:]
	k := s.nextTimer + sort.SearchFloat64s(rest, x)
	s.starveAt = slices.Insert(s.starveAt, k, x)
}

// insertSorted adds x to the ascending xs (pending jobs stay in arrival
// order).
func insertSorted(xs []int, x int) []int {
	k := sort.SearchInts(xs, x)
	xs = append(xs, 0)
	copy(xs[k+1:], xs[k:])
	xs[k] = x
	return xs
}

// podIndex finds job and pod of namespace/name.
func (s *sim) podIndex(key string) (int, int, bool) {
	for _, i := range s.runningJobs() {
		for k, p := range s.pods[i] {
			if p.Namespace+"/"+p.Name == key {
				return i, k, true
			}
		}
	}
	return 0, 0, false
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
// by index; "" for a pod it did not place), when it placed the gang: every
// pserver and at least the job's fewest trainers (all of them but for
// elastic jobs).
func (s *sim) placement(i int, placed map[string]string) ([]string, bool) {
	j := s.w.Jobs[i]
	nodes := make([]string, len(s.pods[i]))
	trainers := 0
	for k, p := range s.pods[i] {
		n, ok := placed[p.Namespace+"/"+p.Name]
		if !ok {
			if k < j.PServers {
				return nil, false
			}
			continue
		}
		nodes[k] = n
		if k >= j.PServers {
			trainers++
		}
	}
	return nodes, trainers >= j.MinPods
}

// start runs job i from t on the pods it got (the first start sets its
// start time, which a restart keeps: JCT counts from arrival to end; its
// pods' start times are their own, see started).
func (s *sim) start(i int, t float64, pods []quality.Pod) {
	j := s.w.Jobs[i]
	r := &s.res[i]
	if r.Start < 0 {
		r.Start = t
	}
	s.last[i] = t
	s.progress(i, t, pods)
	if j.Checkpointable {
		for _, d := range s.stopAfter {
			s.timerAt(t + d)
		}
	}
	if !j.PS && j.Pods > 1 {
		r.Nodes, r.Racks, r.NodeCrossings, r.RackCrossings = rankCrossings(pods)
	}
	s.groups[i].Status.Phase = schedulingv1.PodGroupRunning
}

// remaining is job i's remaining work at t, in seconds of its recorded run,
// without bringing it up to date: a waiting job has made no progress since
// it last stopped.
func (s *sim) remaining(i int, t float64) float64 {
	if _, running := s.running[i]; running && s.factor[i] > 0 {
		return max(0, s.rem[i]-(t-s.last[i])/s.factor[i])
	}
	return s.rem[i]
}

// advance brings job i's remaining work up to t at its current speed.
func (s *sim) advance(i int, t float64) {
	if s.factor[i] > 0 {
		s.rem[i] = max(0, s.rem[i]-(t-s.last[i])/s.factor[i])
	}
	s.last[i] = t
}

// progress: job i runs from t on the pods it has now; its speed is its
// placement's slowdown (the cost model, against the best placement of as
// many trainers) over its elastic speed-up, and its end moves with it.
func (s *sim) progress(i int, t float64, pods []quality.Pod) {
	s.advance(i, t)
	j := s.w.Jobs[i]
	n := s.trainersOn(i)
	shape := withTrainers(j, n)
	m := s.models[j.Model]
	slowdown := s.w.Cluster.Step(m, shape, pods) / s.best1(j, n)
	s.factor[i] = slowdown / s.w.SpeedRatio(j, n)
	s.res[i].Slowdown = slowdown
	s.gen[i]++
	end := t + s.rem[i]*s.factor[i]
	s.res[i].End = end
	heap.Push(&s.done, completion{end: end, job: i, gen: s.gen[i]})
}

// best1 is job j's step time at its best placement with n trainers.
func (s *sim) best1(j Job, n int) float64 {
	if n == j.Pods {
		return s.best[j.Name]
	}
	key := fmt.Sprintf("%s/%d", j.Name, n)
	if b, ok := s.bestStep[key]; ok {
		return b
	}
	b := bestStepWith(s.w, s.models[j.Model], j, n)
	s.bestStep[key] = b
	return b
}

// bestStepWith is job j's step time at its best placement with n trainers,
// alone on an empty cluster of w's nodes.
func bestStepWith(w *Workload, m quality.Model, j Job, n int) float64 {
	shape := withTrainers(j, n)
	empty, p := w.Cluster.BestPlacement(shape)
	return empty.Step(m, shape, empty.Resolve([]quality.Placement{p})[j.Name])
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
