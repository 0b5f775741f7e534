// Package clusterbench measures scheduling end to end on the local cluster
// (etcd, kube-apiserver, KWOK nodes, our Volcano builds): how fast a wave of
// Paddle jobs gets bound, how long one 64-pod gang waits, and where the time
// goes, under Volcano's stock scheduler configuration and ours in one run.
package clusterbench

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	busv1alpha1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

// Size is one cluster size to measure.
type Size struct {
	Nodes int
	Pods  int // pods in the wave of jobs
}

// Options of a run.
type Options struct {
	Sizes []Size
	// Configs are the scheduler configurations, measured in turn.
	Configs []Config
	Logf    func(string, ...interface{})
	Seed    int64
}

// Config is a named scheduler configuration: the file's content.
type Config struct {
	Name string
	Conf []byte
}

// Measurement of one configuration on one cluster size.
type Measurement struct {
	Config string
	Size   Size
	Jobs   int
	// Wave: all jobs submitted at once.
	PodsBound        int
	BoundPerSecond   float64 // pods bound / (last bind - first bind)
	LastGangBound    time.Duration
	CreatedPerSecond float64 // pods created by the controller / creation span
	MedianBindLag    time.Duration
	P95BindLag       time.Duration
	// GangLag: per job, from its last pod created to its last pod bound
	// (median over jobs): the scheduler's share once a gang exists whole.
	GangLag           time.Duration
	SchedulerSessions int
	SessionMean       time.Duration
	// A 64-pod gang alone on the idle cluster: PodGroup creation to all
	// pods bound.
	Gang64 time.Duration
	// CPU seconds each component used during the wave.
	CPU map[string]float64
}

func (o *Options) logf(f string, a ...interface{}) {
	if o.Logf != nil {
		o.Logf(f, a...)
	}
}

// Run measures every size, each on a fresh cluster, every configuration
// on the same cluster one after the other. A size that fails is reported in
// failures and the next size is still measured.
func Run(ctx context.Context, o Options) (out []Measurement, failures []string) {
	for _, size := range o.Sizes {
		ms, err := runSize(ctx, o, size)
		out = append(out, ms...)
		if err != nil {
			o.logf("cluster of %d nodes failed: %v", size.Nodes, err)
			failures = append(failures, fmt.Sprintf("%d nodes / %d pods: %v", size.Nodes, size.Pods, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return out, failures
}

func runSize(ctx context.Context, o Options, size Size) ([]Measurement, error) {
	var out []Measurement
	{
		racks := max(1, size.Nodes/25)
		topo := &localcluster.Topology{Groups: []localcluster.NodeGroup{{
			Name: "gpu", Racks: racks, NodesPerRack: size.Nodes / racks, RacksPerSpine: 8,
			CPU: "64", Memory: "512Gi", Pods: 110, GPUs: 8, GPUFabric: "NVLink", GPUIslandSize: 4,
		}}}
		o.logf("cluster of %d nodes: starting", size.Nodes)
		c, err := localcluster.Start(ctx, localcluster.Options{Name: fmt.Sprintf("bench-%d", size.Nodes), Topology: topo,
			Verbosity: 1, Logf: o.logf, WithoutNodeLifecycle: true})
		if err != nil {
			return out, err
		}
		for _, cfg := range o.Configs {
			m, err := measure(ctx, c, o, size, cfg)
			if err != nil {
				c.Stop()
				return out, fmt.Errorf("%d nodes, %s: %w (logs: %s)", size.Nodes, cfg.Name, err, c.LogDir)
			}
			out = append(out, *m)
		}
		if err := c.Stop(); err != nil {
			return out, err
		}
		_ = c.RemoveLogs()
	}
	return out, nil
}

func useConf(c *localcluster.Cluster, b []byte) error {
	if err := c.StopComponent(localcluster.Scheduler); err != nil {
		return err
	}
	if err := c.SetSchedulerConf(b); err != nil {
		return err
	}
	return c.StartComponent(localcluster.Scheduler)
}

// job builds a Paddle job of the wave: PS (2-8 pservers, trainers of one
// GPU) or collective (trainers of one GPU).
func job(ns, name string, trainers, pservers int) *batchv1alpha1.Job {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	gpu := res.DeepCopy()
	gpu[gputopology.ResourceName] = resource.MustParse("1")
	task := func(name string, n int, r corev1.ResourceList) batchv1alpha1.TaskSpec {
		return batchv1alpha1.TaskSpec{Name: name, Replicas: int32(n), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "paddle", Image: "paddle", Resources: corev1.ResourceRequirements{Requests: r, Limits: r}}},
		}}}
	}
	j := &batchv1alpha1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1alpha1.JobSpec{
			SchedulerName: "volcano", MinAvailable: int32(trainers + pservers),
			Plugins:  map[string][]string{"paddle": {"--barrier=false"}},
			Policies: []batchv1alpha1.LifecyclePolicy{{Event: busv1alpha1.PodFailedEvent, Action: busv1alpha1.RestartJobAction}},
		},
	}
	if pservers > 0 {
		j.Spec.Tasks = append(j.Spec.Tasks, task("ps", pservers, res))
		j.Spec.Tasks = append(j.Spec.Tasks, task("worker", trainers, gpu))
	} else {
		j.Spec.Tasks = append(j.Spec.Tasks, task("trainer", trainers, gpu))
	}
	return j
}

