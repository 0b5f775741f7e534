package simsched

import (
	"runtime"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

func TestScheduleSmall(t *testing.T) {
	_, cfg, err := LoadCompared()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Nodes: GPUNodes(4, 2)}
	c.Pods, _ = Gang("ns", "j", paddleapi.ModeCollective, time.Now(),
		Task{Name: "trainer", Role: paddleapi.RoleTrainer, Replicas: 2, CPU: "8", GPUs: 4})
	_, pg := Gang("ns", "j", paddleapi.ModeCollective, time.Now())
	pg.Spec.MinMember = 2
	c.PodGroups = append(c.PodGroups, pg)
	cache := NewCache(c)
	defer cache.Close()
	r := cache.Schedule(cfg)
	if len(r.Placed) != 2 {
		t.Fatalf("placed %v", r.Placed)
	}
}

// A closed snapshot cache leaves no goroutine behind: the replay builds
// one per scheduling cycle, hundreds of thousands in the full bench.
func TestSnapshotCacheCloseLeavesNoGoroutines(t *testing.T) {
	c := &Cluster{Nodes: GPUNodes(2, 1)}
	NewSnapshotCache(c).Close() // the first one starts what runs once per process
	before := runtime.NumGoroutine()
	for i := 0; i < 50; i++ {
		NewSnapshotCache(c).Close()
	}
	// Goroutines a shut-down work queue ran end soon after: poll.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after 50 snapshot caches were built and closed, %d before", n, before)
	}
}
