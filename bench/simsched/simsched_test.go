package simsched

import (
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/internal/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

func TestScheduleSmall(t *testing.T) {
	path, err := localcluster.DeploySchedulerConf()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig("paddle", path)
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
