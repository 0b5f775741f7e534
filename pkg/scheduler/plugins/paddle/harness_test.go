package paddle

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcscheduler "volcano.sh/volcano/pkg/scheduler"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	vcplugins "volcano.sh/volcano/pkg/scheduler/plugins"
	"volcano.sh/volcano/pkg/scheduler/plugins/binpack"
	"volcano.sh/volcano/pkg/scheduler/plugins/conformance"
	"volcano.sh/volcano/pkg/scheduler/plugins/drf"
	"volcano.sh/volcano/pkg/scheduler/plugins/gang"
	networktopologyaware "volcano.sh/volcano/pkg/scheduler/plugins/network-topology-aware"
	"volcano.sh/volcano/pkg/scheduler/plugins/nodeorder"
	"volcano.sh/volcano/pkg/scheduler/plugins/overcommit"
	"volcano.sh/volcano/pkg/scheduler/plugins/predicates"
	"volcano.sh/volcano/pkg/scheduler/plugins/priority"
	"volcano.sh/volcano/pkg/scheduler/plugins/proportion"
	"volcano.sh/volcano/pkg/scheduler/plugins/sla"

	_ "volcano.sh/volcano/pkg/scheduler/actions"
	"volcano.sh/volcano/pkg/scheduler/actions/allocate"

	tb "github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// The two configurations every comparison uses: Volcano's Helm chart
// default tiers, and ours from deploy/ (the same tiers plus paddle).
func stockTiers(t testing.TB) ([]conf.Tier, []conf.Configuration) {
	return loadTiers(t, filepath.Join(volcanoModuleDir(t), "installer", "helm", "chart", "volcano", "config", "volcano-scheduler.conf"))
}

func paddleTiers(t testing.TB) ([]conf.Tier, []conf.Configuration) {
	return loadTiers(t, filepath.Join(moduleRoot(t), "deploy", "paddle", "volcano-scheduler.conf"))
}

// moduleRoot is the folder of this module's go.mod, above the package
// folder tests run in.
func moduleRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

var volcanoDir struct {
	once sync.Once
	dir  string
	err  error
}

// volcanoModuleDir is where Volcano's module (with its Helm chart) is in
// the module cache.
func volcanoModuleDir(t testing.TB) string {
	volcanoDir.once.Do(func() {
		cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "volcano.sh/volcano")
		cmd.Dir = moduleRoot(t)
		out, err := cmd.Output()
		volcanoDir.dir, volcanoDir.err = strings.TrimSpace(string(out)), err
	})
	if volcanoDir.err != nil || volcanoDir.dir == "" {
		t.Fatalf("locating volcano.sh/volcano in the module cache: %v", volcanoDir.err)
	}
	return volcanoDir.dir
}

