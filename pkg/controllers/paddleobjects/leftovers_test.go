package paddleobjects

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/apis/pkg/apis/helpers"
)

func TestRemoveSvcLeftovers(t *testing.T) {
	tests := []struct {
		name        string
		phase       batch.JobPhase
		svcRecorded bool
		foreign     bool // the objects belong to someone else
		wantGone    bool
	}{
		{name: "rejected job, finished", phase: batch.Failed, wantGone: true},
		{name: "rejected job, terminated", phase: batch.Terminated, wantGone: true},
		{name: "rejected job, still pending", phase: batch.Pending},
		{name: "svc recorded its objects", phase: batch.Failed, svcRecorded: true},
		{name: "objects of someone else", phase: batch.Failed, foreign: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := paddleJob("bad", tt.phase, 2)
			job.Spec.Plugins["svc"] = []string{}
			job.Status.ControlledResources = map[string]string{}
			if tt.svcRecorded {
				job.Status.ControlledResources["plugin-svc"] = "svc"
			}
			c, kube := newController(t, job)
			ctx := context.Background()
			owners := []metav1.OwnerReference{*metav1.NewControllerRef(job, helpers.JobKind)}
			if tt.foreign {
				owners = nil
			}
			meta := func(name string) metav1.ObjectMeta {
				return metav1.ObjectMeta{Namespace: "ml", Name: name, OwnerReferences: owners}
			}
			if _, err := kube.CoreV1().Services("ml").Create(ctx, &v1.Service{ObjectMeta: meta("bad")}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := kube.CoreV1().ConfigMaps("ml").Create(ctx, &v1.ConfigMap{ObjectMeta: meta("bad-svc")}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := kube.NetworkingV1().NetworkPolicies("ml").Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: meta("bad")}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := c.sync(ctx, "ml/bad"); err != nil {
				t.Fatal(err)
			}
			_, e1 := kube.CoreV1().Services("ml").Get(ctx, "bad", metav1.GetOptions{})
			_, e2 := kube.CoreV1().ConfigMaps("ml").Get(ctx, "bad-svc", metav1.GetOptions{})
			_, e3 := kube.NetworkingV1().NetworkPolicies("ml").Get(ctx, "bad", metav1.GetOptions{})
			for i, err := range []error{e1, e2, e3} {
				if gone := apierrors.IsNotFound(err); gone != tt.wantGone {
					t.Errorf("object %d: gone=%v, want %v (%v)", i, gone, tt.wantGone, err)
				}
			}
		})
	}
}
