package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// Every simulated node has a Lease in kube-node-lease that KWOK keeps
// renewing, as a kubelet does: the node lifecycle controller judges a node by
// its Lease (pkg/controller/nodelifecycle/node_lifecycle_controller.go:
// tryUpdateNodeHealth), so without one every KWOK node went Unknown and was
// tainted unreachable for a few seconds after each grace period, and a spec
// that counted untainted nodes at that moment saw fewer.
func TestSimulatedNodesRenewTheirLeases(t *testing.T) {
	c := framework.Cluster(t)
	ctx := context.Background()
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]time.Time{}
	for _, n := range nodes.Items {
		if n.Annotations["kwok.x-k8s.io/node"] == "fake" {
			first[n.Name] = time.Time{}
		}
	}
	if len(first) == 0 {
		t.Fatal("the cluster has no KWOK node")
	}
	renewed := func(ctx context.Context) (bool, error) {
		leases, err := c.Kube.CoordinationV1().Leases("kube-node-lease").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen := map[string]time.Time{}
		for _, l := range leases.Items {
			// KWOK holds them under its own identity, not the node's name.
			if l.Spec.RenewTime != nil {
				seen[l.Name] = l.Spec.RenewTime.Time
			}
		}
		done := true
		for name, at := range first {
			now, ok := seen[name]
			switch {
			case !ok:
				done = false
			case at.IsZero():
				first[name] = now
				done = false
			case !now.After(at):
				done = false
			}
		}
		return done, nil
	}
	// A kubelet renews every quarter of the lease's 40 s: two renewals of
	// every node fit well within a minute.
	if err := framework.Poll(ctx, time.Minute, renewed); err != nil {
		missing := []string{}
		for name, at := range first {
			missing = append(missing, fmt.Sprintf("%s (first renewal seen: %v)", name, !at.IsZero()))
		}
		t.Fatalf("not every KWOK node renewed its Lease in kube-node-lease: %v: %v", err, missing)
	}
}
