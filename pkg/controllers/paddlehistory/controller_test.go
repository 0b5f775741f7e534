package paddlehistory

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
	vcinformer "volcano.sh/apis/pkg/client/informers/externalversions"
	"volcano.sh/volcano/pkg/controllers/framework"

	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

var t0 = time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)

// finished is a plain Volcano job of pods x 1 GPU in queue q that ran
// from start to end, and its pods as the kubelet left them.
func finished(name, q string, pods int, start, end time.Time) (*batch.Job, []runtime.Object) {
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	job := &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(start.Add(-time.Minute))},
		Spec: batch.JobSpec{Queue: q, MinAvailable: int32(pods), Tasks: []batch.TaskSpec{{Name: "worker", Replicas: int32(pods),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i",
				Resources: corev1.ResourceRequirements{Requests: gpu, Limits: gpu}}}}}}}},
		Status: batch.JobStatus{State: batch.JobState{Phase: batch.Completed, LastTransitionTime: metav1.NewTime(end)}},
	}
	var objs []runtime.Object
	yes := true
	for i := 0; i < pods; i++ {
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: fmt.Sprintf("%s-worker-%d", name, i),
				Labels:          map[string]string{batch.JobNameKey: name},
				Annotations:     map[string]string{batch.TaskSpecKey: "worker", batch.JobVersion: "0"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: name, UID: job.UID, Controller: &yes}}},
			Status: corev1.PodStatus{Phase: corev1.PodSucceeded, StartTime: &metav1.Time{Time: start},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(end)}}}}},
		})
	}
	return job, objs
}

func newController(t *testing.T, queues []*scheduling.Queue, jobs []*batch.Job, pods []runtime.Object) (*Controller, *vcfake.Clientset) {
	t.Helper()
	kube := fake.NewSimpleClientset(pods...)
	vc := vcfake.NewSimpleClientset()
	for _, q := range queues {
		if _, err := vc.SchedulingV1beta1().Queues().Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range jobs {
		if _, err := vc.BatchV1alpha1().Jobs(j.Namespace).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	opt := &framework.ControllerOption{
		KubeClient: kube, VolcanoClient: vc,
		SharedInformerFactory:   informers.NewSharedInformerFactory(kube, 0),
		VCSharedInformerFactory: vcinformer.NewSharedInformerFactory(vc, 0),
	}
	c := &Controller{}
	if err := c.Initialize(opt); err != nil {
		t.Fatal(err)
	}
	c.clock = func() time.Time { return t0.Add(24 * time.Hour) }
	c.flushDelay = time.Millisecond
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	opt.VCSharedInformerFactory.Start(stop)
	if !c.Start(stop, Name) {
		t.Fatal("caches did not sync")
	}
	return c, vc
}

// drain syncs every queued item, the delayed flushes too (polled for
// until they are due), until none is left.
func drain(t *testing.T, c *Controller) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		for c.queue.Len() > 0 {
			item, _ := c.queue.Get()
			err := c.sync(ctx, item)
			c.queue.Done(item)
			if err != nil {
				return false, fmt.Errorf("sync %s: %w", item, err)
			}
		}
		return c.pendingQueues() == 0, nil
	})
	if err != nil {
		t.Fatalf("items left: %d queued, %d queues pending: %v", c.queue.Len(), c.pendingQueues(), err)
	}
}

func (c *Controller) pendingQueues() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

