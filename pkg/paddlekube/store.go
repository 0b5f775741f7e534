package paddlekube

// The etcd of an elastic job (paddlejob/store.go: what it is and why each
// job has its own): created by the plugin when the job starts (OnJobAdd,
// before Volcano creates the job's PodGroup and pods), re-created by the
// paddleelastic controller when it is lost, and deleted with the job
// (OnJobDelete, which Volcano runs on completion, termination and every
// restart of the whole job; the owner reference covers a controller that
// missed it).
//
// Each object is used only while the job controls it
// (metav1.IsControlledBy). One that exists under the store's name and is
// someone else's is neither used, adopted, changed nor deleted: the call
// fails with a *StoreConflictError (the plugin's OnJobAdd returns it, as
// for a foreign headless Service, service.go: so Volcano creates no
// PodGroup and no pod for the job; the paddleelastic controller reports
// it), and the job gets a Warning event (paddlejob.StoreConflictReason).
// A foreign Service would send the trainers elsewhere, a foreign
// NetworkPolicy (selecting nothing, say) leave the store open, a foreign
// pod be the store.

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// StoreConflictError: an object the elastic job's etcd store needs exists
// and the job does not control it.
type StoreConflictError struct {
	// Job is namespace/name.
	Job string
	// Kind is the object's kind: Pod, Service, EndpointSlice or
	// NetworkPolicy.
	Kind            string
	Namespace, Name string
	// Owner describes the object's controller, or "no owner".
	Owner string
	// Why, for an EndpointSlice under another name, says how it claims
	// the store's Service.
	Why string
}

func (e *StoreConflictError) Error() string {
	const kept = "the plugin neither uses nor deletes it, and the job's store is not started or repaired over it"
	if e.Why != "" {
		return fmt.Sprintf("%s %s/%s (%s) belongs to %s, not to elastic Paddle job %s, and would add addresses to the job's etcd store; %s: delete the %s or remove that label",
			e.Kind, e.Namespace, e.Name, e.Why, e.Owner, e.Job, kept, e.Kind)
	}
	return fmt.Sprintf("%s %s/%s exists and belongs to %s, not to elastic Paddle job %s, which needs that name for its etcd store; %s: delete or rename the %s (or rename the job)",
		e.Kind, e.Namespace, e.Name, e.Owner, e.Job, kept, e.Kind)
}

func newStoreConflict(job *batch.Job, kind string, obj metav1.Object) *StoreConflictError {
	owner := "no owner"
	if ref := metav1.GetControllerOf(obj); ref != nil {
		owner = fmt.Sprintf("%s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
	}
	return &StoreConflictError{Job: job.Namespace + "/" + job.Name, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Owner: owner}
}

// getCreator is the part of a typed client-go client that ensureOwned
// uses.
type getCreator[T metav1.Object] interface {
	getDeleter[T]
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
}

// ensureOwned returns the object want names, created if missing, or a
// *StoreConflictError if one exists that job does not control. A create
// that loses a race reads the winner again.
func ensureOwned[T metav1.Object](ctx context.Context, c getCreator[T], job *batch.Job, kind string, want T) (T, error) {
	var zero T
	for try := 0; try < 2; try++ {
		got, err := c.Get(ctx, want.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			created, err := c.Create(ctx, want, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return zero, fmt.Errorf("creating etcd %s %s/%s of elastic Paddle job: %w", kind, want.GetNamespace(), want.GetName(), err)
			}
			klog.V(3).InfoS("Created etcd object of elastic Paddle job", "job", klog.KObj(job), "kind", kind, "name", want.GetName())
			return created, nil
		case err != nil:
			return zero, fmt.Errorf("reading etcd %s %s/%s: %w", kind, want.GetNamespace(), want.GetName(), err)
		case !metav1.IsControlledBy(got, job):
			return zero, newStoreConflict(job, kind, got)
		}
		return got, nil
	}
	return zero, fmt.Errorf("etcd %s %s/%s was created and deleted meanwhile; retrying", kind, want.GetNamespace(), want.GetName())
}

// EnsureEtcdOf creates the elastic job's etcd objects that are missing,
// brings the job's own Service, NetworkPolicy and EndpointSlice to what
// paddlejob builds, creates the etcd pod and writes the EndpointSlice from
// it. An etcd pod still terminating from the job's previous incarnation is
// waited for (the error makes the caller retry): the new launchers must
// not meet the old rendezvous.
func EnsureEtcdOf(ctx context.Context, client kubernetes.Interface, job *batch.Job, l *paddlejob.Layout) error {
	if l.Elastic == nil {
		return nil
	}
	if err := ensureEtcdAddress(ctx, client, job, l); err != nil {
		return err
	}
	return ensureEtcdPod(ctx, client, job, l)
}

// ensureEtcdAddress creates or brings to what paddlejob builds the store's
// objects other than its pod: the Service, the NetworkPolicy, and (with no
// endpoint while there is no pod) the EndpointSlice. They cost nothing
// while the job waits in its queue.
func ensureEtcdAddress(ctx context.Context, client kubernetes.Interface, job *batch.Job, l *paddlejob.Layout) error {
	name := paddlejob.EtcdName(job.Name)
	// The inert objects first, the pod last: a name someone else holds
	// stops the store before its pod is created. The Service is
	// selector-less, so it publishes nothing until the EndpointSlice does.
	if err := foreignSlices(ctx, client, job); err != nil {
		return err
	}
	// A pod someone else holds under the store's name is reported now,
	// not when the trainers are created.
	switch pod, err := client.CoreV1().Pods(job.Namespace).Get(ctx, name, metav1.GetOptions{}); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading etcd Pod %s/%s: %w", job.Namespace, name, err)
	case !metav1.IsControlledBy(pod, job):
		return newStoreConflict(job, "Pod", pod)
	case pod.DeletionTimestamp != nil:
		return fmt.Errorf("etcd pod %s/%s of the job's previous run is still terminating; retrying", job.Namespace, name)
	}
	if err := ensureEtcdService(ctx, client, job); err != nil {
		return err
	}
	want := paddlejob.EtcdNetworkPolicy(job, l)
	nps := client.NetworkingV1().NetworkPolicies(job.Namespace)
	np, err := ensureOwned[*networkingv1.NetworkPolicy](ctx, nps, job, "NetworkPolicy", want)
	if err != nil {
		return err
	}
	if !equality.Semantic.DeepEqual(np.Spec, want.Spec) {
		// The job's own, from an earlier version of the plugin (or
		// edited): the store admits whom this version says.
		np = np.DeepCopy()
		np.Spec = want.Spec
		if _, err := nps.Update(ctx, np, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating etcd NetworkPolicy %s/%s: %w", job.Namespace, name, err)
		}
	}
	return nil
}

