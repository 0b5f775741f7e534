package testbuilders

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/volcano/pkg/scheduler/util"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// The builders make the same objects as Volcano's util.BuildPod/BuildNode
// given the same facts, so tests moved onto them assert on the same input.
func TestBuildersMatchVolcanoUtil(t *testing.T) {
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("1Gi"),
		gputopology.ResourceName: *resource.NewQuantity(2, resource.DecimalSI)}
	want := util.BuildPod("ns", "j-worker-1", "n0", v1.PodRunning, req, "j", map[string]string{
		batch.TaskSpecKey: "worker", batch.TaskIndex: "1",
		paddleapi.RoleLabel: string(paddleapi.RoleTrainer), paddleapi.IndexLabel: "1", paddleapi.ModeLabel: string(paddleapi.ModeCollective),
	}, nil)
	want.Annotations[batch.TaskSpecKey] = "worker"
	got := MakePod().Namespace("ns").Name("j-worker-1").PodGroup("j").Task("worker", 1).Node("n0").
		Paddle(paddleapi.RoleTrainer, 1, paddleapi.ModeCollective).CPU("4").Memory("1Gi").GPUs(2).Obj()
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("pod builder:\n got %+v\nwant %+v", got, want)
	}

	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("512Gi"),
		v1.ResourcePods: resource.MustParse("110"), gputopology.ResourceName: *resource.NewQuantity(8, resource.DecimalSI)}
	wantNode := util.BuildNode("n0", alloc, map[string]string{paddleapi.DefaultRackLabel: "rack0", paddleapi.DefaultSpineLabel: "spine0"})
	gotNode := MakeNode().Name("n0").CPU("64").Memory("512Gi").GPUs(8).Rack("rack0").Spine("spine0").Obj()
	if !equality.Semantic.DeepEqual(gotNode, wantNode) {
		t.Errorf("node builder:\n got %+v\nwant %+v", gotNode, wantNode)
	}
	if gotNode.Status.Allocatable[gputopology.ResourceName] != gotNode.Status.Capacity[gputopology.ResourceName] {
		t.Error("allocatable differs from capacity")
	}
}
