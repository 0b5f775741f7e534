package paddleobjects

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
	vcinformer "volcano.sh/apis/pkg/client/informers/externalversions"
	"volcano.sh/volcano/pkg/controllers/framework"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlekube"
)

func paddleJob(name string, phase batch.JobPhase, workers int32) *batch.Job {
	task := func(n string, r int32) batch.TaskSpec {
		return batch.TaskSpec{Name: n, Replicas: r, Template: v1.PodTemplateSpec{Spec: v1.PodSpec{
			RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{{Name: "paddle", Image: "paddle"}}}}}
	}
	return &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: types.UID("uid-" + name), Generation: 1},
		Spec: batch.JobSpec{MinAvailable: 1 + workers, Plugins: map[string][]string{paddlejob.PluginName: {}},
			Tasks: []batch.TaskSpec{task("ps", 1), task("worker", workers)}},
		Status: batch.JobStatus{State: batch.JobState{Phase: phase}},
	}
}

// started marks a job as the plugin leaves it after OnJobAdd, and returns
// the objects OnJobAdd created.
func started(t *testing.T, job *batch.Job) (*v1.Service, *v1.ConfigMap) {
	t.Helper()
	client := fake.NewSimpleClientset()
	job.Status.ControlledResources = map[string]string{}
	s, _ := paddlejob.Read(job)
	l, err := s.Validate(job)
	if err != nil {
		t.Fatal(err)
	}
	if err := paddlekube.Start(context.Background(), client, job, l); err != nil {
		t.Fatal(err)
	}
	svc, err := client.CoreV1().Services("ml").Get(context.Background(), job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps("ml").Get(context.Background(), paddlejob.ConfigMapName(job.Name, int(job.Status.Version)), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc, cm
}

func newController(t *testing.T, jobs ...*batch.Job) (*Controller, *fake.Clientset) {
	t.Helper()
	kube := fake.NewSimpleClientset()
	var objs []interface{}
	vc := vcfake.NewSimpleClientset()
	for _, j := range jobs {
		if _, err := vc.BatchV1alpha1().Jobs(j.Namespace).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if usesPaddle(j) {
			objs = append(objs, j)
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
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	opt.VCSharedInformerFactory.Start(stop)
	if !c.Start(stop, Name) {
		t.Fatal("caches did not sync")
	}
	// Every Paddle job is queued once at start-up.
	if got := c.queue.Len(); got != len(objs) {
		t.Errorf("%d jobs queued at start, want %d", got, len(objs))
	}
	return c, kube
}

func TestSyncRecreatesObjectsOfRunningJobs(t *testing.T) {
	running := paddleJob("run", batch.Running, 2)
	wantSvc, wantCM := started(t, running)
	completed := paddleJob("done", batch.Completed, 2)
	started(t, completed)
	notStarted := paddleJob("new", batch.Pending, 2) // OnJobAdd not run yet

	c, kube := newController(t, running, completed, notStarted)
	ctx := context.Background()
	for _, key := range []string{"ml/run", "ml/done", "ml/new", "ml/gone"} {
		if err := c.sync(ctx, key); err != nil {
			t.Fatalf("sync %s: %v", key, err)
		}
	}
	svc, err := kube.CoreV1().Services("ml").Get(ctx, "run", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Service of the running job not re-created: %v", err)
	}
	if svc.Spec.ClusterIP != v1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses || !metav1.IsControlledBy(svc, running) {
		t.Errorf("re-created Service %+v differs from the plugin's %+v", svc.Spec, wantSvc.Spec)
	}
	cm, err := kube.CoreV1().ConfigMaps("ml").Get(ctx, wantCM.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap of the running job not re-created: %v", err)
	}
	for k, v := range wantCM.Data {
		if cm.Data[k] != v {
			t.Errorf("re-created ConfigMap %s=%q, want %q", k, cm.Data[k], v)
		}
	}
	for _, name := range []string{"done", "new"} {
		if _, err := kube.CoreV1().Services("ml").Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Errorf("Service created for job %s, which the plugin does not serve now", name)
		}
	}
}

// While a resize is held, the objects come back for the running size.
func TestSyncRecreatesHeldSize(t *testing.T) {
	job := paddleJob("held", batch.Running, 2)
	_, wantCM := started(t, job)
	job.Spec.Tasks[1].Replicas = 5 // edited without the webhook
	job.Generation++
	c, kube := newController(t, job)
	if err := c.sync(context.Background(), "ml/held"); err != nil {
		t.Fatal(err)
	}
	cm, err := kube.CoreV1().ConfigMaps("ml").Get(context.Background(), wantCM.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range wantCM.Data {
		if cm.Data[k] != v {
			t.Errorf("%s=%q, want the running size's %q", k, cm.Data[k], v)
		}
	}
}

// A deleted object queues its job after the settle delay.
func TestDeletionQueuesJob(t *testing.T) {
	c, _ := newController(t)
	c.objectDeleted(cache.DeletedFinalStateUnknown{Key: "ml/wd", Obj: &v1.Service{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ml", Name: "wd", Labels: map[string]string{batch.JobNameKey: "wd"}}}})
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*settle, true, func(context.Context) (bool, error) {
		return c.queue.Len() > 0, nil
	}); err != nil {
		t.Fatalf("nothing queued within %s", 10*settle)
	}
	key, _ := c.queue.Get()
	if key != "ml/wd" {
		t.Errorf("queued %q", key)
	}
	c.queue.Done(key)
}

// A forged pod says it belongs to the job's incarnation 99 (issue 28): the
// repair must keep the ConfigMap the job's running pods use and create no
// ConfigMap for an incarnation the job never had. The job's version comes
// from its status; a pod's annotation counts only up to it and only on a
// pod the live job (its UID) controls.
func TestSyncIgnoresForgedPods(t *testing.T) {
	job := paddleJob("wd", batch.Running, 2)
	job.Status.Version = 2
	_, wantCM := started(t, job)
	c, kube := newController(t, job)
	ctx := context.Background()
	yes := true
	pod := func(name, version string, owner types.UID) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name,
			Labels:      map[string]string{batch.JobNameKey: job.Name},
			Annotations: map[string]string{batch.JobNameKey: job.Name, batch.JobVersion: version, batch.TaskSpecKey: "worker"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: job.Name,
				UID: owner, Controller: &yes}}}}
	}
	for _, p := range []*v1.Pod{
		pod("wd-worker-0", "2", job.UID),
		pod("wd-worker-1", "2", job.UID),
		pod("forged-99", "99", job.UID),        // the live job's UID is no secret
		pod("forged-other-uid", "50", "uid-x"), // an earlier job of that name
	} {
		if _, err := kube.CoreV1().Pods("ml").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kube.CoreV1().ConfigMaps("ml").Create(ctx, wantCM, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Service was deleted: the controller repairs the job.
	if err := c.sync(ctx, "ml/wd"); err != nil {
		t.Fatal(err)
	}
	cms, err := kube.CoreV1().ConfigMaps("ml").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range cms.Items {
		names = append(names, cm.Name)
	}
	if len(names) != 1 || names[0] != wantCM.Name {
		t.Fatalf("ConfigMaps after the repair: %v, want only %s (the running pods' lists)", names, wantCM.Name)
	}
	if _, err := kube.CoreV1().Services("ml").Get(ctx, job.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("Service not re-created: %v", err)
	}
}
