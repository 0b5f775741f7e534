package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// useSchedulerConf restarts the scheduler with the given configuration (a
// restart, not a hot reload, so the test knows when it applies).
func useSchedulerConf(t *testing.T, c *localcluster.Cluster, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StopComponent(localcluster.Scheduler); err != nil {
		t.Fatal(err)
	}
	if err := c.SetSchedulerConf(b); err != nil {
		t.Fatal(err)
	}
	if err := c.StartComponent(localcluster.Scheduler); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitSchedulerSessions(context.Background(), 1, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// useDeployConfWith runs the scheduler with deploy/paddle's configuration,
// old replaced by new, until the test ends (then with deploy/paddle's
// again).
func useDeployConfWith(t *testing.T, c *localcluster.Cluster, old, new string) {
	t.Helper()
	ours, err := localcluster.DeploySchedulerConf()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ours)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), old, new, 1)
	if changed == string(b) {
		t.Fatalf("deploy configuration has no %q any more; update this test", old)
	}
	path := filepath.Join(t.TempDir(), "scheduler.conf")
	if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { useSchedulerConf(t, c, ours) })
	useSchedulerConf(t, c, path)
}

// background binds pods straight to nodes (no scheduler) to fragment the
// cluster the same way before each run: GPUs in use per node.
var background = map[string][]int{
	"gpu-r0-n0": {2},
	"gpu-r0-n1": {4, 2},
	"gpu-r0-n2": {3},
	"gpu-r0-n3": {6},
	"gpu-r1-n0": {1},
	"gpu-r1-n1": {2, 2},
	"gpu-r1-n2": {5},
	"gpu-r1-n3": {},
}

func createBackground(t *testing.T, c *localcluster.Cluster, ns string) {
	t.Helper()
	for node, gpus := range background {
		for i, g := range gpus {
			createBoundPod(t, c, ns, fmt.Sprintf("bg-%s-%d", node, i), node, g)
		}
	}
}

// createBoundPod creates a pod bound straight to a node (no scheduler),
// holding gpus GPUs; KWOK runs it.
func createBoundPod(t *testing.T, c *localcluster.Cluster, ns, name, node string, gpus int) {
	t.Helper()
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"),
		"nvidia.com/gpu": *resource.NewQuantity(int64(gpus), resource.DecimalSI),
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "x", Image: "busy",
			Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}},
	}
	if _, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

type placement struct {
	nodes map[string]string // pod -> node
	jobs  map[string][]corev1.Pod
}

// placeJobs runs the test workload once: background, then the Paddle jobs,
// and returns where the scheduler put them.
func placeJobs(t *testing.T, c *localcluster.Cluster, ns string) placement {
	t.Helper()
	createBackground(t, c, ns)
	jobs := []*batchv1alpha1.Job{
		paddleJob(ns, "ps-job", nil, 6,
			framework.Task{Name: "ps", Replicas: 2, CPU: "8"},
			framework.Task{Name: "worker", Replicas: 4, CPU: "8", GPUs: 2}),
		paddleJob(ns, "coll-4x2", nil, 2, framework.Task{Name: "trainer", Replicas: 2, CPU: "8", GPUs: 4}),
		paddleJob(ns, "coll-2x3", nil, 3, framework.Task{Name: "trainer", Replicas: 3, CPU: "8", GPUs: 2}),
	}
	for _, j := range jobs {
		framework.CreateJob(t, c, j)
	}
	p := placement{nodes: map[string]string{}, jobs: map[string][]corev1.Pod{}}
	for _, j := range jobs {
		framework.WaitJobPhase(t, c, ns, j.Name, batchv1alpha1.Running, 90*time.Second)
		for _, pod := range framework.JobPods(t, c, ns, j.Name) {
			p.nodes[pod.Name] = pod.Spec.NodeName
			p.jobs[j.Name] = append(p.jobs[j.Name], pod)
		}
	}
	return p
}

func rack(node string) string { return node[:strings.LastIndex(node, "-")] }