// wave is a fixed-seed mix of gangs from 2 to 256 pods adding up to pods:
// 30% PS jobs, small gangs most common.
func wave(ns string, pods int, seed int64) []*batchv1alpha1.Job {
	rng := rand.New(rand.NewSource(seed))
	sizes := []int{2, 2, 4, 4, 4, 8, 8, 16, 32, 64, 128, 256}
	var out []*batchv1alpha1.Job
	total := 0
	for i := 0; total < pods; i++ {
		n := sizes[rng.Intn(len(sizes))]
		if total+n > pods {
			n = pods - total
			if n < 2 {
				break
			}
		}
		name := fmt.Sprintf("w%04d", i)
		if rng.Float64() < 0.3 && n >= 4 {
			ps := min(8, max(2, n/8))
			out = append(out, job(ns, name, n-ps, ps))
		} else {
			out = append(out, job(ns, name, n, 0))
		}
		total += n
	}
	return out
}

// binds records when each pod was first seen bound and when it was created.
type binds struct {
	mu      sync.Mutex
	bound   map[string]time.Time
	created map[string]time.Time
}

func watchBinds(ctx context.Context, c *localcluster.Cluster, ns string) (*binds, func()) {
	b := &binds{bound: map[string]time.Time{}, created: map[string]time.Time{}}
	f := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	record := func(obj interface{}) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.created[p.Name]; !ok {
			b.created[p.Name] = now
		}
		if p.Spec.NodeName != "" {
			if _, ok := b.bound[p.Name]; !ok {
				b.bound[p.Name] = now
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, n interface{}) { record(n) }})
	stop := make(chan struct{})
	f.Start(stop)
	f.WaitForCacheSync(stop)
	var once sync.Once
	return b, func() { once.Do(func() { close(stop) }) }
}

func (b *binds) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.bound)
}

