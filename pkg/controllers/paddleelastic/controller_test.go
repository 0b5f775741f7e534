package paddleelastic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcfake "volcano.sh/apis/pkg/client/clientset/versioned/fake"
	vcinformer "volcano.sh/apis/pkg/client/informers/externalversions"
	"volcano.sh/volcano/pkg/controllers/framework"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// kvServer answers the three calls of etcd's v3 JSON gateway the controller
// makes, from a map. The real etcd is exercised by test/e2e
// (TestElasticLossNotice); this one lets the decisions be tested alone.
type kvServer struct {
	mu sync.Mutex
	kv map[string]string
}

func (s *kvServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req map[string]string
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	dec := func(k string) string { b, _ := base64.StdEncoding.DecodeString(req[k]); return string(b) }
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	s.mu.Lock()
	defer s.mu.Unlock()
	key, end := dec("key"), dec("range_end")
	switch r.URL.Path {
	case "/v3/kv/range":
		var kvs []map[string]string
		var keys []string
		for k := range s.kv {
			if k == key || (end != "" && k >= key && k < end) {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			kvs = append(kvs, map[string]string{"key": enc(k), "value": enc(s.kv[k])})
		}
		_ = json.NewEncoder(w).Encode(map[string]interface{}{"kvs": kvs, "count": fmt.Sprint(len(kvs))})
	case "/v3/kv/deleterange":
		n := 0
		if _, ok := s.kv[key]; ok {
			delete(s.kv, key)
			n = 1
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"deleted": fmt.Sprint(n)})
	case "/v3/kv/put":
		s.kv[key] = dec("value")
		_ = json.NewEncoder(w).Encode(map[string]string{})
	default:
		http.NotFound(w, r)
	}
}

func (s *kvServer) has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.kv[k]
	return ok
}

// paddleWorld fills the store the way three launchers of job id jobID leave
// it after a rendezvous: a record and a heartbeat per launcher.
func paddleWorld(jobID string, ips map[string]string) map[string]string {
	kv := map[string]string{}
	for name, ip := range ips {
		rec, _ := json.Marshal(map[string]interface{}{"name": name, "rank": -1, "replicas": 1, "dtype": "gpu",
			"candidate": ip + ":41234", "endpoints": ip + ":41235"})
		kv["/"+jobID+"/info/"+name+"/-1"] = string(rec)
		kv["/paddle/"+jobID+"/heartbeat/"+name] = name
	}
	kv["/paddle/"+jobID] = "running"
	return kv
}

func elasticJob(failures string) *batch.Job {
	lo := int32(2)
	j := &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "el", UID: "uid-el", Generation: 1, Annotations: map[string]string{}},
		Spec: batch.JobSpec{MinAvailable: 2, SchedulerName: "volcano", Plugins: map[string][]string{paddlejob.PluginName: {"--elastic-max=4", "--elastic-max-failures=1"}},
			Tasks: []batch.TaskSpec{{Name: "worker", Replicas: 3, MinAvailable: &lo, Template: v1.PodTemplateSpec{Spec: v1.PodSpec{
				RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{{Name: "paddle", Image: "paddle"}}}}}}},
		Status: batch.JobStatus{State: batch.JobState{Phase: batch.Running}, ControlledResources: map[string]string{"plugin-paddle": "paddle"}},
	}
	if failures != "" {
		j.Annotations[FailuresAnnotation] = failures
	}
	return j
}

func trainerPod(job *batch.Job, i int, ip string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: fmt.Sprintf("%s-worker-%d", job.Name, i), UID: types.UID(fmt.Sprintf("pod-%d", i)),
			Labels: map[string]string{batch.JobNameKey: job.Name, paddleapi.ElasticLabel: "true"}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: ip},
	}
}

type fixture struct {
	c    *Controller
	kube *fake.Clientset
	vc   *vcfake.Clientset
	kv   *kvServer
	rec  *record.FakeRecorder
}

