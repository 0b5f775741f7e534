package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/volcano/pkg/controllers/job/plugins"
	pluginsinterface "volcano.sh/volcano/pkg/controllers/job/plugins/interface"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
)

var updateGolden = flag.Bool("update", false, "write testdata/golden/*.yaml from what the paddle job plugin renders now")

// What the paddle job plugin makes of every job in deploy/examples, as
// Volcano's job controller drives it (OnJobAdd, then OnPodCreate for every
// replica, through the plugin factory this binary registers): the pods,
// and every object it creates (Services, ConfigMaps, the elastic store's
// objects), with the job's recorded resources. The files under
// testdata/golden were captured from the plugin as it is; a change that
// is meant to alter them rewrites them with -update in a commit of its
// own, so that any other change to what users' jobs get shows up here.
func TestGoldenExamples(t *testing.T) {
	examples, files, err := testbuilders.ExampleJobs(filepath.Join("..", "..", "deploy", "examples"))
	if err != nil || files == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, ex := range examples {
		job := ex.Job
		name := strings.TrimSuffix(filepath.Base(ex.File), ".yaml") + "-" + job.Name
		t.Run(name, func(t *testing.T) {
			got := render(t, &job)
			path := filepath.Join("testdata", "golden", name+".yaml")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (write it with go test ./cmd/vc-controller-manager-paddle -run TestGoldenExamples -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from what the plugin renders now; first difference:\n%s", path, firstDifference(want, got))
			}
		})
	}
	if len(examples) < files {
		t.Errorf("%d jobs in %d example files", len(examples), files)
	}
}

// render runs the job through the registered paddle plugin with a fake
// API and returns its pods and objects as YAML documents, in a stable
// order.
func render(t *testing.T, job *batch.Job) []byte {
	t.Helper()
	if job.Namespace == "" {
		job.Namespace = "default"
	}
	job.UID = types.UID("uid-" + job.Name)
	job.Status.ControlledResources = map[string]string{}
	client := fake.NewSimpleClientset()
	pb, ok := plugins.GetPluginBuilder("paddle")
	if !ok {
		t.Fatal("no paddle job plugin registered")
	}
	plugin := func() pluginsinterface.PluginInterface {
		return pb(pluginsinterface.PluginClientset{KubeClients: client}, job.Spec.Plugins["paddle"])
	}
	if err := plugin().OnJobAdd(job); err != nil {
		t.Fatalf("OnJobAdd: %v", err)
	}
	var docs []string
	for _, ts := range job.Spec.Tasks {
		for i := 0; i < int(ts.Replicas); i++ {
			pod := testbuilders.TaskPod(job, ts.Name, i)
			if err := plugin().OnPodCreate(pod, job); err != nil {
				t.Fatalf("OnPodCreate %s: %v", pod.Name, err)
			}
			docs = append(docs, document(t, "rendered pod", pod))
		}
	}
	docs = append(docs, trackerObjects(t, client, job.Namespace)...)
	docs = append(docs, document(t, "job status.controlledResources", job.Status.ControlledResources))
	// The job is gone, as after Volcano's OnJobDelete: the plugin forgets
	// what it cached for the UID, so that a rendering again (go test
	// -count 2) starts as this one did.
	if err := plugin().OnJobDelete(job); err != nil {
		t.Fatalf("OnJobDelete: %v", err)
	}
	return []byte(strings.Join(docs, "---\n"))
}

// trackerObjects are the objects the plugin created through the API, by
// kind then name.
func trackerObjects(t *testing.T, client *fake.Clientset, ns string) []string {
	t.Helper()
	ctx := context.Background()
	var docs []string
	svcs, err := client.CoreV1().Services(ns).List(ctx, listAll)
	must(t, err)
	docs = appendKind(t, docs, "Service", svcs.Items)
	cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, listAll)
	must(t, err)
	docs = appendKind(t, docs, "ConfigMap", cms.Items)
	pods, err := client.CoreV1().Pods(ns).List(ctx, listAll)
	must(t, err)
	docs = appendKind(t, docs, "Pod", pods.Items)
	nps, err := client.NetworkingV1().NetworkPolicies(ns).List(ctx, listAll)
	must(t, err)
	docs = appendKind(t, docs, "NetworkPolicy", nps.Items)
	secrets, err := client.CoreV1().Secrets(ns).List(ctx, listAll)
	must(t, err)
	docs = appendKind(t, docs, "Secret", secrets.Items)
	slices, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, listAll)
	must(t, err)
	return appendKind(t, docs, "EndpointSlice", slices.Items)
}

// appendKind appends the objects of one kind, by name.
func appendKind[T any, P interface {
	*T
	GetName() string
}](t *testing.T, docs []string, kind string, items []T) []string {
	sort.Slice(items, func(a, b int) bool { return P(&items[a]).GetName() < P(&items[b]).GetName() })
	for i := range items {
		docs = append(docs, document(t, kind+" "+P(&items[i]).GetName(), &items[i]))
	}
	return docs
}

func document(t *testing.T, title string, obj interface{}) string {
	t.Helper()
	b, err := yaml.Marshal(obj)
	must(t, err)
	return fmt.Sprintf("# %s\n%s", title, b)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// firstDifference shows the first line where two renderings part, with a
// few lines of context.
func firstDifference(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			from := max(0, i-3)
			return fmt.Sprintf("line %d\nwant: %q\ngot:  %q\n(context before: %q)", i+1, wl, gl, strings.Join(g[from:i], "\n"))
		}
	}
	return "(none)"
}

var listAll = metav1.ListOptions{}
