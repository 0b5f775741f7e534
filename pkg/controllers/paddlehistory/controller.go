// Package paddlehistory is a controller of vc-controller-manager-paddle that
// records the run time of every finished Volcano Job on its Queue
// (paddleapi.RunTimeHistoryAnnotation), keyed by what was known of the job
// at submission (pkg/jobhistory). The scheduler plugin reads it to predict
// how long waiting jobs will run. A finished job lives only until its TTL
// or its deletion; the Queue keeps the history across scheduler and
// controller restarts, bounded (jobhistory.MaxQueueKeys keys, an
// observation weighing half after jobhistory.DefaultHalfLife).
package paddlehistory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/volcano/pkg/controllers/framework"

	"github.com/volcano-paddle/volcano-paddle/pkg/controllers/controllerkit"
	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Name is the controller's name for --controllers.
const Name = "paddle-history-controller"

// Work items: a finished job to read, or a queue whose recorded jobs are
// to be written.
const (
	jobItem   = "job/"
	queueItem = "queue/"
)

// defaultFlushDelay gathers the jobs that end close together into one
// write of their queue.
const defaultFlushDelay = 2 * time.Second

func init() {
	framework.RegisterController(&Controller{})
}

// Controller records finished jobs on their queues.
type Controller struct {
	controllerkit.Base
	queue      controllerkit.Queue[string]
	clock      func() time.Time
	flushDelay time.Duration

	mu sync.Mutex
	// pending: per queue, the records read and not yet written.
	pending map[string][]pendingRecord
}

type pendingRecord struct {
	uid string
	rec jobhistory.Record
}

var _ framework.Controller = &Controller{}

// Name implements framework.Controller.
func (c *Controller) Name() string { return Name }

// Initialize implements framework.Controller.
func (c *Controller) Initialize(opt *framework.ControllerOption) error {
	base, jobInformer := controllerkit.NewBase(opt, batch.JobNameKey)
	c.Base = base
	c.queue = controllerkit.NewQueue[string](Name)
	c.clock = time.Now
	c.flushDelay = defaultFlushDelay
	c.pending = map[string][]pendingRecord{}
	_, err := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj interface{}) {
			old, ok1 := oldObj.(*batch.Job)
			job, ok2 := newObj.(*batch.Job)
			if ok1 && ok2 && jobhistory.Finished(job) && !jobhistory.Finished(old) {
				c.queue.Add(jobItem + job.Namespace + "/" + job.Name)
			}
		},
	})
	return err
}

// Run implements framework.Controller.
func (c *Controller) Run(stopCh <-chan struct{}) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !c.Start(stopCh, Name) {
		return
	}
	c.enqueueFinished()
	controllerkit.Workers(stopCh, 1, c.processNext)
	<-stopCh
}

// enqueueFinished queues the jobs that finished before the controller
// started, in the order they finished: each queue's history then records
// those it has not (QueueHistory.Record).
func (c *Controller) enqueueFinished() {
	jobs, err := c.Jobs.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "Listing jobs to record those that finished while the controller was down")
		return
	}
	var done []*batch.Job
	for _, j := range jobs {
		if jobhistory.Finished(j) {
			done = append(done, j)
		}
	}
	slices.SortFunc(done, func(a, b *batch.Job) int {
		return a.Status.State.LastTransitionTime.Time.Compare(b.Status.State.LastTransitionTime.Time)
	})
	// Each queue's history is read once, and a job it already holds, or
	// would refuse as too old, is not queued: reading one means listing
	// its pods, and a restart would otherwise do that for every finished
	// job the cluster still keeps. A job's pods end by the time its phase
	// last changed, so a job refused by that time is refused by its own.
	histories := map[string]*jobhistory.QueueHistory{}
	skipped := 0
	for _, j := range done {
		q := jobhistory.QueueOf(j)
		h, read := histories[q]
		if !read {
			h = c.queueHistory(q)
			histories[q] = h
		}
		if h != nil && !h.Takes(string(j.UID), j.Status.State.LastTransitionTime.Time) {
			skipped++
			continue
		}
		c.queue.Add(jobItem + j.Namespace + "/" + j.Name)
	}
	klog.V(2).InfoS("Queued the jobs that finished while the controller was down", "finished", len(done), "alreadyRecorded", skipped)
}