func loadTiers(t testing.TB, path string) ([]conf.Tier, []conf.Configuration) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, tiers, cfgs, _, err := vcscheduler.UnmarshalSchedulerConf(string(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tiers, cfgs
}

// ciTiers are Volcano's own CI configuration (its e2e suites run with
// it): the default tiers plus sla and network-topology-aware, with the
// preempt and reclaim actions.
func ciTiers(t testing.TB) ([]conf.Tier, []conf.Configuration) {
	return loadTiers(t, filepath.Join(volcanoModuleDir(t), "installer", "helm", "chart", "volcano", "config", "volcano-scheduler-ci.conf"))
}

// withoutPaddle is the tiers less the paddle plugin: the same
// configuration as an operator would run it without paddle.
func withoutPaddle(tiers []conf.Tier) []conf.Tier {
	out := make([]conf.Tier, len(tiers))
	for i, tier := range tiers {
		for _, p := range tier.Plugins {
			if p.Name != PluginName {
				out[i].Plugins = append(out[i].Plugins, p)
			}
		}
	}
	return out
}

// paddleLastInFirstTier is the tiers with paddle (default arguments)
// added at the end of the first tier, where an operator would add it
// to a configuration of their own.
func paddleLastInFirstTier(tiers []conf.Tier) []conf.Tier {
	out := make([]conf.Tier, len(tiers))
	copy(out, tiers)
	opt := conf.PluginOption{Name: PluginName}
	vcplugins.ApplyPluginConfDefaults(&opt)
	out[0].Plugins = append(append([]conf.PluginOption{}, tiers[0].Plugins...), opt)
	return out
}

// scheduler is a scheduler process as a test runs it: the plugin's store,
// over a clock the test may set, and the plugin of the last session opened,
// to look into. A test that runs one session needs none (runSession makes a
// fresh one); one that runs several, as one scheduler, or looks into the
// store, makes its own.
type scheduler struct {
	store *Store
	// at is what the clock reads; zero: the real time.
	at     time.Time
	plugin *paddlePlugin
}

func newScheduler() *scheduler {
	s := &scheduler{}
	s.store = NewStore(func() time.Time {
		if s.at.IsZero() {
			return time.Now()
		}
		return s.at
	})
	return s
}

// session is the state of the last session opened (nil once it closed).
func (s *scheduler) session() *session { return s.plugin.session }

// plugins are the builders of every plugin either configuration names,
// paddle's over s's store.
func plugins(s *scheduler) map[string]framework.PluginBuilder {
	return map[string]framework.PluginBuilder{
		priority.PluginName: priority.New, gang.PluginName: gang.New, conformance.PluginName: conformance.New,
		overcommit.PluginName: overcommit.New, drf.PluginName: drf.New, predicates.PluginName: predicates.New,
		proportion.PluginName: proportion.New, nodeorder.PluginName: nodeorder.New, binpack.PluginName: binpack.New,
		sla.PluginName: sla.New, networktopologyaware.PluginName: networktopologyaware.New,
		PluginName: func(a framework.Arguments) framework.Plugin {
			s.plugin = newPlugin(a, s.store)
			return s.plugin
		},
	}
}

type cluster struct {
	nodes  []*v1.Node
	pods   []*v1.Pod
	groups []*schedulingv1.PodGroup
	// Volcano HyperNodes: tier -> names, name -> member node names.
	hyperNodesByTier map[int]sets.Set[string]
	hyperNodes       map[string]sets.Set[string]
	// queues besides "default".
	queues []string
	// queueAnnotations: queue -> annotations ("default" too).
	queueAnnotations map[string]map[string]string
	// PriorityClasses: name -> value.
	priorities map[string]int32
}

// result of one allocate run: pod name -> node, for pods placed this session.
type result struct {
	placed map[string]string
	// evicted: pods the actions evicted (preempt, reclaim), by name.
	evicted []string
	ssn     *framework.Session
	jobs    map[api.JobID]*api.JobInfo
	// close ends the session (plugins' OnSessionClose run); idempotent.
	close func()
}

// allocateOnce opens a session with the given tiers over the cluster, runs
// Volcano's real allocate action and reports where the pending pods went;
// s is the scheduler, nil for a fresh one.
func allocateOnce(t *testing.T, tiers []conf.Tier, cfgs []conf.Configuration, c cluster, s *scheduler) result {
	t.Helper()
	return runSession(t, tiers, cfgs, c, s, allocate.New())
}

// openSession opens a session and runs no action, to look at orderings as
// the allocate action would see them.
func openSession(t *testing.T, tiers []conf.Tier, cfgs []conf.Configuration, c cluster) result {
	t.Helper()
	return runSession(t, tiers, cfgs, c, nil)
}

// runSession opens a session over the cluster and runs Volcano's real
// actions on it, in order, as scheduler s (nil: a fresh one). Pods an
// action evicted are Releasing in the session (framework.Statement.Commit);
// result.evicted lists them.
func runSession(t *testing.T, tiers []conf.Tier, cfgs []conf.Configuration, c cluster, s *scheduler, actions ...framework.Action) result {
	t.Helper()
	if s == nil {
		s = newScheduler()
	}
	w := tb.MakeSession(t.Name()).Nodes(c.nodes...).Pods(c.pods...).PodGroups(c.groups...).
		HyperNodes(c.hyperNodesByTier, c.hyperNodes)
	for _, q := range c.queues {
		w.Queue(q, 1)
	}
	for q, anns := range c.queueAnnotations {
		for k, v := range anns {
			w.QueueAnnotation(q, k, v)
		}
	}
	for name, v := range c.priorities {
		w.PriorityClass(name, v)
	}
	for name, b := range plugins(s) {
		w.Plugin(name, b)
	}
	ssn := w.Open(tiers, cfgs)
	if len(actions) > 0 {
		w.Run(actions...)
	}
	r := result{placed: map[string]string{}, ssn: ssn, jobs: map[api.JobID]*api.JobInfo{}}
	for id, job := range ssn.Jobs {
		r.jobs[id] = job
		for _, task := range job.Tasks {
			if task.NodeName != "" && (task.Status == api.Allocated || task.Status == api.Binding || task.Status == api.Pipelined) {
				r.placed[task.Name] = task.NodeName
			}
			if task.Status == api.Releasing {
				r.evicted = append(r.evicted, task.Name)
			}
		}
	}
	sort.Strings(r.evicted)
	var once sync.Once
	r.close = func() { once.Do(w.Close) }
	t.Cleanup(r.close)
	return r
}

// gpuNode is an 8-GPU node with two NVLink islands of 4, in a rack.
// oneRack is n GPU nodes, n0 and on, in rack0.
func oneRack(n int) []*v1.Node {
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		nodes[i] = gpuNode(fmt.Sprintf("n%d", i), "rack0")
	}
	return nodes
}

