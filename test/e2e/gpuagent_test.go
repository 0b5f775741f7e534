package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

const gpuAgentUser = "system:serviceaccount:volcano-system:paddle-gpu-agent"

// asGPUAgent is a client that acts as the agent's ServiceAccount with a
// token bound to a pod on node (what the kubelet's projected token carries:
// user extra authentication.kubernetes.io/node-name); node "" is a token
// bound to no node.
func asGPUAgent(t *testing.T, cfg *rest.Config, node string) kubernetes.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: gpuAgentUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:volcano-system", "system:authenticated"}}
	if node != "" {
		cfg.Impersonate.Extra = map[string][]string{"authentication.kubernetes.io/node-name": {node}}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func annotationPatch(kv map[string]interface{}) []byte {
	b, _ := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"annotations": kv}})
	return b
}

// The agent's manifests apply to a real API server, and the agent's
// ServiceAccount may change its own node's two GPU annotations and nothing
// else: not another node, not a label, not another annotation.
func TestGPUAgentManifests(t *testing.T) {
	c := framework.Cluster(t)
	ctx := context.Background()
	if out, err := kubectl(t, c, "apply", "-k", "deploy/gpu-agent"); err != nil {
		t.Fatalf("kubectl apply -k deploy/gpu-agent: %v\n%s", err, out)
	}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) < 2 {
		t.Fatalf("need two nodes, have %d", len(nodes.Items))
	}
	own, other := nodes.Items[0].Name, nodes.Items[1].Name
	t.Cleanup(func() {
		_, _ = c.Kube.CoreV1().Nodes().Patch(ctx, own, types.MergePatchType,
			annotationPatch(map[string]interface{}{gputopology.AssignmentsAnnotation: nil}), metav1.PatchOptions{})
		if out, err := kubectl(t, c, "delete", "-k", "deploy/gpu-agent"); err != nil {
			t.Errorf("kubectl delete -k deploy/gpu-agent: %v\n%s", err, out)
		}
	})
	if _, err := c.Kube.AppsV1().DaemonSets("volcano-system").Get(ctx, "paddle-gpu-agent", metav1.GetOptions{}); err != nil {
		t.Fatalf("the DaemonSet is not there: %v", err)
	}
	agent := asGPUAgent(t, c.Config, own)
	assignments := (&gputopology.Assignments{Observed: time.Now().UTC().Truncate(time.Second), Pods: map[string][]int{"ml/a": {0, 1}}}).Encode()
	patchNode := func(client kubernetes.Interface, node string, patch []byte) error {
		_, err := client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	// RBAC and the policy take effect within seconds of being created.
	var ownErr, otherErr error
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		ownErr = patchNode(agent, own, annotationPatch(map[string]interface{}{gputopology.AssignmentsAnnotation: assignments}))
		otherErr = patchNode(agent, other, annotationPatch(map[string]interface{}{gputopology.AssignmentsAnnotation: assignments}))
		return ownErr == nil && apierrors.IsForbidden(otherErr), nil
	}); err != nil {
		t.Fatalf("the agent's own node: %v; another node: %v (want allowed, forbidden)", ownErr, otherErr)
	}
	forbidden := []struct {
		name  string
		agent kubernetes.Interface
		node  string
		patch []byte
	}{
		{"another node", agent, other, annotationPatch(map[string]interface{}{gputopology.Annotation: "{}"})},
		{"a label of its node", agent, own, []byte(`{"metadata":{"labels":{"example.com/x":"y"}}}`)},
		{"another annotation of its node", agent, own, annotationPatch(map[string]interface{}{"example.com/x": "y"})},
		{"its node's spec", agent, own, []byte(`{"spec":{"unschedulable":true}}`)},
		{"a token bound to no node", asGPUAgent(t, c.Config, ""), own, annotationPatch(map[string]interface{}{gputopology.AssignmentsAnnotation: assignments})},
	}
	for _, f := range forbidden {
		if err := patchNode(f.agent, f.node, f.patch); !apierrors.IsForbidden(err) {
			t.Errorf("the agent changed %s: %v", f.name, err)
		}
	}
	n, err := c.Kube.CoreV1().Nodes().Get(ctx, own, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Annotations[gputopology.AssignmentsAnnotation] != assignments || n.Spec.Unschedulable || n.Labels["example.com/x"] != "" {
		t.Errorf("node %s after the agent's patches: annotations %v, labels %v, unschedulable %v", own, n.Annotations, n.Labels, n.Spec.Unschedulable)
	}
	if _, err := agent.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + own}); err != nil {
		t.Errorf("the agent cannot list the pods of its node: %v", err)
	}
	if err := agent.CoreV1().Nodes().Delete(ctx, other, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
		t.Errorf("the agent may delete nodes: %v", err)
	}
}
