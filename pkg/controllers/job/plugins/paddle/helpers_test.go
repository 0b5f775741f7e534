package paddle

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/volcano/pkg/controllers/job/plugins"
	pluginsinterface "volcano.sh/volcano/pkg/controllers/job/plugins/interface"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/test/contract"
)

// newJob builds a Paddle job the way users write them, with a fresh UID
// (the plugin caches layouts per UID and generation).
var newJob = testbuilders.PaddleJob

// newPod is pod index of task taskIdx as Volcano's job controller creates
// it (testbuilders.TaskPod).
func newPod(job *batch.Job, taskIdx, index int) *v1.Pod {
	return testbuilders.TaskPod(job, job.Spec.Tasks[taskIdx].Name, index)
}

// plugin returns the registered builder's plugin, as Volcano's job
// controller gets it.
func plugin(t testing.TB, client kubernetes.Interface, job *batch.Job) pluginsinterface.PluginInterface {
	t.Helper()
	pb, ok := plugins.GetPluginBuilder(paddlejob.PluginName)
	if !ok {
		t.Fatal("paddle plugin is not registered with Volcano's job plugin factory")
	}
	return pb(pluginsinterface.PluginClientset{KubeClients: client}, job.Spec.Plugins[paddlejob.PluginName])
}

// runJob plays what Volcano's controller does for a new job: OnJobAdd, then
// OnPodCreate for every replica of every task. It returns the pods.
func runJob(t testing.TB, client kubernetes.Interface, job *batch.Job) ([]v1.Pod, error) {
	t.Helper()
	if job.Status.ControlledResources == nil {
		job.Status.ControlledResources = map[string]string{}
	}
	if err := plugin(t, client, job).OnJobAdd(job); err != nil {
		return nil, err
	}
	var pods []v1.Pod
	for ti, ts := range job.Spec.Tasks {
		for i := 0; i < int(ts.Replicas); i++ {
			pod := newPod(job, ti, i)
			if err := plugin(t, client, job).OnPodCreate(pod, job); err != nil {
				return nil, err
			}
			pods = append(pods, *pod)
		}
	}
	rememberConfigMaps(t, client, job.Namespace)
	return pods, nil
}

// configMaps are the ConfigMaps the last runJob left, by namespace/name, so
// that envOf resolves a container's references as the kubelet would.
var configMaps = map[string]map[string]string{}

func rememberConfigMaps(t testing.TB, client kubernetes.Interface, ns string) []v1.ConfigMap {
	t.Helper()
	list, err := client.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		configMaps[ns+"/"+cm.Name] = cm.Data
	}
	return list.Items
}

// mustRun runs the job and checks the result against Paddle's rules.
func mustRun(t *testing.T, job *batch.Job) (*fake.Clientset, []v1.Pod) {
	t.Helper()
	client := fake.NewSimpleClientset()
	pods, err := runJob(t, client, job)
	if err != nil {
		t.Fatalf("job rejected: %v", err)
	}
	svc, err := client.CoreV1().Services(job.Namespace).Get(context.Background(), job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no Service: %v", err)
	}
	for _, v := range contract.Check(pods, svc, rememberConfigMaps(t, client, job.Namespace)...) {
		t.Errorf("contract: %s", v)
	}
	return client, pods
}

// envOf is a container's env with ConfigMap references resolved against
// what the last runJob created (in any namespace: names carry the job).
func envOf(c *v1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			for key, data := range configMaps {
				if strings.HasSuffix(key, "/"+e.ValueFrom.ConfigMapKeyRef.Name) {
					m[e.Name] = data[e.ValueFrom.ConfigMapKeyRef.Key]
				}
			}
			continue
		}
		m[e.Name] = e.Value
	}
	return m
}

func podNamed(t *testing.T, pods []v1.Pod, name string) *v1.Pod {
	t.Helper()
	for i := range pods {
		if pods[i].Name == name {
			return &pods[i]
		}
	}
	t.Fatalf("no pod %s", name)
	return nil
}

// The package does not register itself on import (the cmd/ mains call
// Register); its tests reach the plugin through Volcano's factory, as the
// job controller does.
func init() { Register() }
