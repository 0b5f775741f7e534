package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology/gputopologytest"
)

const testdata = "../../pkg/gputopology/testdata"

// --topo-file FILE --print on the five recorded machines and the real H100
// VM: the islands and links a correct reading gives.
func TestPrintTopoFile(t *testing.T) {
	type want struct {
		file    string
		islands [][]int
		links   [][]string
		fabric  gputopology.Fabric
	}
	var cases []want
	for _, m := range gputopologytest.Machines() {
		cases = append(cases, want{m.TopoFile, m.Islands, m.Links, gputopology.Fabric(m.Fabric)})
	}
	cases = append(cases, want{"h100-1gpu-vm.txt", [][]int{{0}}, [][]string{{"X"}}, gputopology.FabricPCIe})
	for _, c := range cases {
		var out bytes.Buffer
		if err := run(options{topoFile: filepath.Join(testdata, c.file), print: true}, &out); err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		var got printed
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%s: output is not JSON: %v\n%s", c.file, err, out.String())
		}
		var links [][]string
		for _, g := range got.Value.GPUs {
			links = append(links, g.Links)
		}
		if got.Annotation != gputopology.Annotation || !reflect.DeepEqual(got.Islands, c.islands) ||
			!reflect.DeepEqual(links, c.links) || got.Value.Fabric != c.fabric {
			t.Errorf("%s: printed %s islands %v fabric %s links %v; want islands %v fabric %s links %v",
				c.file, got.Annotation, got.Islands, got.Value.Fabric, links, c.islands, c.fabric, c.links)
		}
		if _, err := gputopology.Parse(got.Value.Encode()); err != nil {
			t.Errorf("%s: the printed value does not parse back: %v", c.file, err)
		}
	}
}

func TestRunRejects(t *testing.T) {
	cases := map[string]options{
		"two sources":  {topoFile: filepath.Join(testdata, "pcie-t4.txt"), nvml: true, print: true},
		"no node":      {topoFile: filepath.Join(testdata, "pcie-t4.txt")},
		"missing file": {topoFile: filepath.Join(testdata, "nothing.txt"), print: true},
	}
	for name, o := range cases {
		if err := run(o, &bytes.Buffer{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// fakeKubelet serves the PodResources API on a unix socket, as the kubelet
// does, with the pods' devices a test sets.
type fakeKubelet struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	mu          sync.Mutex
	pods        []*podresourcesv1.PodResources
	allocatable []*podresourcesv1.ContainerDevices
}

func (k *fakeKubelet) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return &podresourcesv1.ListPodResourcesResponse{PodResources: k.pods}, nil
}

func (k *fakeKubelet) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return &podresourcesv1.AllocatableResourcesResponse{Devices: k.allocatable}, nil
}

func (k *fakeKubelet) setPods(pods ...*podresourcesv1.PodResources) {
	k.mu.Lock()
	k.pods = pods
	k.mu.Unlock()
}

func gpuPod(ns, name string, ids ...string) *podresourcesv1.PodResources {
	return &podresourcesv1.PodResources{Namespace: ns, Name: name, Containers: []*podresourcesv1.ContainerResources{
		{Name: "main", Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: ids}}},
		{Name: "sidecar", Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "example.com/fpga", DeviceIds: []string{"fpga0"}}}},
	}}
}

// startKubelet serves a fake kubelet and returns a reader connected to it.
func startKubelet(t *testing.T, topo *gputopology.Topology) (*fakeKubelet, *assignmentReader) {
	t.Helper()
	k := &fakeKubelet{}
	for _, g := range topo.GPUs {
		k.allocatable = append(k.allocatable, &podresourcesv1.ContainerDevices{ResourceName: "nvidia.com/gpu", DeviceIds: []string{g.UUID}})
	}
	dir, err := os.MkdirTemp("", "kubelet")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "kubelet.sock")
	lis, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, k)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := dialPodResources(socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return k, newAssignmentReader(conn, "nvidia.com/gpu", topo)
}

func h100() *gputopology.Topology {
	m := gputopologytest.Machines()[0]
	topo, err := gputopology.FromNVML(m.NVML(), gputopologytest.Locality{M: m})
	if err != nil {
		panic(err)
	}
	return topo
}

// Device IDs are UUIDs (NVIDIA's default) or indices (deviceIDStrategy=
// index); other resources and unknown devices are left out.
func TestAssignmentReader(t *testing.T) {
	topo := h100()
	k, r := startKubelet(t, topo)
	k.setPods(
		gpuPod("ml", "a", topo.GPUs[4].UUID, topo.GPUs[0].UUID),
		gpuPod("ml", "b", "6", "7"),
		gpuPod("ml", "c", "GPU-not-on-this-node"),
		&podresourcesv1.PodResources{Namespace: "web", Name: "cpu-only"},
	)
	got, err := r.read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int{"ml/a": {0, 4}, "ml/b": {6, 7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("assignments %v, want %v", got, want)
	}
}

func patches(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "patch" {
			n++
		}
	}
	return n
}

