package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	busv1alpha1 "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

const (
	paddleValidatingHook = "volcano-admission-service-jobs-paddle-validate"
	paddleMutatingHook   = "volcano-admission-service-jobs-paddle-mutate"
)

// withoutPaddleWebhooks removes the paddle admission (as on a cluster that
// did not install it, or in a namespace it skips) until the test ends or
// the returned function puts it back.
func withoutPaddleWebhooks(t *testing.T, c *localcluster.Cluster) (restore func()) {
	t.Helper()
	ctx := context.Background()
	adm := c.Kube.AdmissionregistrationV1()
	vwc, err := adm.ValidatingWebhookConfigurations().Get(ctx, paddleValidatingHook, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mwc, err := adm.MutatingWebhookConfigurations().Get(ctx, paddleMutatingHook, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.ValidatingWebhookConfigurations().Delete(ctx, vwc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := adm.MutatingWebhookConfigurations().Delete(ctx, mwc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore = func() {
		if restored {
			return
		}
		restored = true
		vwc.ResourceVersion, vwc.UID, mwc.ResourceVersion, mwc.UID = "", "", "", ""
		if _, err := adm.ValidatingWebhookConfigurations().Create(context.Background(), vwc, metav1.CreateOptions{}); err != nil {
			t.Errorf("restoring the paddle validating webhook: %v", err)
		}
		if _, err := adm.MutatingWebhookConfigurations().Create(context.Background(), mwc, metav1.CreateOptions{}); err != nil {
			t.Errorf("restoring the paddle mutating webhook: %v", err)
		}
	}
	t.Cleanup(restore)
	// Ensure the API server no longer calls them: a server-side dry run of
	// a job only the paddle admission refuses goes through.
	probe := paddleJob("default", "probe-without-webhook", []string{"--gloo=1"}, 2, framework.Task{Name: "worker", Replicas: 2})
	if err := framework.Poll(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := c.Volcano.BatchV1alpha1().Jobs("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the API server still calls the paddle admission: %v", err)
	}
	return restore
}

// waitPaddleWebhooks waits until the API server calls the paddle admission
// again.
func waitPaddleWebhooks(t *testing.T, c *localcluster.Cluster) {
	t.Helper()
	probe := paddleJob("default", "probe-with-webhook", []string{"--gloo=1"}, 2, framework.Task{Name: "worker", Replicas: 2})
	if err := framework.Poll(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := c.Volcano.BatchV1alpha1().Jobs("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "paddle plugin rejected job"), nil
	}); err != nil {
		t.Fatalf("the API server does not call the paddle admission: %v", err)
	}
}

func hasCause(causes []metav1.StatusCause, field string) bool {
	for _, c := range causes {
		if c.Field == field {
			return true
		}
	}
	return false
}

// assertNoPanic: the controller manager logged no panic, recovered or not.
func assertNoPanic(t *testing.T, c *localcluster.Cluster) {
	t.Helper()
	b, err := os.ReadFile(c.LogPath(localcluster.ControllerManager))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"panic:", "panicked", "Observed a panic"} {
		if i := strings.Index(string(b), bad); i >= 0 {
			t.Errorf("controller manager log has %q: %s", bad, string(b[i:min(len(b), i+600)]))
		}
	}
	if err := c.Healthy(); err != nil {
		t.Error(err)
	}
}

func jobEvents(t *testing.T, c *localcluster.Cluster, ns, job string) []corev1.Event {
	t.Helper()
	evs, err := c.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + job})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Items
}

func waitJobEvent(t *testing.T, c *localcluster.Cluster, ns, job, typ, reason string) corev1.Event {
	t.Helper()
	var found corev1.Event
	err := framework.Poll(context.Background(), 60*time.Second, func(ctx context.Context) (bool, error) {
		for _, e := range jobEvents(t, c, ns, job) {
			if e.Type == typ && e.Reason == reason {
				found = e
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event %s on job %s: %v", typ, reason, job, err)
	}
	return found
}

func podUIDs(pods []corev1.Pod) map[string]types.UID {
	m := map[string]types.UID{}
	for _, p := range pods {
		m[p.Name] = p.UID
	}
	return m
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// Without the webhook, editing the replicas of a running Paddle job used to
// get it killed: every sync was refused and Volcano terminated the job
// after 15 retries. Now the running gang keeps its size, with a Warning
// event and the job's status saying so, no sync fails, and the next
// whole-gang restart (here: a pod deleted, PodEvicted -> RestartJob) runs
// at the new size with env that agrees.
func TestPaddleResizeWithoutWebhookHeld(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	withoutPaddleWebhooks(t, c)

	job := runningPSJob(t, c, ns, "resize")
	before := podUIDs(framework.JobPods(t, c, ns, job.Name))
	if len(before) != 3 {
		t.Fatalf("%d pods, want 3", len(before))
	}

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		j.Spec.Tasks[1].Replicas = 4
		j.Spec.MinAvailable = 5
		_, err = c.Volcano.BatchV1alpha1().Jobs(ns).Update(ctx, j, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("editing replicas: %v", err)
	}

	ev := waitJobEvent(t, c, ns, job.Name, corev1.EventTypeWarning, paddlejob.ResizeHeldReason)
	for _, want := range []string{"ps=1,worker=2", "next restarts as a whole", `task "worker" (Paddle trainer) cannot change from 2 to 4 replicas`} {
		if !strings.Contains(ev.Message, want) {
			t.Errorf("event lacks %q: %s", want, ev.Message)
		}
	}
	var got *batchv1alpha1.Job
	if err := framework.Poll(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		got, err = c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		return err == nil && got.Status.State.Reason == paddlejob.ResizeHeldReason, err
	}); err != nil {
		t.Fatalf("job status does not say the resize is held: %+v", got.Status.State)
	}
	// Volcano syncs the job on every scheduler cycle's PodGroup update;
	// let several pass: no sync may fail, no pod may come or go.
	if err := c.WaitSchedulerSessions(ctx, 5, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, e := range jobEvents(t, c, ns, job.Name) {
		if e.Type == corev1.EventTypeWarning && e.Reason != paddlejob.ResizeHeldReason {
			t.Errorf("Warning event %s: %s", e.Reason, e.Message)
		}
	}
	after := podUIDs(framework.JobPods(t, c, ns, job.Name))
	if len(after) != 3 {
		t.Errorf("%d pods while the resize is held, want the running 3", len(after))
	}
	for name, uid := range before {
		if after[name] != uid {
			t.Errorf("pod %s was replaced while the resize is held", name)
		}
	}
	framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 10*time.Second)

	// A whole-gang restart applies the new size.
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, job.Name+"-worker-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	if err := framework.Poll(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
		pods = framework.JobPods(t, c, ns, job.Name)
		if len(pods) != 5 {
			return false, nil
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("no running gang of 5 after the restart:\n%s", framework.DescribePods(c, ns))
	}
	for _, p := range pods {
		if v := envValue(p.Spec.Containers[0], paddlejob.EnvTrainersNum); v != "4" {
			t.Errorf("pod %s after the restart has %s=%q, want 4", p.Name, paddlejob.EnvTrainersNum, v)
		}
	}
	framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 30*time.Second)
	assertNoPanic(t, c)
}

// Labels and deletion are never refused, even for a job that the current
// rules refuse (admitted before the rules tightened, or created while the
// webhook was off): `kubectl label` failed, and a foreground deletion stayed
// stuck on its finalizer because the garbage collector's update was refused.
func TestPaddleMetadataUpdatesOfInvalidJob(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	restore := withoutPaddleWebhooks(t, c)
	job := framework.CreateJob(t, c, paddleJob(ns, "was-admitted", []string{"--gloo=1"}, 2, framework.Task{Name: "worker", Replicas: 2}))
	restore()
	waitPaddleWebhooks(t, c)

	jobs := c.Volcano.BatchV1alpha1().Jobs(ns)
	if _, err := jobs.Patch(ctx, job.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"ads"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling a job current rules refuse: %v", err)
	}
	fg := metav1.DeletePropagationForeground
	if err := jobs.Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	if err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		j, _ := jobs.Get(ctx, job.Name, metav1.GetOptions{})
		t.Fatalf("foreground deletion did not finish: %v (finalizers %v)", err, j.GetFinalizers())
	}
}

// A running job's headless Service and ConfigMap come back within seconds
// when deleted, with a Normal event on the job.
func TestPaddleObjectsRecreated(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	job := runningPSJob(t, c, ns, "keep")

	svcs := c.Kube.CoreV1().Services(ns)
	svc, err := svcs.Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := svcs.Delete(ctx, job.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := framework.Poll(ctx, 15*time.Second, func(ctx context.Context) (bool, error) {
		s, err := svcs.Get(ctx, job.Name, metav1.GetOptions{})
		return err == nil && s.UID != svc.UID && s.Spec.ClusterIP == corev1.ClusterIPNone && s.Spec.PublishNotReadyAddresses, nil
	}); err != nil {
		t.Fatalf("the headless Service was not re-created: %v", err)
	}
	t.Logf("Service re-created %s after its deletion", time.Since(start).Round(100*time.Millisecond))

	j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cmName := paddlejob.ConfigMapName(job.Name, int(j.Status.Version))
	cms := c.Kube.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, cmName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("ConfigMap %s: %v", cmName, err)
	}
	if err := cms.Delete(ctx, cmName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := framework.Poll(ctx, 15*time.Second, func(ctx context.Context) (bool, error) {
		got, err := cms.Get(ctx, cmName, metav1.GetOptions{})
		if err != nil || got.UID == cm.UID {
			return false, nil
		}
		for k, v := range cm.Data {
			if got.Data[k] != v {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("ConfigMap %s was not re-created with the same lists: %v", cmName, err)
	}
	waitJobEvent(t, c, ns, job.Name, corev1.EventTypeNormal, "PaddleObjectsRestored")
	framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 10*time.Second)
}

// Defaults and warnings at admission: a PS job without TaskCompleted on its
// trainers gets TaskCompleted -> CompleteJob and completes when they do
// (pservers stopped, not left running as in the seed's walkthrough); risky
// specs get warnings; pods of Paddle roles carry no service-account token.
func TestPaddleAdmissionDefaultsAndWarnings(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	vc, w, err := c.VolcanoRecordingWarnings()
	if err != nil {
		t.Fatal(err)
	}

	j := paddleJob(ns, "ends", nil, 2, framework.Task{Name: "ps", Replicas: 1}, framework.Task{Name: "worker", Replicas: 2, SucceedAfter: "3s"})
	j.Spec.Tasks[1].Template.Spec.Containers[0].Command = []string{"sh", "-c", "cd /work && python train.py"}
	created, err := vc.BatchV1alpha1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var defaulted bool
	for _, p := range created.Spec.Tasks[1].Policies {
		defaulted = defaulted || (p.Event == busv1alpha1.TaskCompletedEvent && p.Action == busv1alpha1.CompleteJobAction)
	}
	if !defaulted {
		t.Errorf("trainer policies %+v lack the default TaskCompleted -> CompleteJob", created.Spec.Tasks[1].Policies)
	}
	all := strings.Join(w.List(), "\n")
	for _, want := range []string{"spec.minAvailable: 2 is below the 3 pods", "without exec"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
	framework.WaitJobPhase(t, c, ns, j.Name, batchv1alpha1.Running, 60*time.Second)
	for _, p := range framework.JobPods(t, c, ns, j.Name) {
		if a := p.Spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("pod %s: automountServiceAccountToken = %v, want false", p.Name, a)
		}
	}
	framework.WaitJobPhase(t, c, ns, j.Name, batchv1alpha1.Completed, 90*time.Second)

	// Turned off by the argument: the job keeps running after training.
	off := paddleJob(ns, "runs-on", []string{"--trainer-completes-job=false"}, 2,
		framework.Task{Name: "ps", Replicas: 1}, framework.Task{Name: "worker", Replicas: 1, SucceedAfter: "1s"})
	created, err = vc.BatchV1alpha1().Jobs(ns).Create(ctx, off, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Spec.Tasks[1].Policies) != 0 {
		t.Errorf("--trainer-completes-job=false: trainer policies %+v", created.Spec.Tasks[1].Policies)
	}
	if all := strings.Join(w.List(), "\n"); !strings.Contains(all, `no TaskCompleted -> CompleteJob on the trainer task "worker"`) {
		t.Errorf("no warning for a PS job that never ends:\n%s", all)
	}
}

// Requests posted straight to the webhook port, as a hostile client would
// (not through the API server): the 959-byte job of 10,000
// replicas with a Paddle variable set cost 22 CPU-seconds and went on after
// the client left. Now each is answered with the field, a body over the
// bound is refused unread, a client that leaves gets nothing, and the
// webhook keeps answering.
func TestPaddleWebhookDirectRequests(t *testing.T) {
	c := framework.Cluster(t)
	ctx := context.Background()
	vwc, err := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, paddleValidatingHook, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cc := vwc.Webhooks[0].ClientConfig
	if cc.URL == nil {
		t.Fatal("the local cluster's paddle webhook has no URL")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cc.CABundle) {
		t.Fatal("no CA bundle")
	}
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	post := func(ctx context.Context, body []byte) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, *cc.URL+"?timeout=10s", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		return client.Do(req)
	}
	reviewOf := func(workers int32) []byte {
		j := paddleJob("ml", "wd", nil, workers+1, framework.Task{Name: "ps", Replicas: 1}, framework.Task{Name: "worker", Replicas: workers})
		j.Spec.Tasks[1].Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PADDLE_PORT", Value: "36000"}}
		j.APIVersion, j.Kind = "batch.volcano.sh/v1alpha1", "Job"
		raw, _ := json.Marshal(j)
		b, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "direct", Operation: admissionv1.Create, Namespace: "ml",
				Resource: metav1.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"},
				Object:   runtime.RawExtension{Raw: raw}},
		})
		return b
	}
	answer := func(body []byte) *admissionv1.AdmissionResponse {
		t.Helper()
		resp, err := post(ctx, body)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out admissionv1.AdmissionReview
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Response == nil || out.Response.UID != "direct" {
			t.Fatalf("status %d, review %+v: %v", resp.StatusCode, out, err)
		}
		return out.Response
	}
	pid := c.PIDs()[localcluster.WebhookManager]
	cpu := func() time.Duration {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		ut, _ := strconv.Atoi(f[11])
		st, _ := strconv.Atoi(f[12])
		return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ = 100
	}

	body := reviewOf(10000)
	before := cpu()
	r := answer(body)
	t.Logf("%d-byte review of 10,000 replicas: allowed=%v, %s of webhook CPU", len(body), r.Allowed, cpu()-before)
	if !r.Allowed && (r.Result == nil || r.Result.Details == nil || len(r.Result.Details.Causes) == 0) {
		t.Errorf("refused without a field: %+v", r.Result)
	}

	r = answer(reviewOf(1<<31 - 1))
	if r.Allowed || r.Result.Details == nil || !hasCause(r.Result.Details.Causes, "spec.tasks[1].replicas") {
		t.Errorf("2^31-1 replicas: %+v", r.Result)
	}

	resp, err := post(ctx, bytes.Repeat([]byte("x"), 9<<20))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("9 MiB body: status %d, want 413", resp.StatusCode)
		}
	} // a server that stops reading may also reset the connection

	gone, cancel := context.WithTimeout(ctx, time.Millisecond)
	if resp, err := post(gone, reviewOf(10000)); err == nil {
		resp.Body.Close()
	}
	cancel()
	if r := answer(reviewOf(2)); !r.Allowed {
		t.Errorf("a small valid job after the hostile requests: %+v", r.Result)
	}
	if err := c.Healthy(); err != nil {
		t.Error(err)
	}
}

