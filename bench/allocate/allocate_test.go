// Package allocate benchmarks one scheduling cycle of Volcano's real
// allocate action on Paddle gangs, with Volcano's stock tiers and with ours,
// in one run:
//
//	go test ./bench/allocate -run '^$' -bench . -benchmem -benchtime 3x
//
// Configurations: "stock" is the Helm chart's default tiers, "paddle" is
// deploy/paddle (stock + paddle), and "stock-no-nodeorder" is stock without
// Volcano's nodeorder plugin: the cost of nodeorder, a stock scoring plugin,
// is the yardstick for the cost of paddle. "paddle-predicted-100k" is paddle
// with paddle.shortestPredictedFirst and the default queue's run-time
// history of 100,000 finished jobs, read anew every cycle (a scheduler
// reads it again only when it changes): the cost of the predictions.
package allocate

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

// Workload builds `pods` pending pods in Paddle gangs, fixed seed: 30% of
// the pods in PS jobs (2 CPU pservers + 1-GPU trainers), the rest collective
// gangs of 2 to 32 trainers of 1, 2, 4 or 8 GPUs.
func Workload(pods int, seed int64) ([]*v1.Pod, []*schedulingv1.PodGroup) {
	rng := rand.New(rand.NewSource(seed))
	var all []*v1.Pod
	var groups []*schedulingv1.PodGroup
	created := time.Now()
	for j := 0; len(all) < pods; j++ {
		var p []*v1.Pod
		var g *schedulingv1.PodGroup
		name := fmt.Sprintf("job-%04d", j)
		if float64(len(all)) < 0.3*float64(pods) {
			trainers := 2 + rng.Intn(7)
			p, g = simsched.Gang("bench", name, paddleapi.ModePS, created,
				simsched.Task{Name: "ps", Role: paddleapi.RolePServer, Replicas: 2, CPU: "4"},
				simsched.Task{Name: "worker", Role: paddleapi.RoleTrainer, Replicas: trainers, CPU: "4", GPUs: 1})
		} else {
			size := []int{2, 2, 4, 4, 8, 16, 32}[rng.Intn(7)]
			gpus := []int{1, 2, 4, 8}[rng.Intn(4)]
			p, g = simsched.Gang("bench", name, paddleapi.ModeCollective, created,
				simsched.Task{Name: "trainer", Role: paddleapi.RoleTrainer, Replicas: size, CPU: "8", GPUs: gpus})
		}
		if len(all)+len(p) > pods {
			continue
		}
		all = append(all, p...)
		groups = append(groups, g)
		created = created.Add(time.Second)
	}
	return all, groups
}

func configs(b *testing.B) []*simsched.Config {
	stock, ours, err := simsched.LoadCompared()
	if err != nil {
		b.Fatal(err)
	}
	// One allocate cycle is what this measures, whatever else the files'
	// actions do.
	predicted := *ours.AllocateOnly()
	predicted.Name = "paddle-predicted-100k"
	predicted.Tiers = paddle.WithArgs(ours.Tiers, map[string]interface{}{paddle.ArgShortestPredictedFirst: true})
	return []*simsched.Config{stock.WithoutPlugin("nodeorder").AllocateOnly(), stock.AllocateOnly(), ours.AllocateOnly(), &predicted}
}

// historyJobs is how many finished jobs the predicted configuration's
// history holds.
const historyJobs = 100_000

