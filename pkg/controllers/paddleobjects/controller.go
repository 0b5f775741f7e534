// Package paddleobjects is a controller of vc-controller-manager-paddle that
// re-creates the API objects a running Paddle job needs (its headless
// Service and the ConfigMap of its incarnation) within seconds when someone
// deletes them.
//
// The job plugin creates them in OnJobAdd, but Volcano calls plugin hooks
// only when it syncs the job (volcano.sh/volcano
// pkg/controllers/job/job_controller_actions.go: syncJob), and deleting a
// Service triggers no sync: without this controller the pods of a running
// job lose their DNS names until the job restarts.
//
// It also resumes a Paddle job that a restart left without a PodGroup
// (restart.go: a race in Volcano's job controller), names a foreign
// ConfigMap that holds a job's next incarnation name (restart.go), and
// removes what Volcano's svc plugin left of a rejected job (leftovers.go).
package paddleobjects

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulinglisters "volcano.sh/apis/pkg/client/listers/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/controllers/framework"

	"github.com/volcano-paddle/volcano-paddle/pkg/controllers/controllerkit"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlekube"
)

// Name is the controller's name for --controllers.
const Name = "paddle-objects-controller"

// RestoredReason is the reason of the Normal event a job gets when its
// objects were re-created.
const RestoredReason = "PaddleObjectsRestored"

// settle is how long after a deletion the job is looked at: Volcano's
// killJob deletes the Service (OnJobDelete) just before it writes the
// job's new phase, and the job lister must have seen that write, or a job
// that is completing would get its Service back.
const settle = time.Second

func init() {
	framework.RegisterController(&Controller{})
}

// Controller watches Services labelled with a Volcano job name and
// re-creates the Service of a started Paddle job when it is deleted.
type Controller struct {
	controllerkit.Base
	services corelisters.ServiceLister
	cms      corelisters.ConfigMapLister
	pgs      schedulinglisters.PodGroupLister
	queue    controllerkit.Queue[string]
}

var _ framework.Controller = &Controller{}

// Name implements framework.Controller.
func (c *Controller) Name() string { return Name }

// Initialize implements framework.Controller.
func (c *Controller) Initialize(opt *framework.ControllerOption) error {
	// Only objects labelled with a Volcano job: the job plugin's Service
	// and ConfigMaps carry that label.
	base, jobInformer := controllerkit.NewBase(opt, batch.JobNameKey)
	c.Base = base
	svcInformer := c.Factory.Core().V1().Services()
	c.services = svcInformer.Lister()
	cmInformer := c.Factory.Core().V1().ConfigMaps()
	c.cms = cmInformer.Lister()
	c.queue = controllerkit.NewQueue[string](Name)

	if _, err := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		// At start-up every existing job is looked at once: a Service
		// deleted while the controller was down comes back too.
		AddFunc: func(obj interface{}) {
			if job, ok := obj.(*batch.Job); ok && usesPaddle(job) {
				c.queue.Add(job.Namespace + "/" + job.Name)
			}
		},
		// A job that has just finished may have objects to remove
		// (leftovers.go).
		UpdateFunc: func(oldObj, newObj interface{}) {
			old, ok1 := oldObj.(*batch.Job)
			job, ok2 := newObj.(*batch.Job)
			if ok1 && ok2 && usesPaddle(job) && finished[job.Status.State.Phase] && !finished[old.Status.State.Phase] {
				c.queue.Add(job.Namespace + "/" + job.Name)
			}
		},
	}); err != nil {
		return err
	}
	for _, inf := range []cache.SharedIndexInformer{svcInformer.Informer(), cmInformer.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj interface{}) { c.objectDeleted(obj) },
		}); err != nil {
			return err
		}
	}
	// The PodGroup informer is the one Volcano's job controller reads
	// (the shared factory): when its deletion shows here, the job
	// controller's lister has seen it too.
	pgInformer := opt.VCSharedInformerFactory.Scheduling().V1beta1().PodGroups()
	c.pgs = pgInformer.Lister()
	if _, err := pgInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj interface{}) { c.podGroupDeleted(obj) },
	}); err != nil {
		return err
	}
	c.Synced = append(c.Synced, svcInformer.Informer().HasSynced, cmInformer.Informer().HasSynced, pgInformer.Informer().HasSynced)
	return nil
}

func (c *Controller) objectDeleted(obj interface{}) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, err := metaOf(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if job := m.GetLabels()[batch.JobNameKey]; job != "" {
		c.queue.AddAfter(m.GetNamespace()+"/"+job, settle)
	}
}

func metaOf(obj interface{}) (metav1.Object, error) {
	if m, ok := obj.(metav1.Object); ok {
		return m, nil
	}
	return nil, fmt.Errorf("paddleobjects: unexpected object %T", obj)
}

// Run implements framework.Controller.
func (c *Controller) Run(stopCh <-chan struct{}) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !c.Start(stopCh, Name) {
		return
	}
	controllerkit.Workers(stopCh, 1, c.processNext)
	<-stopCh
}

// processNext re-creates the objects of the next job queued; a job that
// fails goes back to the queue, with no bound.
func (c *Controller) processNext() bool {
	return controllerkit.ProcessNext(c.queue, -1, func(key string) error { return c.sync(context.Background(), key) },
		func(key string, err error) { klog.ErrorS(err, "Re-creating the objects of a Paddle job", "job", key) })
}

// sync re-creates the job's objects if the job is started (the plugin
// serves it and has not torn it down), not being deleted, and one is
// missing. Between a restart's teardown and the next start, OnJobAdd
// creates them itself.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	job, err := c.Jobs.Jobs(ns).Get(name)
	if err != nil {
		return nil // gone: its objects go with it (owner references)
	}
	if !usesPaddle(job) || job.DeletionTimestamp != nil {
		return nil
	}
	if finished[job.Status.State.Phase] {
		return c.removeSvcLeftovers(ctx, job)
	}
	switch job.Status.State.Phase {
	case batch.Pending, batch.Restarting:
		if err := c.reportForeignConfigMap(ctx, job); err != nil {
			return err
		}
	}
	if job.Status.State.Phase == batch.Restarting {
		return c.resumeRestart(ctx, job)
	}
	if !paddlejob.Serves(job) {
		return nil
	}
	switch job.Status.State.Phase {
	case batch.Pending, batch.Running:
	default:
		return nil
	}
	var missing []string
	if _, err := c.services.Services(ns).Get(job.Name); err != nil {
		// The lister sees only labelled Services; one that Volcano's svc
		// plugin created first carries no job label.
		_, err := c.Kube.CoreV1().Services(ns).Get(ctx, job.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			missing = append(missing, "headless Service "+job.Name)
		case err != nil:
			return err
		}
	}
	cm := paddlejob.ConfigMapName(job.Name, int(job.Status.Version))
	if _, err := c.cms.ConfigMaps(ns).Get(cm); err != nil {
		missing = append(missing, "ConfigMap "+cm)
	}
	if len(missing) == 0 {
		return nil
	}
	if err := paddlekube.EnsureObjects(ctx, c.Kube, job); err != nil {
		return err
	}
	what := strings.Join(missing, " and ")
	klog.InfoS("Re-created objects of a running Paddle job", "job", klog.KObj(job), "objects", what)
	c.Recorder.Event(job, v1.EventTypeNormal, RestoredReason,
		fmt.Sprintf("re-created the %s, deleted while the job runs (its pods' DNS names and peer lists depend on them)", what))
	return nil
}

func usesPaddle(job *batch.Job) bool {
	_, ok := job.Spec.Plugins[paddlejob.PluginName]
	return ok
}
