// Package jobsize measures what one Paddle job costs the API server as it
// grows: a parameter-server job of 100, 2,000 and 10,000 trainers on the
// local cluster (etcd, kube-apiserver with our admission webhook, KWOK
// nodes, our Volcano builds). Per size it reports the bytes of a pod object,
// the bytes the whole job adds (Job, PodGroup, Service, ConfigMap, pods),
// the admission latency of the Job (the create call, through the webhook
// that validates it), the job plugin's validation time in process, the time
// until every pod exists and until the job runs. It prints; it never fails
// on a number.
package jobsize

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// PodObjectLimit is the size a pod object must stay under (issue 11).
const PodObjectLimit = 32 << 10

// Result is one job size.
type Result struct {
	Trainers, PServers int
	// Admission is the Job create call; Validate the plugin's ValidateJob
	// on the same job, in process.
	Admission, Validate time.Duration
	// AllPodsExist and Running are measured from the create call.
	AllPodsExist, Running time.Duration
	// PodBytesMax and PodBytesMean are pod objects as JSON.
	PodBytesMax, PodBytesMean int
	// TotalBytes sums the JSON of every object the job adds.
	TotalBytes int
	// ConfigMapBytes is the job's ConfigMap alone.
	ConfigMapBytes int
	// Warnings are what the API server returned with the create call, as
	// kubectl apply prints them (after the mutating webhook's defaults).
	Warnings []string
	Err      string
}

// Options of a run.
type Options struct {
	Trainers []int
	Logf     func(string, ...interface{})
	// Timeout per size for the job to run.
	Timeout time.Duration
}

// Run measures every size on one fresh cluster, smallest first, each job in
// its own namespace.
func Run(ctx context.Context, o Options) ([]Result, error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...interface{}) {}
	}
	total := 0
	for _, n := range o.Trainers {
		total += n + pservers(n)
	}
	// Pods need 10m CPU and 16Mi each (the barrier asks as much): 16 nodes
	// of 1,000 pods hold every job of the run at once.
	nodes := max(4, (total*2+999)/1000)
	topo := &localcluster.Topology{Groups: []localcluster.NodeGroup{{
		Name: "cpu", Racks: 1, NodesPerRack: nodes, CPU: "256", Memory: "4Ti", Pods: 1000, NoGPUTopology: true,
	}}}
	logf("job size: starting a cluster of %d nodes", nodes)
	c, err := localcluster.Start(ctx, localcluster.Options{Name: "bench-jobsize", Topology: topo, Verbosity: 1, Logf: logf, WithoutNodeLifecycle: true})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := c.Stop(); err == nil {
			_ = c.RemoveLogs()
		}
	}()
	var out []Result
	for _, n := range o.Trainers {
		r := measure(ctx, c, n, o.Timeout, logf)
		out = append(out, r)
		logf("job size: %d trainers: pod %s (max), job adds %s, admitted in %s (validation %s), all pods after %s, running after %s %s",
			n, kb(r.PodBytesMax), kb(r.TotalBytes), r.Admission.Round(time.Millisecond), r.Validate.Round(10*time.Microsecond),
			r.AllPodsExist.Round(time.Second), r.Running.Round(time.Second), r.Err)
		if ctx.Err() != nil {
			break
		}
	}
	return out, nil
}

func pservers(trainers int) int { return min(20, max(2, trainers/500)) }

// Job is the measured CTR-like PS job: pservers and CPU trainers, a gang
// of all of them, the plugin's defaults (the barrier included).
func Job(ns string, trainers int) *batchv1alpha1.Job {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	task := func(name string, n int) batchv1alpha1.TaskSpec {
		return batchv1alpha1.TaskSpec{Name: name, Replicas: int32(n), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "paddle", Image: "volcanosh/edlctr:v1",
				Command:   []string{"python", "train.py", "--is_local", "0", "--cloud_train", "1"},
				Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}},
		}}}
	}
	ps := pservers(trainers)
	return &batchv1alpha1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ctr"},
		Spec: batchv1alpha1.JobSpec{
			SchedulerName: "volcano", MinAvailable: int32(trainers + ps),
			Plugins: map[string][]string{"paddle": {}},
			Tasks:   []batchv1alpha1.TaskSpec{task("pserver", ps), task("trainer", trainers)},
		},
	}
}