// islandSpans counts the job pods whose GPUs sit in more than one NVLink
// island although one island could hold them, with the GPUs each pod holds
// taken from the shared GPU model (pkg/gputopology, what the scheduler
// scores with): the agent's report where a node has one, else NVIDIA's
// allocator replayed over the node's GPU pods in creation order.
func islandSpans(t *testing.T, c *localcluster.Cluster, ns string) (spans int, detail []string) {
	t.Helper()
	ctx := context.Background()
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byNode := map[string][]corev1.Pod{}
	for _, p := range pods.Items {
		if podGPUs(p) > 0 && p.Spec.NodeName != "" {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	for node, onNode := range byNode {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		model, err := gputopology.ModelFor(n.Annotations[gputopology.Annotation])
		if err != nil {
			t.Fatalf("node %s: %v", node, err)
		}
		sort.Slice(onNode, func(i, j int) bool { return onNode[i].Name < onNode[j].Name })
		var reqs []gputopology.PodRequest
		for _, p := range onNode {
			reqs = append(reqs, gputopology.PodRequest{Key: p.Namespace + "/" + p.Name, GPUs: podGPUs(p), Created: p.CreationTimestamp.Time})
		}
		var asg *gputopology.Assignments
		if v, ok := n.Annotations[gputopology.AssignmentsAnnotation]; ok {
			if asg, err = gputopology.ParseAssignments(v); err != nil {
				t.Fatalf("node %s: %v", node, err)
			}
		}
		largest := 0
		for _, size := range model.DomainSizes {
			largest = max(largest, size)
		}
		occ := model.Occupy(reqs, asg)
		for _, p := range onNode {
			set := occ.Pods[p.Namespace+"/"+p.Name]
			islands := map[int]bool{}
			for _, pos := range set.Positions() {
				islands[model.Topology.GPUs[pos].Island] = true
			}
			if !strings.HasPrefix(p.Name, "bg-") && podGPUs(p) <= largest && len(islands) > 1 {
				spans++
				detail = append(detail, fmt.Sprintf("%s (GPUs %v, %s) on %s", p.Name, model.Indices(set), occ.Source, node))
			}
		}
	}
	return spans, detail
}

func podGPUs(p corev1.Pod) int {
	q := p.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
	return int(q.Value())
}

type quality struct {
	psTrainersOutsidePSRack int
	pserversSharingNode     bool
	jobsSpanningRacks       []string
	islandSpans             int
	islandDetail            []string
}

func judge(t *testing.T, c *localcluster.Cluster, ns string, p placement) quality {
	var q quality
	psRacks := map[string]bool{}
	psNodes := map[string]int{}
	for _, pod := range p.jobs["ps-job"] {
		if pod.Labels[paddleapi.RoleLabel] == "pserver" {
			psRacks[rack(pod.Spec.NodeName)] = true
			psNodes[pod.Spec.NodeName]++
		}
	}
	for _, n := range psNodes {
		if n > 1 {
			q.pserversSharingNode = true
		}
	}
	for _, pod := range p.jobs["ps-job"] {
		if pod.Labels[paddleapi.RoleLabel] == "trainer" && !psRacks[rack(pod.Spec.NodeName)] {
			q.psTrainersOutsidePSRack++
		}
	}
	for name, pods := range p.jobs {
		racks := map[string]bool{}
		for _, pod := range pods {
			racks[rack(pod.Spec.NodeName)] = true
		}
		if len(racks) > 1 {
			q.jobsSpanningRacks = append(q.jobsSpanningRacks, name)
		}
	}
	sort.Strings(q.jobsSpanningRacks)
	q.islandSpans, q.islandDetail = islandSpans(t, c, ns)
	return q
}

// The same fragmented cluster and the same jobs, placed once by Volcano's
// stock configuration and once by ours, in one run.
func TestPlacementStockVsPaddle(t *testing.T) {
	c := framework.Cluster(t)
	stock, ours, err := localcluster.SchedulerConfs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { useSchedulerConf(t, c, ours) })

	useSchedulerConf(t, c, stock)
	nsStock := framework.Namespace(t, c)
	qs := judge(t, c, nsStock, placeJobs(t, c, nsStock))
	framework.DeleteNamespaceJobs(t, c, nsStock)

	useSchedulerConf(t, c, ours)
	nsOurs := framework.Namespace(t, c)
	qp := judge(t, c, nsOurs, placeJobs(t, c, nsOurs))

	t.Logf("stock : PS trainers outside the pservers' rack %d, pservers share a node %v, jobs across racks %v, pods across NVLink islands %d %v",
		qs.psTrainersOutsidePSRack, qs.pserversSharingNode, qs.jobsSpanningRacks, qs.islandSpans, qs.islandDetail)
	t.Logf("paddle: PS trainers outside the pservers' rack %d, pservers share a node %v, jobs across racks %v, pods across NVLink islands %d %v",
		qp.psTrainersOutsidePSRack, qp.pserversSharingNode, qp.jobsSpanningRacks, qp.islandSpans, qp.islandDetail)

	if qp.psTrainersOutsidePSRack != 0 {
		t.Errorf("paddle: %d PS trainers outside their pservers' rack", qp.psTrainersOutsidePSRack)
	}
	if qp.pserversSharingNode {
		t.Error("paddle: pservers of the PS job share a node")
	}
	if len(qp.jobsSpanningRacks) != 0 {
		t.Errorf("paddle: jobs across racks: %v", qp.jobsSpanningRacks)
	}
	if qp.islandSpans != 0 {
		t.Errorf("paddle: pods across NVLink islands: %v", qp.islandDetail)
	}
	if qs.psTrainersOutsidePSRack+len(qs.jobsSpanningRacks)+qs.islandSpans == 0 {
		t.Log("note: stock placed this workload without a defect this run")
	}
}