// The publisher writes the topology and the assignments once, nothing when
// nothing changed, again when the pods' GPUs change or the heartbeat is
// due; what it writes is what the scheduler's model reads.
func TestPublisher(t *testing.T) {
	topo := h100()
	client := fake.NewSimpleClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-0"}})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &publisher{client: client, node: "gpu-0", topology: topo.Encode(), heartbeat: 5 * time.Minute, now: func() time.Time { return now }}
	ctx := context.Background()
	node := func() *corev1.Node {
		n, err := client.CoreV1().Nodes().Get(ctx, "gpu-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	steps := []struct {
		name    string
		advance time.Duration
		pods    map[string][]int
		writes  bool
	}{
		{"first", 0, map[string][]int{"ml/a": {0, 1}}, true},
		{"unchanged", time.Minute, map[string][]int{"ml/a": {0, 1}}, false},
		{"unchanged again", time.Minute, map[string][]int{"ml/a": {0, 1}}, false},
		{"new pod", time.Minute, map[string][]int{"ml/a": {0, 1}, "ml/b": {4, 5, 6, 7}}, true},
		{"heartbeat", 5 * time.Minute, map[string][]int{"ml/a": {0, 1}, "ml/b": {4, 5, 6, 7}}, true},
		{"pod gone", time.Second, map[string][]int{"ml/b": {4, 5, 6, 7}}, true},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		before := patches(client)
		wrote, err := p.publish(ctx, node(), s.pods)
		if err != nil {
			t.Fatal(err)
		}
		if wrote != s.writes || patches(client)-before != map[bool]int{true: 1, false: 0}[s.writes] {
			t.Errorf("%s: wrote %v (%d patches), want %v", s.name, wrote, patches(client)-before, s.writes)
		}
		n := node()
		a, err := gputopology.ParseAssignments(n.Annotations[gputopology.AssignmentsAnnotation])
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !reflect.DeepEqual(a.Pods, s.pods) {
			t.Errorf("%s: published %v, want %v", s.name, a.Pods, s.pods)
		}
		if s.writes && !a.Observed.Equal(now) {
			t.Errorf("%s: observed %s, want %s", s.name, a.Observed, now)
		}
		// The annotations round-trip into the scheduler's model: the
		// agent's GPUs are the truth for the pods it saw.
		model, err := gputopology.ModelFor(n.Annotations[gputopology.Annotation])
		if err != nil {
			t.Fatal(err)
		}
		var reqs []gputopology.PodRequest
		for key, idx := range s.pods {
			reqs = append(reqs, gputopology.PodRequest{Key: key, GPUs: len(idx)})
		}
		occ := model.Occupy(reqs, a)
		for key, idx := range s.pods {
			if got := model.Indices(occ.Pods[key]); !reflect.DeepEqual(got, idx) || occ.Source != gputopology.SourceAgent {
				t.Errorf("%s: the model gives %s GPUs %v (%s), want %v from the agent", s.name, key, got, occ.Source, idx)
			}
		}
	}
}

// The running agent re-reads the kubelet when a pod on its node changes,
// long before its resync, and publishes what the kubelet assigned.
func TestAgentFollowsPodChanges(t *testing.T) {
	topo := h100()
	k, reader := startKubelet(t, topo)
	client := fake.NewSimpleClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-0"}})
	a := &agent{reader: reader, pub: &publisher{client: client, node: "gpu-0", topology: topo.Encode(), heartbeat: time.Hour, now: time.Now}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run(ctx, client, time.Hour) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	published := func(want map[string][]int) {
		t.Helper()
		err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			n, err := client.CoreV1().Nodes().Get(ctx, "gpu-0", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			as, err := gputopology.ParseAssignments(n.Annotations[gputopology.AssignmentsAnnotation])
			return err == nil && reflect.DeepEqual(as.Pods, want) && n.Annotations[gputopology.Annotation] == topo.Encode(), nil
		})
		if err != nil {
			t.Fatalf("the node never showed %v: %v", want, err)
		}
	}
	published(map[string][]int{})
	// The kubelet starts a pod: its GPUs appear, and the pod changes.
	k.setPods(gpuPod("ml", "a", topo.GPUs[2].UUID, topo.GPUs[3].UUID))
	if _, err := client.CoreV1().Pods("ml").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "a"},
		Spec: corev1.PodSpec{NodeName: "gpu-0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	published(map[string][]int{"ml/a": {2, 3}})
	// The pod changes but not its GPUs: the agent reads the kubelet again
	// and writes nothing.
	before, refreshes := patches(client), a.refreshes.Load()
	if _, err := client.CoreV1().Pods("ml").Update(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "a", Labels: map[string]string{"x": "y"}},
		Spec: corev1.PodSpec{NodeName: "gpu-0"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return a.refreshes.Load() > refreshes, nil
	}); err != nil {
		t.Fatalf("the pod update did not make the agent read the kubelet: %v", err)
	}
	if got := patches(client); got != before {
		t.Errorf("an unchanged assignment was written again (%d patches)", got-before)
	}
}
