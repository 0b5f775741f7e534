package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

// publisher writes the node's two annotations, and only when they would
// change: the topology when it differs, the assignments when the pods'
// GPUs differ or the last observation is older than the heartbeat (so the
// scheduler can tell a live agent's report from a dead one's).
type publisher struct {
	client    kubernetes.Interface
	node      string
	topology  string // the encoded topology annotation
	heartbeat time.Duration
	now       func() time.Time
}

// publish compares with the node as last seen and patches what changed; it
// reports whether it wrote.
func (p *publisher) publish(ctx context.Context, node *corev1.Node, pods map[string][]int) (bool, error) {
	cur := node.Annotations
	want := map[string]string{}
	if cur[gputopology.Annotation] != p.topology {
		want[gputopology.Annotation] = p.topology
	}
	next := &gputopology.Assignments{Observed: p.now().UTC().Truncate(time.Second), Pods: pods}
	prev, err := gputopology.ParseAssignments(cur[gputopology.AssignmentsAnnotation])
	switch {
	case err != nil || !prev.SamePods(next):
		want[gputopology.AssignmentsAnnotation] = next.Encode()
	case next.Observed.Sub(prev.Observed) >= p.heartbeat:
		want[gputopology.AssignmentsAnnotation] = next.Encode()
	}
	if len(want) == 0 {
		return false, nil
	}
	patch, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"annotations": want}})
	if err != nil {
		return false, err
	}
	if _, err := p.client.CoreV1().Nodes().Patch(ctx, p.node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return false, fmt.Errorf("patching node %s: %w", p.node, err)
	}
	klog.V(2).InfoS("Published GPU annotations", "node", p.node, "keys", len(want), "pods", len(pods))
	return true, nil
}