// measure is one configuration on the local cluster: a 64-pod gang on the
// idle cluster, then a wave of size.Pods pods submitted at once.
func measure(ctx context.Context, c *localcluster.Cluster, o Options, size Size, cfg Config) (*Measurement, error) {
	if err := useConf(c, cfg.Conf); err != nil {
		return nil, err
	}
	m := &Measurement{Config: cfg.Name, Size: size, CPU: map[string]float64{}}
	gang, err := measureGang64(ctx, c, cfg)
	if err != nil {
		return nil, err
	}
	m.Gang64 = gang
	o.logf("  %s: 64-pod gang bound %s after its PodGroup was created", cfg.Name, m.Gang64.Round(time.Millisecond))
	if err := measureWave(ctx, c, o, size, cfg, m); err != nil {
		return nil, err
	}
	o.logf("  %s: %d pods bound, last gang %s after submission, %.0f pods/s bound, %.0f pods/s created, bind lag median %s, gang lag median %s",
		cfg.Name, m.PodsBound, m.LastGangBound.Round(time.Millisecond), m.BoundPerSecond, m.CreatedPerSecond, m.MedianBindLag.Round(time.Millisecond), m.GangLag.Round(time.Millisecond))
	return m, nil
}

// measureGang64 is how long one 64-pod gang on the idle cluster takes from
// its PodGroup's creation to its last pod bound.
func measureGang64(ctx context.Context, c *localcluster.Cluster, cfg Config) (time.Duration, error) {
	ns := fmt.Sprintf("gang64-%s", cfg.Name)
	if err := createNS(ctx, c, ns); err != nil {
		return 0, err
	}
	b, stop := watchBinds(ctx, c, ns)
	start := time.Now()
	if _, err := c.Volcano.BatchV1alpha1().Jobs(ns).Create(ctx, job(ns, "gang64", 64, 0), metav1.CreateOptions{}); err != nil {
		stop()
		return 0, err
	}
	var pgCreated time.Time
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		if pgCreated.IsZero() {
			pgs, err := c.Volcano.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{})
			if err == nil && len(pgs.Items) == 1 {
				pgCreated = pgs.Items[0].CreationTimestamp.Time
			}
		}
		return b.count() == 64, nil
	})
	stop()
	if err != nil {
		return 0, fmt.Errorf("64-pod gang not bound: %w", err)
	}
	if pgCreated.IsZero() {
		pgCreated = start
	}
	return lastBind(b).Sub(pgCreated), deleteNS(ctx, c, ns)
}

// measureWave submits the size's wave of jobs at once and waits until every
// pod is bound (failing if none is bound for 2 minutes); it fills in m the
// components' CPU, the scheduler's sessions and the bind statistics.
func measureWave(ctx context.Context, c *localcluster.Cluster, o Options, size Size, cfg Config, m *Measurement) error {
	ns := fmt.Sprintf("wave-%s", cfg.Name)
	if err := createNS(ctx, c, ns); err != nil {
		return err
	}
	jobs := wave(ns, size.Pods, o.Seed)
	m.Jobs = len(jobs)
	b, stop := watchBinds(ctx, c, ns)
	defer stop()
	cpu0 := cpuSeconds(c)
	sessions0, sum0 := sessionStats(ctx, c)
	start := time.Now()
	if err := submit(ctx, c, jobs); err != nil {
		return err
	}
	o.logf("  %s: submitted %d jobs (%d pods) in %s", cfg.Name, len(jobs), size.Pods, time.Since(start).Round(time.Millisecond))
	last, lastCount := time.Now(), 0
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Minute, true, func(ctx context.Context) (bool, error) {
		n := b.count()
		if n != lastCount {
			lastCount, last = n, time.Now()
		}
		if time.Since(last) > 2*time.Minute {
			return false, fmt.Errorf("no pod bound for 2 minutes at %d of %d", n, size.Pods)
		}
		return n >= size.Pods, nil
	})
	if err != nil {
		return err
	}
	cpu1 := cpuSeconds(c)
	sessions1, sum1 := sessionStats(ctx, c)
	for k, v := range cpu1 {
		m.CPU[k] = v - cpu0[k]
	}
	m.SchedulerSessions = sessions1 - sessions0
	if m.SchedulerSessions > 0 {
		m.SessionMean = time.Duration((sum1 - sum0) / float64(m.SchedulerSessions) * float64(time.Millisecond))
	}
	b.stats(start, m)
	stop()
	return deleteNS(ctx, c, ns)
}