func measure(ctx context.Context, c *localcluster.Cluster, trainers int, timeout time.Duration, logf func(string, ...interface{})) Result {
	r := Result{Trainers: trainers, PServers: pservers(trainers)}
	fail := func(err error) Result { r.Err = err.Error(); return r }
	ns := fmt.Sprintf("size-%d", trainers)
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fail(err)
	}
	job := Job(ns, trainers)

	// The best of three runs, so that a busy machine shows less.
	s, _ := paddlejob.Read(job)
	for i := 0; i < 3; i++ {
		start := time.Now()
		_, errs := paddlejob.ValidateJob(job, s.Args)
		if d := time.Since(start); i == 0 || d < r.Validate {
			r.Validate = d
		}
		if len(errs) > 0 {
			return fail(errs.ToAggregate())
		}
	}
	vc, warned, err := c.VolcanoRecordingWarnings()
	if err != nil {
		return fail(err)
	}

	seen := watchPods(ctx, c, ns)
	defer seen.stop()
	start := time.Now()
	created, err := vc.BatchV1alpha1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	r.Admission = time.Since(start)
	r.Warnings = warned.List()
	if err != nil {
		return fail(err)
	}
	want := trainers + r.PServers
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if r.AllPodsExist == 0 && seen.count() >= want {
			r.AllPodsExist = time.Since(start)
		}
		j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return r.AllPodsExist > 0 && j.Status.State.Phase == batchv1alpha1.Running, nil
	})
	if err != nil {
		// The sizes below are still measured: they do not depend on the
		// scheduler having bound the whole gang.
		logf("job size: %d trainers: %d of %d pods exist, job not running: %v", trainers, seen.count(), want, err)
		r.Err = fmt.Sprintf("not running after %s", timeout)
	} else {
		r.Running = time.Since(start)
	}

	// Sizes, read back from the API server.
	total := size(created)
	pods, err := listPods(ctx, c, ns)
	if err != nil {
		return fail(err)
	}
	for i := range pods {
		n := size(&pods[i])
		total += n
		r.PodBytesMean += n
		r.PodBytesMax = max(r.PodBytesMax, n)
	}
	if len(pods) > 0 {
		r.PodBytesMean /= len(pods)
	}
	if svc, err := c.Kube.CoreV1().Services(ns).Get(ctx, job.Name, metav1.GetOptions{}); err == nil {
		total += size(svc)
	}
	if cms, err := c.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1alpha1.JobNameKey + "=" + job.Name}); err == nil {
		for i := range cms.Items {
			r.ConfigMapBytes += size(&cms.Items[i])
		}
		total += r.ConfigMapBytes
	}
	if pgs, err := c.Volcano.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for i := range pgs.Items {
			total += size(&pgs.Items[i])
		}
	}
	if j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{}); err == nil {
		total += size(j) - size(created) // the job as it is now
	}
	r.TotalBytes = total
	return r
}

func size(obj interface{}) int {
	b, err := json.Marshal(obj)
	if err != nil {
		return 0
	}
	return len(b)
}

func listPods(ctx context.Context, c *localcluster.Cluster, ns string) ([]corev1.Pod, error) {
	var out []corev1.Pod
	opts := metav1.ListOptions{Limit: 1000}
	for {
		l, err := c.Kube.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if l.Continue == "" {
			return out, nil
		}
		opts.Continue = l.Continue
	}
}

// podWatch counts the pods of a namespace as they are created.
type podWatch struct {
	mu    sync.Mutex
	names map[string]bool
	stop  func()
}

func watchPods(ctx context.Context, c *localcluster.Cluster, ns string) *podWatch {
	w := &podWatch{names: map[string]bool{}}
	f := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) {
		if p, ok := obj.(*corev1.Pod); ok {
			w.mu.Lock()
			w.names[p.Name] = true
			w.mu.Unlock()
		}
	}})
	stop := make(chan struct{})
	f.Start(stop)
	f.WaitForCacheSync(stop)
	var once sync.Once
	w.stop = func() { once.Do(func() { close(stop) }) }
	return w
}

func (w *podWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.names)
}

func kb(n int) string {
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%.0f MB", float64(n)/(1<<20))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
}

