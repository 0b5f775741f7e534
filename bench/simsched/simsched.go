// Package simsched runs Volcano's real scheduler, in process, on a cluster
// described by Kubernetes objects: Volcano's scheduler cache (with fake
// clients, a binder that records nothing and an event recorder that drops
// events, so large runs never block), a session opened with the tiers of a
// scheduler configuration file, and Volcano's allocate action. The
// benchmarks use it to compare Volcano's stock tiers with ours on the same
// cluster and workload.
package simsched

import (
	"fmt"
	"os"
	"reflect"
	"sync"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	schedulingk8s "k8s.io/api/scheduling/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcscheduler "volcano.sh/volcano/pkg/scheduler"
	"volcano.sh/volcano/pkg/scheduler/actions/allocate"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/cache"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/metrics"
	"volcano.sh/volcano/pkg/scheduler/util"

	// Volcano's actions and plugins, and ours.
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"

	"github.com/volcano-paddle/volcano-paddle/harness/fakeclients"
	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

func init() {
	// Kubernetes' scheduler plugins inside Volcano's predicates record into
	// these; the real scheduler registers them at start-up.
	metrics.InitKubeSchedulerRelatedMetrics()
}

// Config is a scheduler configuration: the tiers of a volcano-scheduler.conf.
type Config struct {
	Name  string
	Tiers []conf.Tier
	Confs []conf.Configuration
	// Actions a cycle runs, in order: the configuration file's (ParseConfig);
	// none: allocate alone (what a placement benchmark of Inqueue gangs
	// needs).
	Actions []string
	// Evicts: the configuration file's actions include preempt or
	// reclaim, so its tiers already say which plugins choose victims.
	Evicts bool
}

// evicting are the actions that evict running pods (Volcano v1.15's
// gang-aware ones included).
var evicting = map[string]bool{"preempt": true, "reclaim": true, "gangpreempt": true, "gangreclaim": true}

// LoadConfig reads a scheduler configuration file.
func LoadConfig(name, path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(name, string(b))
}

// LoadCompared reads the two configurations every comparison of stock
// Volcano with paddle runs (localcluster.SchedulerConfs), named "stock" and
// "paddle".
func LoadCompared() (stock, paddle *Config, err error) {
	stockPath, paddlePath, err := localcluster.SchedulerConfs()
	if err != nil {
		return nil, nil, err
	}
	if stock, err = LoadConfig("stock", stockPath); err != nil {
		return nil, nil, err
	}
	if paddle, err = LoadConfig("paddle", paddlePath); err != nil {
		return nil, nil, err
	}
	return stock, paddle, nil
}

// ParseConfig parses scheduler configuration text with Volcano's own loader.
func ParseConfig(name, text string) (*Config, error) {
	actions, tiers, confs, _, err := vcscheduler.UnmarshalSchedulerConf(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := &Config{Name: name, Tiers: tiers, Confs: confs}
	for _, a := range actions {
		c.Actions = append(c.Actions, a.Name())
		c.Evicts = c.Evicts || evicting[a.Name()]
	}
	return c, nil
}

// AllocateOnly is the configuration with the allocate action alone: what
// benchmarks of one placement or of one allocate cycle run, whatever the
// file's actions.
func (c *Config) AllocateOnly() *Config {
	out := *c
	out.Actions, out.Evicts = []string{"allocate"}, false
	return &out
}

// WithoutPlugin returns the configuration minus one plugin.
func (c *Config) WithoutPlugin(name string) *Config {
	out := *c
	out.Name, out.Tiers = c.Name+"-no-"+name, nil
	for _, t := range c.Tiers {
		var nt conf.Tier
		for _, p := range t.Plugins {
			if p.Name != name {
				nt.Plugins = append(nt.Plugins, p)
			}
		}
		out.Tiers = append(out.Tiers, nt)
	}
	return &out
}

// Cluster is the state a session starts from.
type Cluster struct {
	Nodes     []*v1.Node
	Pods      []*v1.Pod
	PodGroups []*schedulingv1.PodGroup
	// RackHyperNodes describes the nodes' racks as Volcano HyperNodes
	// (tier 1 a rack, tier 2 all racks), for network-topology-aware.
	RackHyperNodes bool
	// PriorityClasses the cluster defines. Volcano's cache reads a job's
	// priority from the class its PodGroup names (SchedulerCache.Snapshot,
	// PodGroup.Spec.PriorityClassName); the priority plugin orders by it.
	PriorityClasses []*schedulingk8s.PriorityClass
	// Queues besides "default", which every cluster has.
	Queues []*schedulingv1.Queue
	// QueueAnnotations: queue name -> annotations to set on it ("default"
	// too), such as the run-time history (paddleapi.RunTimeHistoryAnnotation).
	QueueAnnotations map[string]map[string]string
}

// Cache is a scheduler cache loaded with a cluster, ready for one session.
type Cache struct {
	sc   *cache.SchedulerCache
	stop chan struct{}
}

type nopBinder struct{}

// nopEvictor: a cycle's evictions are read from the session (Releasing
// tasks), so the evictor itself records nothing; Volcano's FakeEvictor
// would block on its channel.
type nopEvictor struct{}

func (nopEvictor) Evict(*v1.Pod, string) error { return nil }

func (nopBinder) Bind(kubernetes.Interface, []*api.TaskInfo) map[api.TaskID]string { return nil }

// NewCache builds a scheduler cache holding the cluster. Building it is not
// part of what a scheduling cycle costs; benchmarks time Schedule only.
func NewCache(c *Cluster) *Cache { return newCache(c, true) }

// NewSnapshotCache is NewCache without the cache's informers and workers
// (SchedulerCache.Run): the cluster is handed to the cache directly, the
// informers of its fake clients would only list nothing, and waiting for
// them to sync (a 100 ms poll in client-go's WaitForCacheSync) is most of
// what a cache costs to build. For replays that build one per cycle.
func NewSnapshotCache(c *Cluster) *Cache { return newCache(c, false) }

// listAndWatch switches client-go's WatchListClient off once per process.
var listAndWatch sync.Once

func newCache(c *Cluster, run bool) *Cache {
	// The mock cache's informers run over fake clientsets, which cannot
	// stream a watch list: under client-go 0.35 (the Volcano v1.15.1
	// build) they would wait for ever (harness/fakeclients).
	listAndWatch.Do(fakeclients.ListAndWatch)
	sc := cache.NewCustomMockSchedulerCache("volcano", nopBinder{}, nopEvictor{},
		&util.FakeStatusUpdater{}, nil, &record.FakeRecorder{})
	stop := make(chan struct{})
	if run {
		sc.Run(stop)
	}
	// The cache keeps and updates what it is given (binding sets a pod's
	// node): hand it copies so a Cluster can seed many caches.
	for _, n := range c.Nodes {
		sc.AddOrUpdateNode(n.DeepCopy())
	}
	for _, p := range c.Pods {
		sc.AddPod(p.DeepCopy())
	}
	for _, pg := range c.PodGroups {
		sc.AddPodGroupV1beta1(pg.DeepCopy())
	}
	for _, pc := range c.PriorityClasses {
		sc.AddPriorityClass(pc.DeepCopy())
	}
	queues := []*schedulingv1.Queue{util.BuildQueue("default", 1, nil)}
	for _, q := range c.Queues {
		queues = append(queues, q.DeepCopy())
	}
	for _, q := range queues {
		for k, v := range c.QueueAnnotations[q.Name] {
			if q.Annotations == nil {
				q.Annotations = map[string]string{}
			}
			q.Annotations[k] = v
		}
		sc.AddQueueV1beta1(q)
	}
	if c.RackHyperNodes {
		sc.HyperNodesInfo = hyperNodesFromRacks(c.Nodes)
	}
	return &Cache{sc: sc, stop: stop}
}

// Close stops the cache's informers and work queues.
func (c *Cache) Close() {
	close(c.stop)
	shutDownQueues(c.sc)
}

// shutDownQueues shuts down the work queues Volcano's cache is built with
// (cache.newMockSchedulerCache: errTasks, nodeQueue, DeletedJobs,
// hyperNodesQueue). Each is a client-go rate-limiting queue whose
// goroutines run until ShutDown; Volcano's cache lives as long as its
// scheduler and never shuts them down, nor offers a method to. A replay
// builds one cache per scheduling cycle, so without this every cycle left
// 4 goroutines and their queues behind (the full bench grew to 7 GB). The
// fields are unexported, so they are reached by reflection: every
// interface field holding something with ShutDown().
func shutDownQueues(sc *cache.SchedulerCache) {
	v := reflect.ValueOf(sc).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() != reflect.Interface || f.IsNil() {
			continue
		}
		field := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface()
		if q, ok := field.(interface{ ShutDown() }); ok {
			q.ShutDown()
		}
	}
}

// Result of one scheduling cycle.
type Result struct {
	// Placed maps namespace/pod to the node the allocate action chose.
	Placed map[string]string
	// PlacedGPUs is the nvidia.com/gpu those pods asked for.
	PlacedGPUs int
	// Evicted: namespace/pod of the running pods the cycle evicted
	// (preempt, reclaim).
	Evicted []string
	// Phases: namespace/name of every PodGroup to its phase at the end of
	// the cycle (the enqueue action admits Pending ones: Inqueue).
	Phases map[string]schedulingv1.PodGroupPhase
	// Took is open session + allocate + close session.
	Took time.Duration
}

// Scheduler is one scheduler process across its cycles: what its plugins
// keep from one session to the next, the paddle plugin's store (the
// reservations of starving gangs). A replay is one process's life, so each
// replay run gets its own, and no run sees another's reservations.
type Scheduler struct {
	paddle framework.PluginBuilder
}

// NewScheduler is a scheduler that has run no cycle yet, its clock reading
// clock.
func NewScheduler(clock func() time.Time) *Scheduler {
	return &Scheduler{paddle: paddle.Builder(paddle.NewStore(clock))}
}

// Schedule runs one scheduling cycle of s on the cache. Volcano's
// framework.OpenSession finds plugin builders by name in its process-wide
// registry, so this registers s's paddle builder before it opens the
// session: cycles of two schedulers must not run at the same time.
func (s *Scheduler) Schedule(c *Cache, cfg *Config) *Result {
	framework.RegisterPluginBuilder(paddle.PluginName, s.paddle)
	return c.schedule(cfg)
}

// Schedule runs one scheduling cycle of a scheduler that just started, on
// the real clock: for a single cycle, nothing carries over from before.
func (c *Cache) Schedule(cfg *Config) *Result {
	return NewScheduler(time.Now).Schedule(c, cfg)
}

// schedule runs one scheduling cycle (open session, the configuration's
// actions, close) with its tiers and reports where pods went and which
// running pods it evicted.
func (c *Cache) schedule(cfg *Config) *Result {
	names := cfg.Actions
	if len(names) == 0 {
		names = []string{"allocate"}
	}
	conf.EnabledActionMap = map[string]bool{}
	for _, n := range names {
		conf.EnabledActionMap[n] = true
	}
	start := time.Now()
	ssn := framework.OpenSession(c.sc, cfg.Tiers, cfg.Confs)
	for _, n := range names {
		act, ok := framework.GetAction(n)
		if !ok {
			// ParseConfig and WithActions check names; a test may not.
			panic(fmt.Sprintf("simsched: no action %q", n))
		}
		if n == "allocate" {
			// A fresh allocate per cycle, as before: its Initialize reads
			// the session's configuration.
			act = allocate.New()
		}
		act.Initialize()
		act.Execute(ssn)
		act.UnInitialize()
	}
	r := &Result{Placed: map[string]string{}, Phases: map[string]schedulingv1.PodGroupPhase{}}
	for _, job := range ssn.Jobs {
		if job.PodGroup != nil {
			r.Phases[job.Namespace+"/"+job.Name] = schedulingv1.PodGroupPhase(job.PodGroup.Status.Phase)
		}
		for _, t := range job.Tasks {
			key := t.Namespace + "/" + t.Name
			switch {
			case t.NodeName != "" && (t.Status == api.Allocated || t.Status == api.Binding):
				r.Placed[key] = t.NodeName
				r.PlacedGPUs += int(t.Resreq.Get(gputopology.ResourceName) / 1000)
			case t.Status == api.Releasing:
				r.Evicted = append(r.Evicted, key)
			}
		}
	}
	framework.CloseSession(ssn)
	r.Took = time.Since(start)
	return r
}