// ensureEtcdPod creates the store's pod if it is missing and writes its
// address.
func ensureEtcdPod(ctx context.Context, client kubernetes.Interface, job *batch.Job, l *paddlejob.Layout) error {
	pod, err := ensureOwned[*v1.Pod](ctx, client.CoreV1().Pods(job.Namespace), job, "Pod", paddlejob.EtcdPod(job, l))
	if err != nil {
		return err
	}
	if pod.DeletionTimestamp != nil {
		return fmt.Errorf("etcd pod %s/%s of the job's previous run is still terminating; retrying", job.Namespace, pod.Name)
	}
	return writeEtcdEndpoints(ctx, client, job, pod)
}

// storeStarted remembers the jobs (UID, incarnation) whose store pod
// EnsureEtcdStarted has made sure of, so that it costs API calls only for
// a job's first pod.
var storeStarted = &ensuredCache{entries: map[ensuredKey]*ensuredEntry{}}

// EnsureEtcdStarted makes sure the elastic job's store pod exists before
// the first of its trainer pods is created (the job plugin's OnPodCreate):
// Volcano creates a job's pods only once its PodGroup has left the queue
// (Inqueue), so a job that waits there runs no store. The cost: the
// store starts with the trainers instead of before them (its pod is
// placed, started and Ready while they are placed and started, and their
// DNS barrier waits for it). Once per job incarnation.
func EnsureEtcdStarted(ctx context.Context, client kubernetes.Interface, job *batch.Job, l *paddlejob.Layout) error {
	if l.Elastic == nil {
		return nil
	}
	return storeStarted.once(job, l.Incarnation, func() error { return ensureEtcdPod(ctx, client, job, l) })
}

// foreignSlices fails on an EndpointSlice under the store's name that the
// job does not control, or of another name that claims the store's Service (label kubernetes.io/service-name): CoreDNS answers a
// headless name from every slice so labelled, whoever made it
// (plugin/kubernetes: its EndpointSlice index is by that label), so it
// would add its addresses to the store's.
func foreignSlices(ctx context.Context, client kubernetes.Interface, job *batch.Job) error {
	name := paddlejob.EtcdName(job.Name)
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name}).String()
	list, err := client.DiscoveryV1().EndpointSlices(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("listing the EndpointSlices of etcd Service %s/%s: %w", job.Namespace, name, err)
	}
	named := false
	for i := range list.Items {
		s := &list.Items[i]
		named = named || s.Name == name
		if !metav1.IsControlledBy(s, job) {
			e := newStoreConflict(job, "EndpointSlice", s)
			if s.Name != name {
				e.Why = fmt.Sprintf("label %s=%s", discoveryv1.LabelServiceName, name)
			}
			return e
		}
	}
	if named {
		return nil
	}
	// The job's own slice always carries the label; one under the store's
	// name without it is someone else's, found here before the pod is
	// created.
	s, err := client.DiscoveryV1().EndpointSlices(job.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading etcd EndpointSlice %s/%s: %w", job.Namespace, name, err)
	case !metav1.IsControlledBy(s, job):
		return newStoreConflict(job, "EndpointSlice", s)
	}
	return nil
}

