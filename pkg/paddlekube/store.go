package paddlekube

// The etcd of an elastic job (paddlejob/store.go: what it is and why each
// job has its own): created by the plugin when the job starts (OnJobAdd,
// before Volcano creates the job's PodGroup and pods), re-created by the
// paddleelastic controller when it is lost, and deleted with the job
// (OnJobDelete, which Volcano runs on completion, termination and every
// restart of the whole job; the owner reference covers a controller that
// missed it).

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// EnsureEtcdOf creates the elastic job's etcd objects that are missing. An
// etcd pod still terminating from the job's previous incarnation is waited
// for (the error makes Volcano retry the sync): the new launchers must not
// meet the old rendezvous.
func EnsureEtcdOf(ctx context.Context, client kubernetes.Interface, job *batch.Job, l *paddlejob.Layout) error {
	if l.Elastic == nil {
		return nil
	}
	name := paddlejob.EtcdName(job.Name)
	pods := client.CoreV1().Pods(job.Namespace)
	pod, err := pods.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := pods.Create(ctx, paddlejob.EtcdPod(job, l), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating etcd pod %s/%s of elastic Paddle job: %w", job.Namespace, name, err)
		}
		klog.V(3).InfoS("Created etcd pod of elastic Paddle job", "job", klog.KObj(job), "pod", name)
	case err != nil:
		return fmt.Errorf("reading etcd pod %s/%s: %w", job.Namespace, name, err)
	case !metav1.IsControlledBy(pod, job):
		return fmt.Errorf("pod %s/%s exists and does not belong to job %s; the elastic job needs that name for its etcd: rename the job or delete the pod", job.Namespace, name, job.Name)
	case pod.DeletionTimestamp != nil:
		return fmt.Errorf("etcd pod %s/%s of the job's previous run is still terminating; retrying", job.Namespace, name)
	}
	if _, err := client.CoreV1().Services(job.Namespace).Create(ctx, paddlejob.EtcdService(job), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating etcd Service %s/%s: %w", job.Namespace, name, err)
	}
	if _, err := client.NetworkingV1().NetworkPolicies(job.Namespace).Create(ctx, paddlejob.EtcdNetworkPolicy(job, l), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating etcd NetworkPolicy %s/%s: %w", job.Namespace, name, err)
	}
	return nil
}

// EnsureEtcd re-creates a running elastic job's etcd objects (the
// paddleelastic controller calls it when the etcd pod is gone); s is the
// job's arguments (paddlejob.Read).
func EnsureEtcd(ctx context.Context, client kubernetes.Interface, job *batch.Job, s paddlejob.Spec) error {
	l, err := s.Validate(job)
	if err != nil {
		return err
	}
	return EnsureEtcdOf(ctx, client, job, l)
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
	return deleteIfOwned[*networkingv1.NetworkPolicy](ctx, client.NetworkingV1().NetworkPolicies(job.Namespace), job, "etcd NetworkPolicy", name)
}