func newFixture(t *testing.T, job *batch.Job, pods ...*v1.Pod) *fixture {
	t.Helper()
	kube := fake.NewSimpleClientset()
	vc := vcfake.NewSimpleClientset(job)
	kv := &kvServer{kv: paddleWorld(paddlejob.JobID(job), map[string]string{"aaaaaa": "10.1.0.1", "bbbbbb": "10.1.0.2", "cccccc": "10.1.0.3"})}
	srv := httptest.NewServer(kv)
	t.Cleanup(srv.Close)
	job.Annotations[EtcdURLAnnotation] = srv.URL
	if _, err := vc.BatchV1alpha1().Jobs(job.Namespace).Update(context.Background(), job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if _, err := kube.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	opt := &framework.ControllerOption{KubeClient: kube, VolcanoClient: vc,
		SharedInformerFactory:   informers.NewSharedInformerFactory(kube, 0),
		VCSharedInformerFactory: vcinformer.NewSharedInformerFactory(vc, 0)}
	c := &Controller{}
	if err := c.Initialize(opt); err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(10)
	c.Recorder = rec
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	opt.VCSharedInformerFactory.Start(stop)
	if !c.start(stop) {
		t.Fatal("caches did not sync")
	}
	return &fixture{c: c, kube: kube, vc: vc, kv: kv, rec: rec}
}

// checkFailures checks the job's failure count and whether it failed.
func (f *fixture) checkFailures(t *testing.T, wantCount string, wantFailed bool) {
	t.Helper()
	got, err := f.vc.BatchV1alpha1().Jobs("ml").Get(context.Background(), "el", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Annotations[FailuresAnnotation]; c != wantCount {
		t.Errorf("failure count %q, want %q", c, wantCount)
	}
	if failed := got.Status.State.Phase == batch.Failed; failed != wantFailed {
		t.Errorf("job phase %s (%s), want failed=%v", got.Status.State.Phase, got.Status.State.Message, wantFailed)
	}
}

// drain processes what the queues hold.
func (f *fixture) drain(t *testing.T) {
	t.Helper()
	for f.c.notices.Len() > 0 {
		f.c.processNext(f.c.notices, 0)
	}
	for f.c.queue.Len() > 0 {
		f.c.processNext(f.c.queue, 0)
	}
}

func TestLossNoticeDeletesExactlyTheLostHeartbeat(t *testing.T) {
	job := elasticJob("")
	pod := trainerPod(job, 1, "10.1.0.2")
	f := newFixture(t, job, pod)
	f.c.observe(pod, false) // seen running: its IP is remembered
	if f.c.notices.Len() != 0 {
		t.Fatalf("a running pod was noticed as lost")
	}
	// The pod is deleted; its final state arrives as a tombstone without an IP.
	gone := pod.DeepCopy()
	gone.Status.PodIP = ""
	f.c.handlers().OnDelete(cache.DeletedFinalStateUnknown{Key: "ml/el-worker-1", Obj: gone})
	f.drain(t)
	id := paddlejob.JobID(job)
	if f.kv.has("/paddle/" + id + "/heartbeat/bbbbbb") {
		t.Errorf("the lost launcher's heartbeat is still there")
	}
	for _, n := range []string{"aaaaaa", "cccccc"} {
		if !f.kv.has("/paddle/" + id + "/heartbeat/" + n) {
			t.Errorf("heartbeat of survivor %s deleted", n)
		}
	}
	if !f.kv.has("/" + id + "/info/bbbbbb/-1") {
		t.Errorf("the rendezvous record is Paddle's to clear")
	}
}

// A notice for a lost pod whose IP a new pod of the job holds by the time
// it runs (a late notice: a retry, or the controller started after the
// deletion) removes nothing: the new pod's launcher would be at that IP
// too.
func TestLossNoticeSkipsAReusedIP(t *testing.T) {
	job := elasticJob("")
	old := trainerPod(job, 1, "10.1.0.2")
	now := metav1.Now()
	old.DeletionTimestamp = &now
	// Its replacement got the same IP (and its launcher, bbbbbb here, the
	// same record's IP).
	repl := trainerPod(job, 1, "10.1.0.2")
	repl.UID = "pod-1-new"
	f := newFixture(t, job, repl)
	f.c.observe(old, false)
	f.drain(t)
	if !f.kv.has("/paddle/" + paddlejob.JobID(job) + "/heartbeat/bbbbbb") {
		t.Errorf("a notice for the old pod removed the heartbeat of the launcher at its reused IP")
	}
}

// A pod noticed at its deletion timestamp is looked at once more when it
// is deleted (its launcher stopped): the nudge (NudgeAfterLoss); a pod
// first seen deleted gets one notice that does both.
func TestLossNoticeThenNudge(t *testing.T) {
	job := elasticJob("")
	pod := trainerPod(job, 1, "10.1.0.2")
	f := newFixture(t, job, pod)
	going := pod.DeepCopy()
	now := metav1.Now()
	going.DeletionTimestamp = &now
	f.c.observe(going, false)
	f.c.observe(going, false)
	if n := f.c.notices.Len(); n != 1 {
		t.Fatalf("%d notices queued at the deletion timestamp, want 1", n)
	}
	w, _ := f.c.notices.Get()
	if w.kind != notice || w.final {
		t.Errorf("work %+v at the deletion timestamp, want a notice, not final", w)
	}
	f.c.notices.Done(w)
	f.c.observe(going, true)
	w, _ = f.c.notices.Get()
	if w.kind != nudge || !w.final || w.ip != "10.1.0.2" {
		t.Errorf("work %+v at the deletion, want a final nudge at the pod's IP", w)
	}
	f.c.notices.Done(w)
	other := trainerPod(job, 2, "10.1.0.3")
	f.c.observe(other, true)
	w, _ = f.c.notices.Get()
	if w.kind != notice || !w.final {
		t.Errorf("work %+v for a pod first seen deleted, want a final notice", w)
	}
	f.c.notices.Done(w)
}

func TestEndedPods(t *testing.T) {
	terminated := func(code int32) []v1.ContainerStatus {
		return []v1.ContainerStatus{{Name: "paddle", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}}
	}
	cases := []struct {
		name        string
		phase       v1.PodPhase
		statuses    []v1.ContainerStatus
		status      string // Paddle's /paddle/<job_id>
		failures    string // the job's count so far
		wantDeleted bool
		wantCount   string
		wantFailed  bool
		storeFault  bool // the store restarted in place as the launcher exited
	}{
		{"completed by Paddle", v1.PodSucceeded, terminated(0), "completed", "", false, "", false, false},
		{"gave up before training", v1.PodSucceeded, terminated(0), "running", "", true, "", false, false},
		{"gave up after training", v1.PodFailed, terminated(paddleapi.ExitStopped), "running", "", true, "", false, false},
		{"evicted", v1.PodFailed, nil, "running", "", true, "", false, false},
		{"crash within the bound", v1.PodFailed, terminated(1), "running", "", true, "1", false, false},
		{"crash beyond the bound", v1.PodFailed, terminated(1), "running", "1", false, "1", true, false},
		{"exit on a store fault beyond the bound", v1.PodFailed, terminated(1), "running", "1", true, "1", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := elasticJob(tc.failures)
			pod := trainerPod(job, 0, "10.1.0.1")
			pod.Status.Phase, pod.Status.ContainerStatuses = tc.phase, tc.statuses
			pods := []*v1.Pod{pod}
			if tc.storeFault {
				pod.CreationTimestamp = metav1.NewTime(at(0))
				pod.Status.ContainerStatuses[0].State.Terminated.FinishedAt = metav1.NewTime(at(602))
				pods = append(pods, storeAt(t, job, -5, 603, 601))
			}
			f := newFixture(t, job, pods...)
			f.c.now = func() time.Time { return at(610) }
			f.kv.kv["/paddle/"+paddlejob.JobID(job)] = tc.status
			f.c.observe(pod, false)
			f.drain(t)
			_, err := f.kube.CoreV1().Pods("ml").Get(context.Background(), pod.Name, metav1.GetOptions{})
			if deleted := err != nil; deleted != tc.wantDeleted {
				t.Errorf("pod deleted = %v, want %v", deleted, tc.wantDeleted)
			}
			f.checkFailures(t, tc.wantCount, tc.wantFailed)
			if tc.wantFailed {
				select {
				case e := <-f.rec.Events:
					if !strings.Contains(e, FailuresReason) || !strings.Contains(e, pod.Name) {
						t.Errorf("event %q does not name the pod", e)
					}
				default:
					t.Errorf("no Warning event")
				}
			}
		})
	}
}

func TestEtcdURL(t *testing.T) {
	c := &Controller{}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:2379", true},
		{"http://[::1]:2379", true},
		{"http://198.18.0.10:2379", false},
		{"http://etcd.example.com:2379", false},
		{"https://127.0.0.1:2379", false},
	} {
		job := elasticJob("")
		job.Annotations[EtcdURLAnnotation] = tc.url
		_, err := c.etcdURL(job)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.url, err, tc.ok)
		}
	}
}

