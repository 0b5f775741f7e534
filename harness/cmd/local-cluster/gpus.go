package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

// printGPUs draws every node the demo's GPU pods went to as its GPUs grouped
// by NVLink island, with a letter for the pod on each GPU: which GPUs each
// pod holds as the node's GPU agent reports them, or, where no agent runs
// (KWOK nodes), as NVIDIA's device plugin would pick them (pkg/gputopology,
// the model the scheduler scores with). A 4-GPU pod in one island of 4
// shows as one island of the same letter.
func (d *demoCluster) printGPUs(ctx context.Context, jobs []string) error {
	ours := map[string]bool{}
	for _, j := range jobs {
		ours[j] = true
	}
	pods, err := d.kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	byNode := map[string][]corev1.Pod{}
	used := map[string]bool{}
	for _, p := range pods.Items {
		if gpusOfPod(p) == 0 || p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		if p.Namespace == demoNamespace && ours[p.Labels[batchv1alpha1.JobNameKey]] {
			used[p.Spec.NodeName] = true
		}
	}
	if len(used) == 0 {
		return nil
	}
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Println("\nGPUs of the nodes used, by NVLink island (a letter per pod, . free):")
	for _, name := range names {
		node, err := d.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		model, err := gputopology.ModelFor(node.Annotations[gputopology.Annotation])
		if err != nil {
			fmt.Printf("  %s: no GPU topology (%v)\n", name, err)
			continue
		}
		fmt.Print(drawNode(node, model, byNode[name]))
	}
	return nil
}

// drawNode renders one node: its islands, the pod letter on each GPU, and
// the letters' pods.
func drawNode(node *corev1.Node, model *gputopology.Model, pods []corev1.Pod) string {
	// Letters in creation order, the order Occupy replays them in.
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp) })
	reqs := make([]gputopology.PodRequest, len(pods))
	for i, p := range pods {
		reqs[i] = gputopology.PodRequest{Key: p.Namespace + "/" + p.Name, GPUs: gpusOfPod(p), Created: p.CreationTimestamp.Time}
	}
	var asg *gputopology.Assignments
	if v, ok := node.Annotations[gputopology.AssignmentsAnnotation]; ok {
		asg, _ = gputopology.ParseAssignments(v)
	}
	occ := model.Occupy(reqs, asg)
	letter := make([]string, model.N())
	for i := range letter {
		letter[i] = "."
	}
	var legend []string
	for i, r := range reqs {
		l := string(rune('A' + i%26))
		for _, pos := range occ.Pods[r.Key].Positions() {
			letter[pos] = l
		}
		legend = append(legend, fmt.Sprintf("%s=%s (%d)", l, r.Key, r.GPUs))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %-12s %-9s %-16s", node.Name, model.Topology.Fabric, "("+string(occ.Source)+")")
	for id, island := range model.Topology.Islands() {
		cells := make([]string, len(island))
		for k, idx := range island {
			pos, _ := model.Position(idx)
			cells[k] = letter[pos]
		}
		fmt.Fprintf(&b, " island %d [%s]", id, strings.Join(cells, " "))
	}
	fmt.Fprintf(&b, "\n  %-39s %s\n", "", strings.Join(legend, "  "))
	return b.String()
}

func gpusOfPod(p corev1.Pod) int {
	n := 0
	for _, c := range p.Spec.Containers {
		q := c.Resources.Limits[gputopology.ResourceName]
		n += int(q.Value())
	}
	return n
}
