package paddlekube

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// EnsureService makes sure the job's headless Service exists, selects the
// job's pods and publishes not-ready addresses (paddlejob.NewService says
// why).
//
// Volcano's svc plugin creates a Service of the same name (without
// publishNotReadyAddresses unless asked). Plugins run in map order, so
// either may come first: whoever creates it, this ends with one Service that
// publishes not-ready addresses.
func EnsureService(ctx context.Context, client kubernetes.Interface, job *batch.Job) error {
	svcs := client.CoreV1().Services(job.Namespace)
	svc, err := svcs.Get(ctx, job.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		svc = paddlejob.NewService(job)
		if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// The svc plugin won the race; check what it made.
				return EnsureService(ctx, client, job)
			}
			return fmt.Errorf("creating headless Service %s/%s: %w", job.Namespace, job.Name, err)
		}
		klog.V(3).InfoS("Created headless Service for Paddle job", "job", klog.KObj(job))
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Service %s/%s: %w", job.Namespace, job.Name, err)
	}
	if !metav1.IsControlledBy(svc, job) {
		return &serviceConflictError{job: job, svc: svc}
	}
	if svc.Spec.ClusterIP != v1.ClusterIPNone {
		return &serviceConflictError{job: job, svc: svc}
	}
	if svc.Spec.PublishNotReadyAddresses {
		return nil
	}
	patch, _ := json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"publishNotReadyAddresses": true}})
	if _, err := svcs.Patch(ctx, job.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("setting publishNotReadyAddresses on Service %s/%s: %w", job.Namespace, job.Name, err)
	}
	klog.V(3).InfoS("Made the job's headless Service publish not-ready addresses", "job", klog.KObj(job))
	return nil
}

// DeleteService removes the Service if this job owns it (the garbage
// collector would too, through the owner reference; deleting it here frees
// the name at once for a job re-created under the same name).
func DeleteService(ctx context.Context, client kubernetes.Interface, job *batch.Job) error {
	return deleteIfOwned[*v1.Service](ctx, client.CoreV1().Services(job.Namespace), job, "Service", job.Name)
}

// serviceConflictError: a Service with the job's name exists that this job
// does not own; taking it over could break another workload.
type serviceConflictError struct {
	job *batch.Job
	svc *v1.Service
}

func (e *serviceConflictError) Error() string {
	owner := "no owner"
	if ref := metav1.GetControllerOf(e.svc); ref != nil {
		owner = fmt.Sprintf("%s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
	}
	if metav1.IsControlledBy(e.svc, e.job) {
		return fmt.Sprintf("Service %s/%s of this job is not headless (clusterIP %s); Paddle's peers need per-pod DNS names: delete the Service and the plugin re-creates it",
			e.svc.Namespace, e.svc.Name, e.svc.Spec.ClusterIP)
	}
	return fmt.Sprintf("Service %s/%s already exists and belongs to %s, not to this job; the plugin needs that name for the pods' DNS names: rename the job or delete the Service",
		e.svc.Namespace, e.svc.Name, owner)
}