func TestEtcdPodNetworks(t *testing.T) {
	job := elasticJob("")
	etcd := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: paddlejob.EtcdName("el"), Labels: map[string]string{paddleapi.ElasticLabel: paddleapi.ElasticEtcd},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batch.SchemeGroupVersion.WithKind("Job"))}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.7"}}
	for _, tc := range []struct {
		networks string
		want     string // "" = refused
	}{
		{"", "http://10.0.0.7:2379"},
		{"127.0.0.0/8,198.18.0.0/24", ""},
		{"10.0.0.0/16", "http://10.0.0.7:2379"},
	} {
		t.Setenv(NetworksEnv, tc.networks)
		f := newFixture(t, job.DeepCopy(), etcd.DeepCopy())
		j, _ := f.c.Jobs.Jobs("ml").Get("el")
		j = j.DeepCopy()
		delete(j.Annotations, EtcdURLAnnotation)
		got, err := f.c.etcdURL(j)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("networks %q: %q, %v; want %q", tc.networks, got, err, tc.want)
		}
	}
}

// The etcd objects of a running elastic job come back when deleted: the
// pod on its delete event, all of them on the periodic check.
func TestEtcdRecreated(t *testing.T) {
	job := elasticJob("")
	f := newFixture(t, job, trainerPod(job, 0, "10.1.0.1"))
	f.waitLister(t, "ml", "el-worker-0", trainerPod(job, 0, "10.1.0.1"))
	ctx := context.Background()
	name := paddlejob.EtcdName("el")
	f.c.observe(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: "etcd-1",
		Labels: map[string]string{paddleapi.ElasticLabel: paddleapi.ElasticEtcd}}}, true)
	f.drain(t)
	if _, err := f.kube.CoreV1().Pods("ml").Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("etcd pod not re-created on its deletion: %v", err)
	}
	select {
	case e := <-f.rec.Events:
		if !strings.Contains(e, EtcdRestoredReason) {
			t.Errorf("event %q", e)
		}
	default:
		t.Errorf("no %s event", EtcdRestoredReason)
	}
	if err := f.kube.CoreV1().Services("ml").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.kube.NetworkingV1().NetworkPolicies("ml").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The check reads the caches: once they have seen the deletions.
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		_, e1 := f.c.services.Services("ml").Get(name)
		_, e2 := f.c.policies.NetworkPolicies("ml").Get(name)
		return apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2), nil
	}); err != nil {
		t.Fatal("the caches never saw the deletions")
	}
	f.c.resyncEtcd()
	if _, err := f.kube.CoreV1().Services("ml").Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("etcd Service not re-created: %v", err)
	}
	if _, err := f.kube.NetworkingV1().NetworkPolicies("ml").Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("etcd NetworkPolicy not re-created: %v", err)
	}
}

