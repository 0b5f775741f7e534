package quality

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// SimCluster builds the scheduler's view of the cluster and workload: nodes
// with the preset's GPUs, islands (GPU-topology annotation) and rack labels,
// the background pods running, and every job pending as a Paddle gang
// created in arrival order.
func (c Cluster) SimCluster(jobs []Job) *simsched.Cluster {
	p := c.Preset
	topo := c.gpuTopology()
	sc := &simsched.Cluster{}
	for i := 0; i < c.nodes(); i++ {
		n := simsched.GPUNode(NodeName(i), c.rackOf(NodeName(i)), fmt.Sprintf("spine-%02d", i/c.NodesPerRack/8), topo)
		gpus := fmt.Sprint(p.GPUsPerNode)
		n.Status.Allocatable[gputopology.ResourceName] = resource.MustParse(gpus)
		n.Status.Capacity[gputopology.ResourceName] = resource.MustParse(gpus)
		n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse(fmt.Sprint(nodeCPU))
		sc.Nodes = append(sc.Nodes, n)
	}
	for node, gs := range c.Background {
		for i, g := range gs {
			sc.Pods = append(sc.Pods, simsched.RunningPod("bench", fmt.Sprintf("bg-%s-%d", node, i), node, fmt.Sprint(podCPU), g))
		}
	}
	sc.PodGroups = append(sc.PodGroups, simsched.BackgroundGroup("bench"))
	created := time.Now().Add(-time.Hour)
	for _, j := range jobs {
		pods, pg := GangOf("bench", j, created)
		sc.Pods = append(sc.Pods, pods...)
		sc.PodGroups = append(sc.PodGroups, pg)
		created = created.Add(time.Second)
	}
	return sc
}

// GangOf is the pods and PodGroup of a job, pending, as the paddle job
// plugin shapes them: a PS job's tasks are ps and worker (paddle-operator's
// names), a collective job's task is trainer. Pod names are
// <job>-<task>-<index> in namespace ns.
func GangOf(ns string, j Job, created time.Time) ([]*v1.Pod, *schedulingv1.PodGroup) {
	cpu := fmt.Sprint(podCPU)
	if j.PS {
		return simsched.Gang(ns, j.Name, paddleapi.ModePS, created,
			simsched.Task{Name: "ps", Role: paddleapi.RolePServer, Replicas: j.PServers, CPU: cpu},
			simsched.Task{Name: "worker", Role: paddleapi.RoleTrainer, Replicas: j.Pods, CPU: cpu, GPUs: j.PodGPUs})
	}
	return simsched.Gang(ns, j.Name, paddleapi.ModeCollective, created,
		simsched.Task{Name: "trainer", Role: paddleapi.RoleTrainer, Replicas: j.Pods, CPU: cpu, GPUs: j.PodGPUs})
}

// FromScheduler turns a scheduling result into placements (pservers first,
// then trainers, by index), for the jobs whose gang was placed whole.
func FromScheduler(jobs []Job, placed map[string]string) []Placement {
	var out []Placement
	for _, j := range jobs {
		var nodes []string
		ok := true
		for i := 0; i < j.PServers; i++ {
			n, has := placed[fmt.Sprintf("bench/%s-ps-%d", j.Name, i)]
			ok = ok && has
			nodes = append(nodes, n)
		}
		task := "trainer"
		if j.PS {
			task = "worker"
		}
		for i := 0; i < j.Pods; i++ {
			n, has := placed[fmt.Sprintf("bench/%s-%s-%d", j.Name, task, i)]
			ok = ok && has
			nodes = append(nodes, n)
		}
		if ok {
			out = append(out, Placement{Job: j, Nodes: nodes})
		}
	}
	return out
}

// Describe is a one-line summary of a workload.
func Describe(jobs []Job) string {
	sizes := map[int]int{}
	ps, gpus := 0, 0
	for _, j := range jobs {
		sizes[j.GPUs]++
		gpus += j.GPUs
		if j.PS {
			ps++
		}
	}
	keys := make([]int, 0, len(sizes))
	for k := range sizes {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%dx%d", sizes[k], k))
	}
	return fmt.Sprintf("%d jobs, %d GPUs, %d PS; jobs x GPUs: %s", len(jobs), gpus, ps, strings.Join(parts, " "))
}