// twoRacks is four GPU nodes, n0 and n1 in rack0, n2 and n3 in rack1.
func twoRacks() []*v1.Node {
	var nodes []*v1.Node
	for i, rack := range []string{"rack0", "rack0", "rack1", "rack1"} {
		nodes = append(nodes, gpuNode([]string{"n0", "n1", "n2", "n3"}[i], rack))
	}
	return nodes
}

func gpuNode(name, rack string) *v1.Node {
	return node(name, rack, "spine0", "64", "512Gi", 8, gputopology.Uniform(gputopology.FabricNVLink, 8, 4))
}

func node(name, rack, spine, cpu, mem string, gpus int, topo *gputopology.Topology) *v1.Node {
	n := tb.MakeNode().Name(name).CPU(cpu).Memory(mem).GPUs(gpus).Rack(rack).Spine(spine)
	if topo != nil {
		n.Topology(topo)
	}
	return n.Obj()
}

// paddlePod is a pod as the paddle job plugin and Volcano's controller make
// it: task-spec label/annotation, index, role, mode.
func paddlePod(job, task string, index int, role paddleapi.Role, mode paddleapi.Mode, nodeName string, cpu string, gpus int) *v1.Pod {
	p := tb.MakePod().Namespace("ns").Name(fmt.Sprintf("%s-%s-%d", job, task, index)).PodGroup(job).
		Task(task, index).CPU(cpu).Memory("1Gi").GPUs(gpus)
	if nodeName != "" {
		p.Node(nodeName)
	}
	if role != "" {
		p.Paddle(role, index, mode)
	}
	return p.Obj()
}

// filler is a running pod of some other workload that uses resources.
func filler(name, nodeName, cpu string, gpus int) *v1.Pod {
	return tb.MakePod().Namespace("ns").Name(name).PodGroup("fillers").Node(nodeName).CPU(cpu).Memory("1Gi").GPUs(gpus).Obj()
}

func group(name string, min int32, created time.Time) *schedulingv1.PodGroup {
	return tb.MakePodGroup().Name(name).Namespace("ns").MinMember(min).Created(created).Obj()
}

func rackOf(c cluster, nodeName string) string {
	for _, n := range c.nodes {
		if n.Name == nodeName {
			return n.Labels[paddleapi.DefaultRackLabel]
		}
	}
	return ""
}