// queueHistory is queue q's history as its annotation has it now; nil when
// it cannot be read (then every job of q is read, and Record decides).
func (c *Controller) queueHistory(q string) *jobhistory.QueueHistory {
	queue, err := c.VC.SchedulingV1beta1().Queues().Get(context.Background(), q, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	h, err := jobhistory.NewQueueHistory(q, queue.Annotations[paddleapi.RunTimeHistoryAnnotation])
	if err != nil {
		return nil
	}
	return h
}

func (c *Controller) processNext() bool {
	return controllerkit.ProcessNext(c.queue, 5, func(item string) error { return c.sync(context.Background(), item) },
		func(item string, err error) { klog.ErrorS(err, "Recording a finished job's run time", "item", item) })
}

func (c *Controller) sync(ctx context.Context, item string) error {
	if q, ok := strings.CutPrefix(item, queueItem); ok {
		return c.flush(ctx, q)
	}
	key, _ := strings.CutPrefix(item, jobItem)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	job, err := c.Jobs.Jobs(ns).Get(name)
	if err != nil || !jobhistory.Finished(job) {
		return nil // gone, or running again
	}
	pods, err := c.jobPods(ctx, job)
	if err != nil {
		return err
	}
	rec, err := jobhistory.FromJob(job, pods)
	var skip *jobhistory.Skip
	if errors.As(err, &skip) {
		klog.V(4).InfoS("Not recording a finished job", "job", klog.KObj(job), "reason", skip.Reason, "detail", skip.Detail)
		return nil
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.pending[rec.Queue] = append(c.pending[rec.Queue], pendingRecord{uid: string(job.UID), rec: rec})
	c.mu.Unlock()
	c.queue.AddAfter(queueItem+rec.Queue, c.flushDelay)
	return nil
}

// jobPods are the pods Volcano created for job (its volcano.sh/job-name
// label); FromJob keeps the job's own.
func (c *Controller) jobPods(ctx context.Context, job *batch.Job) ([]*corev1.Pod, error) {
	list, err := c.Kube.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batch.JobNameKey + "=" + job.Name})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of job %s/%s: %w", job.Namespace, job.Name, err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods, nil
}

// flush writes the pending records of queue q into its annotation, in
// the order the jobs ended. A conflicting write is read and tried again;
// an annotation that is not a history is replaced, and said so.
func (c *Controller) flush(ctx context.Context, q string) error {
	c.mu.Lock()
	recs := c.pending[q]
	delete(c.pending, q)
	c.mu.Unlock()
	if len(recs) == 0 {
		return nil
	}
	slices.SortStableFunc(recs, func(a, b pendingRecord) int { return jobhistory.Known(a.rec).Compare(jobhistory.Known(b.rec)) })
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		queue, err := c.VC.SchedulingV1beta1().Queues().Get(ctx, q, metav1.GetOptions{})
		if err != nil {
			return err
		}
		h, err := jobhistory.NewQueueHistory(q, queue.Annotations[paddleapi.RunTimeHistoryAnnotation])
		if err != nil {
			klog.ErrorS(err, "Replacing a queue's run-time history that cannot be read", "queue", q, "annotation", paddleapi.RunTimeHistoryAnnotation)
			h, _ = jobhistory.NewQueueHistory(q, "")
		}
		added := 0
		for _, r := range recs {
			if h.Record(r.uid, r.rec) {
				added++
			}
		}
		if added == 0 {
			return nil
		}
		ann, err := h.Annotation(c.clock())
		if err != nil {
			return err
		}
		if queue.Annotations == nil {
			queue.Annotations = map[string]string{}
		}
		queue.Annotations[paddleapi.RunTimeHistoryAnnotation] = ann
		if _, err := c.VC.SchedulingV1beta1().Queues().Update(ctx, queue, metav1.UpdateOptions{}); err != nil {
			return err
		}
		klog.V(3).InfoS("Recorded finished jobs' run times", "queue", q, "jobs", added, "bytes", len(ann))
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil // the queue is gone, and its history with it
	}
	if err != nil {
		// Put them back for the retry.
		c.mu.Lock()
		c.pending[q] = append(recs, c.pending[q]...)
		c.mu.Unlock()
	}
	return err
}
