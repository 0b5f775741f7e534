package paddle

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
	"volcano.sh/apis/pkg/apis/helpers"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// ManagedByLabel marks the Services this plugin creates.
const ManagedByLabel = "paddle.volcano.sh/managed-by"

// ensureService makes sure the job's headless Service exists, selects the
// job's pods and publishes not-ready addresses: Paddle resolves peers while
// they start (the TCP store client and the PS client resolve only once), so
// a name must resolve as soon as its pod has an IP, not when it is Ready.
//
// Volcano's svc plugin creates a Service of the same name (without
// publishNotReadyAddresses unless asked). Plugins run in map order, so
// either may come first: whoever creates it, this ends with one Service that
// publishes not-ready addresses.
func ensureService(ctx context.Context, client kubernetes.Interface, job *batch.Job) error {
	svcs := client.CoreV1().Services(job.Namespace)
	svc, err := svcs.Get(ctx, job.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		svc = &v1.Service{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:       job.Namespace,
				Name:            job.Name,
				Labels:          objectLabels(job),
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, helpers.JobKind)},
			},
			Spec: v1.ServiceSpec{
				ClusterIP:                v1.ClusterIPNone,
				Selector:                 jobSelector(job),
				PublishNotReadyAddresses: true,
			},
		}
		if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// The svc plugin won the race; check what it made.
				return ensureService(ctx, client, job)
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

func jobSelector(job *batch.Job) map[string]string {
	sel := map[string]string{batch.JobNameKey: job.Name, batch.JobNamespaceKey: job.Namespace}
	// The job's name is not enough: a job re-created under the same name
	// would list the old job's terminating pods, whose host names are the
	// new pods' (OnPodCreate labels pods with their job's UID; the pod rule
	// of pkg/webhooks/paddlepods keeps users from forging it).
	if job.UID != "" {
		sel[paddleapi.JobUIDLabel] = string(job.UID)
	}
	return sel
}

// deleteService removes the Service if this job owns it (the garbage
// collector would too, through the owner reference; deleting it here frees
// the name at once for a job re-created under the same name).
func deleteService(ctx context.Context, client kubernetes.Interface, job *batch.Job) error {
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
