package paddleobjects

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"
	"volcano.sh/apis/pkg/apis/helpers"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// ConfigMapTakenReason is the reason of the Warning event a job gets when
// the ConfigMap name of its next incarnation is held by an object it does
// not control.
const ConfigMapTakenReason = "PaddleConfigMapTaken"

// ResumedReason is the reason of the Normal event a job gets when its
// restart was resumed.
const ResumedReason = "PaddleRestartResumed"

// A restart of a whole job can stall in Restarting for good (volcano.sh/volcano
// v1.14.1, pkg/controllers/job): killJob deletes the pods, calls the
// plugins' OnJobDelete, writes the status and deletes the PodGroup last.
// The job leaves Restarting only in a syncJob that finds no PodGroup in its
// lister, creates one, and later sees it enqueued. The PodGroup informer
// has no delete handler (job_controller.go: UpdateFunc only), so that
// syncJob needs some other event of the job after the lister has seen the
// deletion. The pods' deletion events are those events; when they all
// arrive while killJob still runs (a slow client: --kube-api-qps=5), every
// one of them is handled right after killJob against the stale PodGroup,
// and nothing ever wakes the job again. docs/security.md has the upstream
// issue text.
//
// This controller sees the PodGroup's deletion (the same shared informer
// as the job controller's lister) and, a moment later, if the Paddle job
// is still Restarting without a PodGroup, issues Volcano's SyncJob command
// for it: the sync the job controller missed.

func (c *Controller) podGroupDeleted(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pg, ok := obj.(*scheduling.PodGroup)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("paddleobjects: unexpected object %T", obj))
		return
	}
	ref := metav1.GetControllerOf(pg)
	if ref == nil || ref.Kind != helpers.JobKind.Kind || ref.APIVersion != helpers.JobKind.GroupVersion().String() {
		return
	}
	c.queue.AddAfter(pg.Namespace+"/"+ref.Name, settle)
}

// resumeRestart issues a SyncJob command for a Restarting job that has no
// PodGroup; Volcano's job controller runs it as any other request
// (processNextCommand) and deletes the command.
func (c *Controller) resumeRestart(ctx context.Context, job *batch.Job) error {
	if c.hasPodGroup(job) {
		return nil // Volcano's sync found the deletion: it goes on by itself
	}
	cmd := &bus.Command{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       job.Namespace,
			GenerateName:    job.Name + "-paddle-sync-",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, helpers.JobKind)},
		},
		Action:       string(bus.SyncJobAction),
		TargetObject: metav1.NewControllerRef(job, helpers.JobKind),
		Reason:       ResumedReason,
		Message:      "the job is Restarting without a PodGroup and no event of it is pending",
	}
	if _, err := c.VC.BusV1alpha1().Commands(job.Namespace).Create(ctx, cmd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("issuing SyncJob for Restarting Paddle job %s/%s: %w", job.Namespace, job.Name, err)
	}
	klog.InfoS("Resumed a restart that Volcano's job controller left without a PodGroup", "job", klog.KObj(job), "version", job.Status.Version)
	c.Recorder.Event(job, v1.EventTypeNormal, ResumedReason,
		"issued SyncJob: the restart deleted the PodGroup after the job's last pending event, so Volcano's job controller would not have synced the job again")
	return nil
}

// hasPodGroup looks the job's PodGroup up under both names Volcano uses
// (pkg/controllers/job/job_controller_actions.go: getPodGroupByJob).
func (c *Controller) hasPodGroup(job *batch.Job) bool {
	for _, name := range []string{job.Name + "-" + string(job.UID), job.Name} {
		pg, err := c.pgs.PodGroups(job.Namespace).Get(name)
		if err == nil && metav1.IsControlledBy(pg, job) {
			return true
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return true // cannot tell: leave the job to Volcano
		}
	}
	return false
}

// reportForeignConfigMap warns on the job when the ConfigMap of its
// current incarnation exists and the job does not control it (someone
// created <job>-paddle-v<n> ahead of the restart). The job plugin neither
// adopts nor deletes such a ConfigMap (pkg/paddlekube configmap.go: reconcileConfigMap);
// its error ends up only in the controller's log when it comes from
// OnPodCreate during a restart (Volcano records no event for a pod-create
// plugin error), so the user learns it here, with the object's name.
func (c *Controller) reportForeignConfigMap(ctx context.Context, job *batch.Job) error {
	name := paddlejob.ConfigMapName(job.Name, int(job.Status.Version))
	cm, err := c.Kube.CoreV1().ConfigMaps(job.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading ConfigMap %s/%s of Paddle job %s: %w", job.Namespace, name, job.Name, err)
	case metav1.IsControlledBy(cm, job):
		return nil
	}
	owner := "no owner"
	if ref := metav1.GetControllerOf(cm); ref != nil {
		owner = fmt.Sprintf("%s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
	}
	klog.InfoS("The ConfigMap name of a Paddle job's incarnation is taken", "job", klog.KObj(job), "configMap", name, "owner", owner)
	c.Recorder.Eventf(job, v1.EventTypeWarning, ConfigMapTakenReason,
		"ConfigMap %s/%s already exists and does not belong to Paddle job %s/%s (it has %s): the job's pods of incarnation %d read their peer lists under that name, so they are not created; delete that ConfigMap or rename the job",
		job.Namespace, name, job.Namespace, job.Name, owner, job.Status.Version)
	return nil
}
