package paddlekube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// getDeleter is the part of a typed client-go client (PodInterface,
// ServiceInterface, ...) that deleteIfOwned uses.
type getDeleter[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	deleter
}

type deleter interface {
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// deleteIfOwned deletes the object name (a what, for the error) if job
// controls it; one that is gone or that job does not control is left alone.
func deleteIfOwned[T metav1.Object](ctx context.Context, c getDeleter[T], job *batch.Job, what, name string) error {
	obj, err := c.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(obj, job) {
		return nil
	}
	return deleteSame(ctx, c, job, what, obj)
}

// deleteSame deletes obj only while it is the object read: the UID
// precondition keeps it from deleting an object of the same name that
// replaced it meanwhile. One already gone or replaced is no error.
func deleteSame(ctx context.Context, c deleter, job *batch.Job, what string, obj metav1.Object) error {
	uid := obj.GetUID()
	err := c.Delete(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("deleting %s %s/%s of Paddle job %s: %w", what, job.Namespace, obj.GetName(), job.Name, err)
}
