package localcluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	busv1alpha1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"
)

// Create creates manifests the way `kubectl create` would: namespaced
// objects without a namespace go to ns. Objects that already exist are left
// as they are. It returns the created objects.
func (c *Cluster) Create(ctx context.Context, ns string, objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Kube.Discovery()))
	var out []*unstructured.Unstructured
	for _, o := range objs {
		o = o.DeepCopy()
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return out, fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if o.GetNamespace() == "" {
				o.SetNamespace(ns)
			}
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		created, err := ri.Create(ctx, o, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return out, fmt.Errorf("creating %s %s: %w", gvk.Kind, o.GetName(), err)
		}
		out = append(out, created)
	}
	return out, nil
}

// Annotations the local cluster's KWOK stages act on (see kwok.yaml).
const (
	SucceedAfterAnnotation = "pod-succeed.stage.kwok.x-k8s.io/delay"
	FailAfterAnnotation    = "pod-fail.stage.kwok.x-k8s.io/delay"
)

// SimulateTraining makes KWOK finish the trainers of jobs that complete when
// their trainers do (TaskCompleted -> CompleteJob on a task): those tasks'
// pods exit successfully after the given duration. Other pods (pservers) run
// until the job stops them, as they would for real.
func SimulateTraining(job *unstructured.Unstructured, after string) {
	tasks, _, _ := unstructured.NestedSlice(job.Object, "spec", "tasks")
	for i, t := range tasks {
		task, _ := t.(map[string]interface{})
		policies, _, _ := unstructured.NestedSlice(task, "policies")
		completes := false
		for _, p := range policies {
			if pm, ok := p.(map[string]interface{}); ok && pm["event"] == "TaskCompleted" && pm["action"] == "CompleteJob" {
				completes = true
			}
		}
		if !completes {
			continue
		}
		_ = unstructured.SetNestedField(task, after, "template", "metadata", "annotations", SucceedAfterAnnotation)
		tasks[i] = task
	}
	_ = unstructured.SetNestedSlice(job.Object, tasks, "spec", "tasks")
}

// CompletesWithTrainers reports whether a job completes when one of its
// tasks does (TaskCompleted -> CompleteJob), as Paddle jobs whose trainers
// finish do.
func CompletesWithTrainers(j *batchv1alpha1.Job) bool {
	for _, t := range j.Spec.Tasks {
		for _, p := range t.Policies {
			if p.Event == busv1alpha1.TaskCompletedEvent && p.Action == busv1alpha1.CompleteJobAction {
				return true
			}
		}
	}
	return false
}
