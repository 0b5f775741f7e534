package simsched

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// GPUNode is an 8-GPU node (two NVLink islands of 4, 64 CPUs, 512Gi) in a
// rack and spine, labelled as the local cluster and the deploy defaults do.
func GPUNode(name, rack, spine string, topo *gputopology.Topology) *v1.Node {
	alloc := v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("512Gi"),
		v1.ResourcePods: resource.MustParse("110"), gputopology.ResourceName: resource.MustParse("8"),
	}
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			paddleapi.DefaultRackLabel: rack, paddleapi.DefaultSpineLabel: spine, "kubernetes.io/hostname": name,
		}},
		Status: v1.NodeStatus{Capacity: alloc, Allocatable: alloc.DeepCopy(),
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}},
	}
	if topo != nil {
		n.Annotations = map[string]string{gputopology.Annotation: topo.Encode()}
	}
	return n
}

// GPUNodes builds n nodes, nodesPerRack to a rack and 8 racks to a spine.
func GPUNodes(n, nodesPerRack int) []*v1.Node {
	topo := gputopology.Uniform(gputopology.FabricNVLink, 8, 4)
	out := make([]*v1.Node, 0, n)
	for i := 0; i < n; i++ {
		r := i / nodesPerRack
		out = append(out, GPUNode(fmt.Sprintf("node-%05d", i), fmt.Sprintf("rack-%03d", r), fmt.Sprintf("spine-%02d", r/8), topo))
	}
	return out
}

// Task of a gang: replicas of one pod shape.
type Task struct {
	Name     string
	Role     paddleapi.Role
	Replicas int
	CPU      string
	GPUs     int
}

// Gang returns the pods and PodGroup of one Paddle job, pending and
// admitted (Inqueue), shaped as the paddle job plugin and Volcano's
// controller make them.
func Gang(ns, name string, mode paddleapi.Mode, created time.Time, tasks ...Task) ([]*v1.Pod, *schedulingv1.PodGroup) {
	var pods []*v1.Pod
	min := int32(0)
	for _, t := range tasks {
		for i := 0; i < t.Replicas; i++ {
			pods = append(pods, volcanoPod(ns, fmt.Sprintf("%s-%s-%d", name, t.Name, i), name, "paddle", t.CPU, "8Gi", t.GPUs).
				Created(created).Label(batch.JobNameKey, name).Task(t.Name, i).Paddle(t.Role, i, mode).Obj())
		}
		min += int32(t.Replicas)
	}
	pg := &schedulingv1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:       schedulingv1.PodGroupSpec{Queue: "default", MinMember: min},
		Status:     schedulingv1.PodGroupStatus{Phase: schedulingv1.PodGroupInqueue},
	}
	return pods, pg
}

// RunningPod is a pod already bound to a node (background load).
func RunningPod(ns, name, node string, cpu string, gpus int) *v1.Pod {
	return volcanoPod(ns, name, "background", "x", cpu, "4Gi", gpus).Node(node).Obj()
}

// volcanoPod is a pod of PodGroup group for Volcano's scheduler, its one
// container (named container) limited to what it requests.
func volcanoPod(ns, name, group, container, cpu, memory string, gpus int) *testbuilders.PodWrapper {
	return testbuilders.MakePod().Namespace(ns).Name(name).PodGroup(group).Scheduler("volcano").Container(container).
		CPU(cpu).Memory(memory).GPUs(gpus).Limited()
}

// BackgroundGroup is the PodGroup of RunningPod pods.
func BackgroundGroup(ns string) *schedulingv1.PodGroup {
	return &schedulingv1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "background"},
		Spec:       schedulingv1.PodGroupSpec{Queue: "default", MinMember: 0},
		Status:     schedulingv1.PodGroupStatus{Phase: schedulingv1.PodGroupRunning},
	}
}