// history is the default queue's run-time history after historyJobs jobs
// of the workload's shapes, in 40 namespaces, ended over 100 days, with
// run times drawn log-uniform from a minute to a week (fixed seed).
func history(b *testing.B) string {
	rng := rand.New(rand.NewSource(2))
	h, err := jobhistory.NewQueueHistory("default", "")
	if err != nil {
		b.Fatal(err)
	}
	end := time.Now().Add(-100 * 24 * time.Hour)
	for i := 0; i < historyJobs; i++ {
		end = end.Add(100 * 24 * time.Hour / historyJobs)
		pods, gpus := []int{2, 4, 8, 16, 32}[rng.Intn(5)], []int{1, 2, 4, 8}[rng.Intn(4)]
		d := time.Duration(math.Exp(math.Log(60)+rng.Float64()*math.Log(7*24*60)) * float64(time.Second))
		r := jobhistory.Record{SubmitTime: end.Add(-d), Start: end.Add(-d), Duration: d, Pods: pods, GPUsPerPod: gpus, MinPods: pods, MaxPods: pods,
			Queue: "default", Namespace: fmt.Sprintf("team-%02d", rng.Intn(40)), Mode: jobhistory.ModeCollective}
		h.Record(fmt.Sprint(i), r)
	}
	ann, err := h.Annotation(time.Now())
	if err != nil {
		b.Fatal(err)
	}
	return ann
}

// BenchmarkPredictorOfQueueHistory is the scheduler's cost of such a
// history: the predictor it builds from the annotation when one changes.
// Reported: the time to build it, the annotation's size, and the heap the
// predictor keeps once built (the scheduler keeps one until an annotation
// changes); -benchmem's B/op is what building it allocates, garbage
// included.
//
//	go test ./bench/allocate -run '^$' -bench PredictorOfQueueHistory -benchmem
func BenchmarkPredictorOfQueueHistory(b *testing.B) {
	ann := history(b)
	var before, after runtime.MemStats
	var kept *jobhistory.Predictor
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Only the build is timed: the collections that measure what it
		// keeps are not.
		b.StopTimer()
		kept = nil
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		p := jobhistory.NewPredictor()
		if err := p.AddQueue("default", []byte(ann)); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		kept = p
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.StartTimer()
	}
	b.StopTimer()
	runtime.KeepAlive(kept)
	b.ReportMetric(float64(len(ann)), "annotation-B")
	b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "kept-B")
}

// sizes are the nodes x pods cases: all of 100, 1000, 5000 nodes with 400
// and 2000 pods, or the list in BENCH_SIZES ("100x400,1000x400").
func sizes(b *testing.B) [][2]int {
	env := os.Getenv("BENCH_SIZES")
	if env == "" {
		var out [][2]int
		for _, n := range []int{100, 1000, 5000} {
			for _, p := range []int{400, 2000} {
				out = append(out, [2]int{n, p})
			}
		}
		return out
	}
	var out [][2]int
	for _, s := range strings.Split(env, ",") {
		var n, p int
		if _, err := fmt.Sscanf(strings.TrimSpace(s), "%dx%d", &n, &p); err != nil {
			b.Fatalf("BENCH_SIZES %q: %v", s, err)
		}
		out = append(out, [2]int{n, p})
	}
	return out
}

func BenchmarkAllocate(b *testing.B) {
	cfgs := configs(b)
	hist := history(b)
	for _, size := range sizes(b) {
		nodes, pods := size[0], size[1]
		{
			plain := &simsched.Cluster{Nodes: simsched.GPUNodes(nodes, 32)}
			plain.Pods, plain.PodGroups = Workload(pods, 1)
			withHistory := *plain
			withHistory.QueueAnnotations = map[string]map[string]string{"default": {paddleapi.RunTimeHistoryAnnotation: hist}}
			for _, cfg := range cfgs {
				cluster := plain
				if strings.HasPrefix(cfg.Name, "paddle-predicted") {
					cluster = &withHistory
				}
				b.Run(fmt.Sprintf("nodes=%d/pods=%d/%s", nodes, pods, cfg.Name), func(b *testing.B) {
					placed, gpus := 0, 0
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						c := simsched.NewCache(cluster)
						b.StartTimer()
						r := c.Schedule(cfg)
						b.StopTimer()
						placed, gpus = len(r.Placed), r.PlacedGPUs
						c.Close()
						b.StartTimer()
					}
					b.ReportMetric(float64(placed), "placed")
					b.ReportMetric(float64(gpus), "gpus")
					if cluster == &withHistory {
						b.ReportMetric(float64(len(hist)), "history-bytes")
					}
				})
			}
		}
	}
}