// Markdown is the report section.
func Markdown(rs []Result, command string) string {
	var b strings.Builder
	w := func(f string, a ...interface{}) { fmt.Fprintf(&b, f, a...) }
	most := 0
	for _, r := range rs {
		most = max(most, r.Trainers)
	}
	w("%s\n## Job size: one PS job of up to %d trainers\n\n", beginMarker, most)
	w("What one Paddle job costs the API server as it grows (issue 11): a CTR-like parameter-server job\n")
	w("(`pserver` and `trainer` tasks, the plugin's defaults, barrier on) on the local cluster, each size\n")
	w("in its own namespace. The peer lists every pod shares live once in the job's ConfigMap\n")
	w("(`<job>-paddle-v<n>`), which the pods refer to, so a pod object does not grow with the job.\n")
	w("*Admission* is the Job create call, through the admission webhook that runs the plugin's\n")
	w("validation; *validation* is that validation alone, in process (best of three). Times to *all pods* and\n")
	w("*running* count from the create call (the controller creates the pods once the scheduler has\n")
	w("admitted the gang; KWOK plays the kubelets). Sizes are objects as JSON. `make bench` and\n")
	w("`make bench-full` measure 100 and 2,000 trainers; `go run ./bench/cmd/bench -mode scale` adds 10,000.\n\n")
	w("Command: `%s`\n\n", command)
	w("| trainers | pservers | pod object (max) | pod object (mean) | ConfigMap | job adds in all | admission | validation | all pods exist | running |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		running := r.Running.Round(100 * time.Millisecond).String()
		if r.Err != "" {
			running = strings.ReplaceAll(r.Err, "|", "/")
		}
		w("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Trainers, r.PServers, kb(r.PodBytesMax), kb(r.PodBytesMean),
			kb(r.ConfigMapBytes), kb(r.TotalBytes), r.Admission.Round(time.Millisecond), r.Validate.Round(10*time.Microsecond),
			r.AllPodsExist.Round(100*time.Millisecond), running)
	}
	w("\nEvery pod object stays under %d KB: ", PodObjectLimit>>10)
	ok := true
	for _, r := range rs {
		if r.PodBytesMax >= PodObjectLimit || r.PodBytesMax == 0 {
			ok = false
		}
	}
	if ok {
		w("yes, at every size.\n")
	} else {
		w("**no** (see the table).\n")
	}
	for _, r := range rs {
		for _, warn := range r.Warnings {
			w("\nAt %d trainers the create call (kubectl apply) warns: %s\n", r.Trainers, warn)
		}
	}
	w("\nBefore the lists moved into the ConfigMap (commit 47712fd), every pod carried every list: the\n")
	w("issue measured 183 KB per pod and 854 MB of etcd growth for a 2,000-trainer job.\n%s\n", endMarker)
	return b.String()
}

const (
	beginMarker = "<!-- jobsize: written by bench/jobsize -->"
	endMarker   = "<!-- /jobsize -->"
)

// Section is the job size section a report at path already holds ("" if
// none), so that a run that skips this benchmark keeps its last figures.
func Section(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	doc := string(raw)
	i, j, ok := sectionBounds(doc)
	if !ok {
		return ""
	}
	return doc[i:j] + "\n"
}

// sectionBounds is where the section lies in doc: doc[i:j], from the begin
// marker through the end marker.
func sectionBounds(doc string) (i, j int, ok bool) {
	i = strings.Index(doc, beginMarker)
	if i < 0 {
		return 0, 0, false
	}
	j = strings.Index(doc[i:], endMarker)
	if j < 0 {
		return 0, 0, false
	}
	return i, i + j + len(endMarker), true
}

// WriteSection puts the section into the report file: in place of an
// earlier one, else at the end.
func WriteSection(path, section string) error {
	raw, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(raw)
	if i, j, ok := sectionBounds(doc); ok {
		doc = doc[:i] + strings.TrimSuffix(section, "\n") + doc[j:]
		return os.WriteFile(path, []byte(doc), 0o644)
	}
	if doc != "" && !strings.HasSuffix(doc, "\n\n") {
		doc = strings.TrimRight(doc, "\n") + "\n\n"
	}
	return os.WriteFile(path, []byte(doc+section), 0o644)
}
