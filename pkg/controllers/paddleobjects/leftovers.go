package paddleobjects

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// svcPlugin is Volcano's svc job plugin (pkg/controllers/job/plugins/svc).
const svcPlugin = "svc"

// LeftoversRemovedReason is the reason of the Normal event a finished job
// gets when the svc plugin's objects were removed for it.
const LeftoversRemovedReason = "PaddleSvcObjectsRemoved"

// finished are the phases after which Volcano runs no plugin hook of the
// job again.
var finished = map[batch.JobPhase]bool{batch.Completed: true, batch.Failed: true, batch.Terminated: true, batch.Aborted: true}

// removeSvcLeftovers deletes what Volcano's svc plugin created for a
// finished Paddle job that the paddle plugin rejected. svc's OnJobAdd
// creates the Service <job>, the ConfigMap <job>-svc and the NetworkPolicy
// <job>, and its OnJobDelete removes them only when the job's status
// records plugin-svc (svc.go: OnJobDelete). When paddle rejects the job in
// the same round of OnJobAdd hooks, Volcano's initiateJob returns before it
// writes the status, so that record never lands and the objects stay until
// the Job itself is deleted. Once the job is finished no hook runs again, so
// removing them cannot race a re-creation. Only objects the Job controls
// are touched.
func (c *Controller) removeSvcLeftovers(ctx context.Context, job *batch.Job) error {
	if _, ok := job.Spec.Plugins[svcPlugin]; !ok || !finished[job.Status.State.Phase] {
		return nil
	}
	if job.Status.ControlledResources["plugin-"+svcPlugin] == svcPlugin {
		return nil // svc's own OnJobDelete cleans up
	}
	ns := job.Namespace
	type object struct {
		kind, name string
		get        func() (metav1.Object, error)
		del        func(metav1.DeleteOptions) error
	}
	objects := []object{
		{"Service", job.Name,
			func() (metav1.Object, error) {
				return c.Kube.CoreV1().Services(ns).Get(ctx, job.Name, metav1.GetOptions{})
			},
			func(o metav1.DeleteOptions) error { return c.Kube.CoreV1().Services(ns).Delete(ctx, job.Name, o) }},
		{"ConfigMap", job.Name + "-" + svcPlugin,
			func() (metav1.Object, error) {
				return c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, job.Name+"-"+svcPlugin, metav1.GetOptions{})
			},
			func(o metav1.DeleteOptions) error {
				return c.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, job.Name+"-"+svcPlugin, o)
			}},
		{"NetworkPolicy", job.Name,
			func() (metav1.Object, error) {
				return c.Kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, job.Name, metav1.GetOptions{})
			},
			func(o metav1.DeleteOptions) error {
				return c.Kube.NetworkingV1().NetworkPolicies(ns).Delete(ctx, job.Name, o)
			}},
	}
	var removed []string
	for _, o := range objects {
		obj, err := o.get()
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s %s/%s of finished job %s: %w", o.kind, ns, o.name, job.Name, err)
		}
		if !metav1.IsControlledBy(obj, job) {
			continue
		}
		uid := obj.GetUID()
		if err := o.del(metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting %s %s/%s of finished job %s: %w", o.kind, ns, o.name, job.Name, err)
		}
		removed = append(removed, o.kind+" "+o.name)
	}
	if len(removed) == 0 {
		return nil
	}
	klog.InfoS("Removed the svc plugin's objects of a rejected Paddle job", "job", klog.KObj(job), "objects", removed)
	c.Recorder.Event(job, v1.EventTypeNormal, LeftoversRemovedReason,
		fmt.Sprintf("removed %v: Volcano's svc plugin created them before the paddle plugin rejected the job, and does not remove them itself", removed))
	return nil
}
