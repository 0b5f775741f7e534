package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

func gpuPodAt(name string, gpus int, created time.Time) corev1.Pod {
	lim := corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(gpus), resource.DecimalSI)}
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: lim}}}}}
}

// A 4-GPU pod shows as one island of its letter; the agent's report, when
// the node has one, is what is drawn.
func TestDrawNode(t *testing.T) {
	topo := gputopology.Uniform(gputopology.FabricNVLink, 8, 4)
	model, err := gputopology.NewModel(topo)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pods := []corev1.Pod{gpuPodAt("pair", 2, t0.Add(time.Minute)), gpuPodAt("quad", 4, t0)}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-r0-n0", Annotations: map[string]string{gputopology.Annotation: topo.Encode()}}}
	cases := []struct {
		name        string
		assignments *gputopology.Assignments
		want        []string
	}{
		{"predicted", nil, []string{"(predicted)", "island 0 [A A A A] island 1 [B B . .]", "A=demo/quad (4)  B=demo/pair (2)"}},
		{"agent", &gputopology.Assignments{Observed: t0, Pods: map[string][]int{"demo/quad": {4, 5, 6, 7}, "demo/pair": {0, 3}}},
			[]string{"(agent)", "island 0 [B . . B] island 1 [A A A A]"}},
	}
	for _, c := range cases {
		n := node.DeepCopy()
		if c.assignments != nil {
			n.Annotations[gputopology.AssignmentsAnnotation] = c.assignments.Encode()
		}
		got := drawNode(n, model, append([]corev1.Pod(nil), pods...))
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: drawing lacks %q:\n%s", c.name, w, got)
			}
		}
	}
}