func historyOf(t *testing.T, vc *vcfake.Clientset, q string) *jobhistory.Predictor {
	t.Helper()
	queue, err := vc.SchedulingV1beta1().Queues().Get(context.Background(), q, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := jobhistory.NewPredictor()
	ann := queue.Annotations[paddleapi.RunTimeHistoryAnnotation]
	if ann == "" {
		return nil
	}
	if err := p.AddQueue(q, []byte(ann)); err != nil {
		t.Fatal(err)
	}
	return p
}

func aQueue(name string, ann map[string]string) *scheduling.Queue {
	return &scheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
}

// Jobs that finished before the controller started are recorded once, on
// their own queue, with the run time their pods show; started again, the
// controller records nothing twice.
func TestRecordsFinishedJobsOnTheirQueue(t *testing.T) {
	a, podsA := finished("a", "research", 2, t0, t0.Add(time.Hour))
	b, podsB := finished("b", "research", 2, t0.Add(time.Hour), t0.Add(3*time.Hour))
	other, podsO := finished("o", "prod", 1, t0, t0.Add(10*time.Minute))
	running, _ := finished("r", "research", 2, t0, t0.Add(time.Hour))
	running.Status.State.Phase = batch.Running
	queues := []*scheduling.Queue{aQueue("research", nil), aQueue("prod", map[string]string{"keep": "me"})}
	jobs := []*batch.Job{a, b, other, running}
	pods := append(append(podsA, podsB...), podsO...)

	c, vc := newController(t, queues, jobs, pods)
	c.enqueueFinished()
	drain(t, c)
	now := c.clock()
	research := historyOf(t, vc, "research")
	f := jobhistory.Features{Namespace: "ml", Queue: "research", Pods: 2, GPUsPerPod: 1, GPUs: 2}
	pr, ok := research.Predict(f, now)
	// ln-mean of 1 h and 2 h: sqrt(2) h; two jobs, decayed a day.
	if !ok || pr.Level != jobhistory.LevelShape || pr.Weight < 1.7 || pr.Weight > 2 || pr.Median.Round(time.Minute) != 85*time.Minute {
		t.Errorf("research predicts %+v", pr)
	}
	prod, err := vc.SchedulingV1beta1().Queues().Get(context.Background(), "prod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if prod.Annotations["keep"] != "me" {
		t.Errorf("the queue's own annotations changed: %v", prod.Annotations)
	}
	if pr, _ := historyOf(t, vc, "prod").Predict(jobhistory.Features{Namespace: "ml", Queue: "prod", Pods: 1, GPUsPerPod: 1, GPUs: 1}, now); pr.Median.Round(time.Minute) != 10*time.Minute {
		t.Errorf("prod predicts %+v", pr)
	}

	// A restarted controller sees the same jobs: no write, and no job's
	// pods listed (the queues' histories already hold them).
	c2, _ := newController(t, nil, nil, nil)
	c2.Kube, c2.VC, c2.Jobs = c.Kube, vc, c.Jobs
	vc.ClearActions()
	kube := c.Kube.(*fake.Clientset)
	kube.ClearActions()
	c2.enqueueFinished()
	if n := c2.queue.Len(); n != 0 {
		t.Errorf("a restarted controller queued %d jobs its queues' histories hold", n)
	}
	drain(t, c2)
	for _, a := range vc.Actions() {
		if a.GetVerb() == "update" {
			t.Errorf("a restarted controller wrote %s again", a.GetResource().Resource)
		}
	}
	for _, a := range kube.Actions() {
		t.Errorf("a restarted controller asked for %s %s", a.GetVerb(), a.GetResource().Resource)
	}
	if pr2, _ := historyOf(t, vc, "research").Predict(f, now); pr2.Weight != pr.Weight {
		t.Errorf("weight %v after the restart, %v before", pr2.Weight, pr.Weight)
	}
}

// A write that conflicts is read again and retried; an annotation that is
// not a history is replaced; a queue that is gone is nothing to record.
func TestFlushConflictsAndDamage(t *testing.T) {
	a, pods := finished("a", "research", 1, t0, t0.Add(time.Hour))
	gone, podsG := finished("g", "deleted-queue", 1, t0, t0.Add(time.Hour))
	queues := []*scheduling.Queue{aQueue("research", map[string]string{paddleapi.RunTimeHistoryAnnotation: "{damaged"})}
	c, vc := newController(t, queues, []*batch.Job{a, gone}, append(pods, podsG...))
	conflicts := 1
	vc.PrependReactor("update", "queues", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, errConflict()
		}
		return false, nil, nil
	})
	c.enqueueFinished()
	drain(t, c)
	if conflicts != 0 {
		t.Fatal("no write was tried")
	}
	p := historyOf(t, vc, "research")
	if p == nil {
		t.Fatal("no history written over the damaged one")
	}
	if pr, ok := p.Predict(jobhistory.Features{Namespace: "ml", Queue: "research", Pods: 1, GPUsPerPod: 1, GPUs: 1}, c.clock()); !ok || pr.Median.Round(time.Minute) != time.Hour {
		t.Errorf("predicts %+v", pr)
	}
	q, _ := vc.SchedulingV1beta1().Queues().Get(context.Background(), "research", metav1.GetOptions{})
	if strings.Contains(q.Annotations[paddleapi.RunTimeHistoryAnnotation], "damaged") {
		t.Error("the damaged history is still there")
	}
}

func errConflict() error {
	return apierrors.NewConflict(scheduling.Resource("queues"), "research", fmt.Errorf("changed"))
}