// Issue 37, cost: once a running job's store is whole in the caches, the
// periodic check calls the API for nothing; a job waiting in its queue (no
// trainer pod yet) gets its store's address objects but no store pod.
func TestEtcdCheckCosts(t *testing.T) {
	ctx := context.Background()
	name := paddlejob.EtcdName("el")
	t.Run("queued", func(t *testing.T) {
		job := elasticJob("")
		job.Status.State.Phase = batch.Pending
		f := newFixture(t, job)
		f.c.resyncEtcd()
		if _, err := f.kube.CoreV1().Services("ml").Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("no store Service for a queued job: %v", err)
		}
		if _, err := f.kube.CoreV1().Pods("ml").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a store pod for a job without trainers: %v", err)
		}
	})
	t.Run("running, whole", func(t *testing.T) {
		job := elasticJob("")
		f := newFixture(t, job, trainerPod(job, 0, "10.1.0.1"), etcdPodOf(t, job, "etcd-1", "10.1.0.9", true))
		f.c.resyncEtcd() // builds what is missing
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			s, _ := f.c.elasticSpec(job)
			return f.c.storeIntact(job, s, true), nil
		}); err != nil {
			t.Fatal("the caches never showed the store whole")
		}
		f.kube.ClearActions()
		for i := 0; i < 3; i++ {
			f.c.resyncEtcd()
		}
		if a := f.kube.Actions(); len(a) != 0 {
			t.Errorf("the periodic check of a whole store made %d API calls, first %s %s", len(a), a[0].GetVerb(), a[0].GetResource().Resource)
		}
	})
}
