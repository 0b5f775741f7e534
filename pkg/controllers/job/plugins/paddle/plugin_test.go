package paddle

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/volcano/pkg/controllers/job/plugins"
	pluginsinterface "volcano.sh/volcano/pkg/controllers/job/plugins/interface"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

func TestServiceCreated(t *testing.T) {
	job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	client, pods := mustRun(t, job)
	svc, err := client.CoreV1().Services("ml").Get(context.Background(), "wd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != v1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("Service not headless or hides starting pods: %+v", svc.Spec)
	}
	if !metav1.IsControlledBy(svc, job) {
		t.Errorf("Service not owned by the job: %v", svc.OwnerReferences)
	}
	// The job's UID too: a job re-created under the same name must not
	// list the old job's terminating pods, which have the same host names.
	want := map[string]string{batch.JobNameKey: "wd", batch.JobNamespaceKey: "ml", paddleapi.JobUIDLabel: string(job.UID)}
	if !reflect.DeepEqual(svc.Spec.Selector, want) {
		t.Errorf("selector %v, want %v", svc.Spec.Selector, want)
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	for _, p := range pods {
		if !sel.Matches(labels.Set(p.Labels)) {
			t.Errorf("Service does not select pod %s (labels %v)", p.Name, p.Labels)
		}
		old := p.DeepCopy()
		old.Labels[paddleapi.JobUIDLabel] = "uid-of-a-deleted-job"
		if sel.Matches(labels.Set(old.Labels)) {
			t.Errorf("Service selects pod %s of another job of the same name", p.Name)
		}
	}
	if job.Status.ControlledResources[paddlejob.ControlledKey] != paddlejob.PluginName || job.Status.ControlledResources[paddlejob.LayoutKey] != "ps=1,worker=2" {
		t.Errorf("ControlledResources = %v", job.Status.ControlledResources)
	}
}

// Volcano runs a job's plugins in map order; with its svc plugin in the same
// job, either creates the Service first. Both orders must end with one
// Service that publishes not-ready addresses.
func TestServiceWithVolcanoSvcPlugin(t *testing.T) {
	svcBuilder, ok := plugins.GetPluginBuilder("svc")
	if !ok {
		t.Fatal("Volcano's svc plugin is not registered")
	}
	for _, svcFirst := range []bool{true, false} {
		job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
		job.Spec.Plugins["svc"] = []string{}
		job.Status.ControlledResources = map[string]string{}
		client := fake.NewSimpleClientset()
		pc := pluginsinterface.PluginClientset{KubeClients: client}
		order := []pluginsinterface.PluginInterface{svcBuilder(pc, nil), plugin(t, client, job)}
		if !svcFirst {
			order[0], order[1] = order[1], order[0]
		}
		for round := 0; round < 2; round++ { // hooks are called repeatedly
			for _, p := range order {
				if err := p.OnJobAdd(job); err != nil {
					t.Fatalf("svcFirst=%v: %s.OnJobAdd: %v", svcFirst, p.Name(), err)
				}
			}
		}
		list, _ := client.CoreV1().Services("ml").List(context.Background(), metav1.ListOptions{})
		if len(list.Items) != 1 {
			t.Fatalf("svcFirst=%v: %d Services, want 1", svcFirst, len(list.Items))
		}
		if !list.Items[0].Spec.PublishNotReadyAddresses || list.Items[0].Spec.ClusterIP != v1.ClusterIPNone {
			t.Errorf("svcFirst=%v: Service %+v", svcFirst, list.Items[0].Spec)
		}
		// Both delete hooks, in either order, leave nothing and do not fail.
		for _, p := range order {
			if err := p.OnJobDelete(job); err != nil {
				t.Errorf("svcFirst=%v: %s.OnJobDelete: %v", svcFirst, p.Name(), err)
			}
		}
		list, _ = client.CoreV1().Services("ml").List(context.Background(), metav1.ListOptions{})
		if len(list.Items) != 0 {
			t.Errorf("svcFirst=%v: %d Services left after delete", svcFirst, len(list.Items))
		}
	}
}

func TestServiceOfSomeoneElse(t *testing.T) {
	job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	foreign := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "wd"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.9"}}
	client := fake.NewSimpleClientset(foreign)
	_, err := runJob(t, client, job)
	if err == nil || !strings.Contains(err.Error(), "already exists and belongs to no owner") || !strings.Contains(err.Error(), "rename the job or delete the Service") {
		t.Fatalf("err = %v", err)
	}
	if err := plugin(t, client, job).OnJobDelete(job); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Services("ml").Get(context.Background(), "wd", metav1.GetOptions{}); err != nil {
		t.Errorf("deleting the job removed a Service it does not own: %v", err)
	}
}

func TestPodShape(t *testing.T) {
	job := newJob("ml", "wd", []string{"--gloo=2"}, testbuilders.PaddleTask{Name: "ps", Replicas: 2}, testbuilders.PaddleTask{Name: "worker", Replicas: 2}, testbuilders.PaddleTask{Name: "tensorboard", Replicas: 1})
	_, pods := mustRun(t, job)
	ps0 := podNamed(t, pods, "wd-ps-0")
	if ps0.Spec.Hostname != "wd-ps-0" || ps0.Spec.Subdomain != "wd" {
		t.Errorf("hostname/subdomain = %s/%s", ps0.Spec.Hostname, ps0.Spec.Subdomain)
	}
	for k, v := range map[string]string{paddleapi.RoleLabel: "pserver", paddleapi.IndexLabel: "0", paddleapi.ModeLabel: "ps"} {
		if ps0.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, ps0.Labels[k], v)
		}
	}
	ports := map[string]int32{}
	for _, p := range ps0.Spec.Containers[0].Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["paddle"] != 36000 || ports["paddle-gloo"] != 36018 {
		t.Errorf("pserver 0 ports = %v", ports)
	}
	for _, p := range podNamed(t, pods, "wd-ps-1").Spec.Containers[0].Ports {
		if p.Name == "paddle-gloo" {
			t.Error("pserver 1 declares the gloo port")
		}
	}
	if ic := ps0.Spec.InitContainers; len(ic) != 1 || ic[0].Name != paddlejob.BarrierContainerName || ic[0].Image != paddlejob.DefaultBarrierImage {
		t.Errorf("init containers = %+v", ic)
	}
	hosts := envOf(&ps0.Spec.InitContainers[0])["PADDLE_BARRIER_HOSTS"]
	if hosts != "wd-ps-0.wd,wd-ps-1.wd,wd-worker-0.wd,wd-worker-1.wd" {
		t.Errorf("barrier waits for %q", hosts)
	}
	tb := podNamed(t, pods, "wd-tensorboard-0")
	if tb.Spec.Hostname == "" || tb.Labels[paddleapi.RoleLabel] != "" || len(tb.Spec.InitContainers) != 0 || len(tb.Spec.Containers[0].Env) != 0 {
		t.Errorf("helper task pod got Paddle role bits: %+v %v", tb.Labels, tb.Spec.Containers[0].Env)
	}
}