// Someone pre-creates the ConfigMap names the next
// incarnations of a Paddle job will use. The plugin adopts a ConfigMap only
// when the job controls it (owner UID); a foreign one is neither changed
// nor deleted, and the job's events name it with the fix. Once it is gone
// the restart completes.
func TestPrecreatedConfigMapRefused(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	running := runningPSJob(t, c, ns, "pre")
	cms := c.Kube.CoreV1().ConfigMaps(ns)
	// Volcano bumps the version once or twice per restart.
	var squatted []*corev1.ConfigMap
	for _, v := range []int{1, 2} {
		cm, err := cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: paddlejob.ConfigMapName(running.Name, int(running.Status.Version)+v)},
			Data:       map[string]string{"PADDLE_TRAINER_ENDPOINTS": "evil:1"},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		squatted = append(squatted, cm)
	}
	pods := framework.JobPods(t, c, ns, running.Name)
	framework.FailPod(t, c, ns, pods[0].Name)
	var named string
	if err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		for _, e := range jobEvents(t, c, ns, running.Name) {
			if e.Type != corev1.EventTypeWarning {
				continue
			}
			for _, cm := range squatted {
				if strings.Contains(e.Message, cm.Name) && strings.Contains(e.Message, "does not belong to Paddle job") {
					named = e.Message
					return true, nil
				}
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no Warning event names the foreign ConfigMap: %v", err)
	}
	t.Logf("event: %s", named)
	for _, p := range framework.JobPods(t, c, ns, running.Name) {
		for _, cm := range squatted {
			if podRefersTo(p, cm.Name) {
				t.Errorf("pod %s reads the foreign ConfigMap %s", p.Name, cm.Name)
			}
		}
	}
	for _, want := range squatted {
		got, err := cms.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil || got.UID != want.UID || got.Data["PADDLE_TRAINER_ENDPOINTS"] != "evil:1" {
			t.Fatalf("the foreign ConfigMap %s was changed or deleted: %v", want.Name, err)
		}
	}
	// The owner removes them; the restart goes on.
	for _, cm := range squatted {
		if err := cms.Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	uids := podUIDs(pods)
	if err := framework.Poll(ctx, 120*time.Second, func(ctx context.Context) (bool, error) {
		j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, running.Name, metav1.GetOptions{})
		if err != nil || j.Status.State.Phase != batchv1alpha1.Running || j.Status.Version <= running.Status.Version {
			return false, err
		}
		now := framework.JobPods(t, c, ns, running.Name)
		for _, p := range now {
			if uids[p.Name] == p.UID || p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return len(now) == len(uids), nil
	}); err != nil {
		t.Fatalf("the restart did not complete after the foreign ConfigMaps were deleted: %v\n%s", err, framework.DescribePods(c, ns))
	}
}

func podRefersTo(p corev1.Pod, cm string) bool {
	for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil && e.ValueFrom.ConfigMapKeyRef.Name == cm {
				return true
			}
		}
	}
	return false
}