// stats fills in m's bind figures from the pods the wave created and bound
// (submitted at start): pods bound and created per second, the median and
// p95 of each pod's creation-to-bind lag, and the median gang lag (a job's
// last pod created to its last pod bound).
func (b *binds) stats(start time.Time, m *Measurement) {
	first, lastB := firstBind(b), lastBind(b)
	m.PodsBound = b.count()
	m.LastGangBound = lastB.Sub(start)
	if span := lastB.Sub(first).Seconds(); span > 0 {
		m.BoundPerSecond = float64(m.PodsBound) / span
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var createdFirst, createdLast time.Time
	var lags []time.Duration
	lastCreated, lastBound := map[string]time.Time{}, map[string]time.Time{}
	for name, ct := range b.created {
		if createdFirst.IsZero() || ct.Before(createdFirst) {
			createdFirst = ct
		}
		if ct.After(createdLast) {
			createdLast = ct
		}
		if bt, ok := b.bound[name]; ok {
			lags = append(lags, bt.Sub(ct))
		}
		j := name[:strings.IndexByte(name+"-", '-')]
		if ct.After(lastCreated[j]) {
			lastCreated[j] = ct
		}
		if bt := b.bound[name]; bt.After(lastBound[j]) {
			lastBound[j] = bt
		}
	}
	if span := createdLast.Sub(createdFirst).Seconds(); span > 0 {
		m.CreatedPerSecond = float64(len(lags)) / span
	}
	var gangLags []time.Duration
	for j, ct := range lastCreated {
		gangLags = append(gangLags, lastBound[j].Sub(ct))
	}
	sort.Slice(gangLags, func(i, j int) bool { return gangLags[i] < gangLags[j] })
	if len(gangLags) > 0 {
		m.GangLag = gangLags[len(gangLags)/2]
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	if len(lags) > 0 {
		m.MedianBindLag, m.P95BindLag = lags[len(lags)/2], lags[len(lags)*95/100]
	}
}

func submit(ctx context.Context, c *localcluster.Cluster, jobs []*batchv1alpha1.Job) error {
	var g errgroup.Group
	g.SetLimit(8)
	for _, j := range jobs {
		g.Go(func() error {
			if _, err := c.Volcano.BatchV1alpha1().Jobs(j.Namespace).Create(ctx, j, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating %s: %w", j.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

func createNS(ctx context.Context, c *localcluster.Cluster, ns string) error {
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	return err
}

// deleteNS deletes the namespace and waits until its pods are gone, so the
// next measurement starts on an idle cluster.
func deleteNS(ctx context.Context, c *localcluster.Cluster, ns string) error {
	if err := c.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(pods.Items) == 0, nil
	})
}

func firstBind(b *binds) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	var t time.Time
	for _, v := range b.bound {
		if t.IsZero() || v.Before(t) {
			t = v
		}
	}
	return t
}

func lastBind(b *binds) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	var t time.Time
	for _, v := range b.bound {
		if v.After(t) {
			t = v
		}
	}
	return t
}

// cpuSeconds reads user+system CPU time of every component from /proc.
func cpuSeconds(c *localcluster.Cluster) map[string]float64 {
	out := map[string]float64{}
	for name, pid := range c.PIDs() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(fields) < 13 {
			continue
		}
		ut, _ := strconv.ParseFloat(fields[11], 64)
		st, _ := strconv.ParseFloat(fields[12], 64)
		out[name] = (ut + st) / 100 // clock ticks (USER_HZ = 100 on Linux)
	}
	return out
}

// sessionStats reads the scheduler's session count and total session time
// (ms) from its e2e scheduling latency histogram.
func sessionStats(ctx context.Context, c *localcluster.Cluster) (int, float64) {
	n, _ := c.SchedulerSessions(ctx)
	sum, _ := localcluster.ScrapeMetric(ctx, c.SchedulerMetricsURL(), "volcano_e2e_scheduling_latency_milliseconds_sum")
	return n, sum
}
