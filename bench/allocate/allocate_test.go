// Package allocate benchmarks one scheduling cycle of Volcano's real
// allocate action on Paddle gangs, with Volcano's stock tiers and with ours,
// in one run:
//
//	go test ./bench/allocate -run '^$' -bench . -benchmem -benchtime 3x
//
// Configurations: "stock" is the Helm chart's default tiers, "paddle" is
// deploy/paddle (stock + paddle), and "stock-no-nodeorder" is stock without
// Volcano's nodeorder plugin: the cost of nodeorder, a stock scoring plugin,
// is the yardstick for the cost of paddle.
package allocate

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
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
	return []*simsched.Config{stock.WithoutPlugin("nodeorder").AllocateOnly(), stock.AllocateOnly(), ours.AllocateOnly()}
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
	for _, size := range sizes(b) {
		nodes, pods := size[0], size[1]
		{
			cluster := &simsched.Cluster{Nodes: simsched.GPUNodes(nodes, 32)}
			cluster.Pods, cluster.PodGroups = Workload(pods, 1)
			for _, cfg := range cfgs {
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
				})
			}
		}
	}
}