// ensureEtcdService creates the job's etcd Service, or replaces the job's
// own if it has a selector (made by an earlier version of the plugin): a
// selector would let any pod carrying the etcd pod's labels join the
// address (paddlejob.EtcdService).
func ensureEtcdService(ctx context.Context, client kubernetes.Interface, job *batch.Job) error {
	svcs := client.CoreV1().Services(job.Namespace)
	svc, err := ensureOwned[*v1.Service](ctx, svcs, job, "Service", paddlejob.EtcdService(job))
	if err != nil {
		return err
	}
	if len(svc.Spec.Selector) == 0 && svc.Spec.ClusterIP == v1.ClusterIPNone {
		return nil
	}
	if err := deleteSame(ctx, svcs, job, "etcd Service", svc); err != nil {
		return err
	}
	klog.InfoS("Replacing the etcd Service of an elastic Paddle job with a selector-less one", "job", klog.KObj(job))
	_, err = ensureOwned[*v1.Service](ctx, svcs, job, "Service", paddlejob.EtcdService(job))
	return err
}

// EnsureEtcdEndpoints writes the EndpointSlice of the job's etcd Service
// from pod, the etcd pod as read (nil when it is gone): its IP and
// readiness (paddlejob.EtcdEndpointSlice). A pod the job does not control
// is never published. The paddleelastic controller calls it on every change
// of the etcd pod; EnsureEtcdOf when it creates the store.
func EnsureEtcdEndpoints(ctx context.Context, client kubernetes.Interface, job *batch.Job, pod *v1.Pod) error {
	if pod != nil && !metav1.IsControlledBy(pod, job) {
		return newStoreConflict(job, "Pod", pod)
	}
	if err := foreignSlices(ctx, client, job); err != nil {
		return err
	}
	return writeEtcdEndpoints(ctx, client, job, pod)
}

// writeEtcdEndpoints is EnsureEtcdEndpoints after its checks.
func writeEtcdEndpoints(ctx context.Context, client kubernetes.Interface, job *batch.Job, pod *v1.Pod) error {
	want := paddlejob.EtcdEndpointSlice(job, pod)
	slices := client.DiscoveryV1().EndpointSlices(job.Namespace)
	got, err := ensureOwned[*discoveryv1.EndpointSlice](ctx, slices, job, "EndpointSlice", want)
	if err != nil {
		return err
	}
	if got.AddressType != want.AddressType {
		// Immutable (discovery/v1 validation): a slice of the other
		// family is replaced.
		if err := deleteSame(ctx, slices, job, "etcd EndpointSlice", got); err != nil {
			return err
		}
		_, err := ensureOwned[*discoveryv1.EndpointSlice](ctx, slices, job, "EndpointSlice", want)
		return err
	}
	if equality.Semantic.DeepEqual(got.Endpoints, want.Endpoints) && equality.Semantic.DeepEqual(got.Ports, want.Ports) &&
		equality.Semantic.DeepEqual(got.Labels, want.Labels) {
		return nil
	}
	got = got.DeepCopy()
	got.Endpoints, got.Ports, got.Labels = want.Endpoints, want.Ports, want.Labels
	if _, err := slices.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating etcd EndpointSlice %s/%s: %w", job.Namespace, got.Name, err)
	}
	klog.V(3).InfoS("Updated the etcd address of an elastic Paddle job", "job", klog.KObj(job), "endpoints", len(want.Endpoints))
	return nil
}

// EnsureEtcd re-creates a running elastic job's etcd objects (the
// paddleelastic controller calls it when one is gone), the pod only when
// withPod (the job's trainers exist: a job that waits in its queue runs
// no store); s is the job's arguments (paddlejob.Read).
func EnsureEtcd(ctx context.Context, client kubernetes.Interface, job *batch.Job, s paddlejob.Spec, withPod bool) error {
	l, err := s.Validate(job)
	if err != nil {
		return err
	}
	if l.Elastic == nil {
		return nil
	}
	if err := ensureEtcdAddress(ctx, client, job, l); err != nil {
		return err
	}
	if !withPod {
		return nil
	}
	return ensureEtcdPod(ctx, client, job, l)
}

// DeleteEtcd deletes the job's etcd objects that this job owns. The
// caller asks only for a job whose arguments declare it elastic; the owner
// reference covers a job whose arguments changed.
func DeleteEtcd(ctx context.Context, client kubernetes.Interface, job *batch.Job) error {
	name := paddlejob.EtcdName(job.Name)
	if err := deleteIfOwned[*v1.Pod](ctx, client.CoreV1().Pods(job.Namespace), job, "etcd Pod", name); err != nil {
		return err
	}
	if err := deleteIfOwned[*v1.Service](ctx, client.CoreV1().Services(job.Namespace), job, "etcd Service", name); err != nil {
		return err
	}
	if err := deleteIfOwned[*discoveryv1.EndpointSlice](ctx, client.DiscoveryV1().EndpointSlices(job.Namespace), job, "etcd EndpointSlice", name); err != nil {
		return err
	}
	return deleteIfOwned[*networkingv1.NetworkPolicy](ctx, client.NetworkingV1().NetworkPolicies(job.Namespace), job, "etcd NetworkPolicy", name)
}