func TestPodCreateIdempotentAndStable(t *testing.T) {
	job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 3, GPUs: 8})
	client := fake.NewSimpleClientset()
	if _, err := runJob(t, client, job); err != nil {
		t.Fatal(err)
	}
	first := newPod(job, 0, 2)
	if err := plugin(t, client, job).OnPodCreate(first, job); err != nil {
		t.Fatal(err)
	}
	again := first.DeepCopy()
	if err := plugin(t, client, job).OnPodCreate(again, job); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first.Spec, again.Spec) {
		t.Errorf("a second OnPodCreate changed the pod:\n%+v\n%+v", first.Spec, again.Spec)
	}
	// RestartJob deletes the pods and Volcano creates new ones from the
	// template: the new pod must get exactly the same env.
	recreated := newPod(job, 0, 2)
	if err := plugin(t, client, job).OnPodCreate(recreated, job); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first.Spec, recreated.Spec) || !reflect.DeepEqual(first.Labels, recreated.Labels) {
		t.Errorf("re-created pod differs")
	}
}

func TestBarrierOff(t *testing.T) {
	job := newJob("ml", "wd", []string{"--barrier=false"}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	_, pods := mustRun(t, job)
	if len(pods[0].Spec.InitContainers) != 0 {
		t.Errorf("barrier added with --barrier=false")
	}
}

func TestUserPortKept(t *testing.T) {
	job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	job.Spec.Tasks[0].Template.Spec.Containers[0].Ports = []v1.ContainerPort{{Name: "train", ContainerPort: 36000}}
	_, pods := mustRun(t, job)
	if p := pods[0].Spec.Containers[0].Ports; len(p) != 1 || p[0].Name != "train" {
		t.Errorf("ports = %+v", p)
	}
}

// The rejection lands in the Job's status through the API, with the
// controller's client.
func TestRejectionWrittenToJobStatus(t *testing.T) {
	var mu sync.Mutex
	var gotPath, gotType string
	var gotBody map[string]interface{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPatch {
			gotPath, gotType = r.URL.Path, r.Header.Get("Content-Type")
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &gotBody)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	job := newJob("ml", "wd", []string{"--gloo=1"}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	job.Status.ControlledResources = map[string]string{}
	err = plugin(t, client, job).OnJobAdd(job)
	if err == nil {
		t.Fatal("accepted")
	}
	mu.Lock()
	defer mu.Unlock()
	if gotPath != "/apis/batch.volcano.sh/v1alpha1/namespaces/ml/jobs/wd/status" || gotType != "application/merge-patch+json" {
		t.Fatalf("patched %s (%s)", gotPath, gotType)
	}
	state := gotBody["status"].(map[string]interface{})["state"].(map[string]interface{})
	if state["reason"] != paddlejob.InvalidReason || state["message"] != err.Error() {
		t.Errorf("status state = %v", state)
	}
}
