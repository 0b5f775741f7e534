package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	deviceplugin "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// testGPUPlugin is a device plugin that advertises 8 nvidia.com/gpu devices
// named by index (NVIDIA's deviceIDStrategy=index) and, like a plugin
// without GetPreferredAllocation, lets the kubelet choose which ones a pod
// gets: only the agent can then tell the scheduler which GPUs are busy.
type testGPUPlugin struct {
	deviceplugin.UnimplementedDevicePluginServer
	gpus int
	stop chan struct{}
}

func (p *testGPUPlugin) GetDevicePluginOptions(context.Context, *deviceplugin.Empty) (*deviceplugin.DevicePluginOptions, error) {
	return &deviceplugin.DevicePluginOptions{}, nil
}

func (p *testGPUPlugin) ListAndWatch(_ *deviceplugin.Empty, s deviceplugin.DevicePlugin_ListAndWatchServer) error {
	var devs []*deviceplugin.Device
	for i := 0; i < p.gpus; i++ {
		devs = append(devs, &deviceplugin.Device{ID: strconv.Itoa(i), Health: deviceplugin.Healthy})
	}
	if err := s.Send(&deviceplugin.ListAndWatchResponse{Devices: devs}); err != nil {
		return err
	}
	select {
	case <-p.stop:
	case <-s.Context().Done():
	}
	return nil
}

func (p *testGPUPlugin) Allocate(_ context.Context, r *deviceplugin.AllocateRequest) (*deviceplugin.AllocateResponse, error) {
	out := &deviceplugin.AllocateResponse{}
	for _, c := range r.ContainerRequests {
		out.ContainerResponses = append(out.ContainerResponses, &deviceplugin.ContainerAllocateResponse{
			Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": strings.Join(c.DevicesIds, ",")}})
	}
	return out, nil
}

func (p *testGPUPlugin) PreStartContainer(context.Context, *deviceplugin.PreStartContainerRequest) (*deviceplugin.PreStartContainerResponse, error) {
	return &deviceplugin.PreStartContainerResponse{}, nil
}

// registerTestGPUPlugin serves the plugin in the kubelet's device-plugin
// folder and registers it with the kubelet.
func registerTestGPUPlugin(t *testing.T, gpus int) {
	t.Helper()
	endpoint := fmt.Sprintf("paddle-e2e-gpu-%d.sock", os.Getpid())
	path := filepath.Join(deviceplugin.DevicePluginPath, endpoint)
	_ = os.Remove(path)
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	p := &testGPUPlugin{gpus: gpus, stop: make(chan struct{})}
	srv := grpc.NewServer()
	deviceplugin.RegisterDevicePluginServer(srv, p)
	go srv.Serve(lis)
	t.Cleanup(func() {
		close(p.stop)
		srv.Stop()
		os.Remove(path)
	})
	conn, err := grpc.NewClient("unix://"+deviceplugin.KubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := deviceplugin.NewRegistrationClient(conn).Register(ctx, &deviceplugin.RegisterRequest{
		Version: deviceplugin.Version, Endpoint: endpoint, ResourceName: "nvidia.com/gpu",
		Options: &deviceplugin.DevicePluginOptions{}}); err != nil {
		t.Fatalf("registering the test device plugin with the kubelet: %v", err)
	}
}

// kubeletAssignments asks the kubelet directly which GPUs each pod has.
func kubeletAssignments(t *testing.T, socket string) map[string][]int {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := podresourcesv1.NewPodResourcesListerClient(conn).List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		t.Fatalf("kubelet PodResources List: %v", err)
	}
	out := map[string][]int{}
	for _, p := range list.GetPodResources() {
		for _, c := range p.GetContainers() {
			for _, d := range c.GetDevices() {
				if d.GetResourceName() != "nvidia.com/gpu" {
					continue
				}
				for _, id := range d.GetDeviceIds() {
					i, err := strconv.Atoi(id)
					if err != nil {
						t.Fatalf("device ID %q", id)
					}
					key := p.GetNamespace() + "/" + p.GetName()
					out[key] = append(out[key], i)
				}
			}
		}
	}
	for k := range out {
		sort.Ints(out[k])
	}
	return out
}

// On the real node: a device plugin advertises 8 GPUs (a DGX-1's topology),
// the kubelet assigns them to pods, the agent publishes exactly what the
// kubelet assigned, and the scheduler's GPU model of the node then follows
// the agent rather than its prediction.
func TestRealNodeGPUAgentPublishesKubeletAssignments(t *testing.T) {
	c := framework.RealNodeCluster(t)
	ns := framework.Namespace(t, c)
	ctx := context.Background()
	node := localcluster.RealNodeName
	registerTestGPUPlugin(t, 8)
	if err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		q := n.Status.Allocatable["nvidia.com/gpu"]
		return q.Value() == 8, nil
	}); err != nil {
		t.Fatalf("%s never showed 8 allocatable nvidia.com/gpu: %v", node, err)
	}
	t.Cleanup(func() {
		_, _ = c.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, annotationPatch(map[string]interface{}{
			gputopology.Annotation: nil, gputopology.AssignmentsAnnotation: nil}), metav1.PatchOptions{})
	})

	// The agent, on the host as the DaemonSet would run it on the node.
	socket := filepath.Join(localcluster.RealNodeDir(), "kubelet", "pod-resources", "kubelet.sock")
	agentCtx, stopAgent := context.WithCancel(ctx)
	agent := exec.CommandContext(agentCtx, repoPath(t, "bin", "paddle-gpu-agent"),
		"--topo-file", repoPath(t, "pkg", "gputopology", "testdata", "dgx1-v100.txt"),
		"--node-name", node, "--kubeconfig", c.Kubeconfig, "--pod-resources-socket", socket, "--resync", "2s", "-v=2")
	logFile, err := os.Create(c.LogPath("paddle-gpu-agent"))
	if err != nil {
		t.Fatal(err)
	}
	agent.Stdout, agent.Stderr = logFile, logFile
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopAgent()
		_ = agent.Wait()
		logFile.Close()
	})

	// Pods that hold their GPUs until deleted.
	for _, p := range []struct {
		name string
		gpus int
	}{{"quad", 4}, {"pair", 2}} {
		gpus := *resource.NewQuantity(int64(p.gpus), resource.DecimalSI)
		spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "c", Image: framework.Image(t, c, "paddle-barrier"), ImagePullPolicy: corev1.PullNever,
			// A barrier on a name that never resolves waits until deleted.
			Command: []string{"/usr/local/bin/paddle-barrier", "--termination-log="},
			Env: []corev1.EnvVar{{Name: "PADDLE_BARRIER_HOSTS", Value: "never-resolves.invalid"},
				{Name: "PADDLE_BARRIER_TIMEOUT_SECONDS", Value: "600"}},
		}}}
		framework.OnRealNode(&spec)
		spec.Containers[0].Resources.Limits["nvidia.com/gpu"] = gpus
		spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = gpus
		if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.name}, Spec: spec},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := framework.Poll(ctx, 90*time.Second, func(ctx context.Context) (bool, error) {
			pod, err := c.Kube.CoreV1().Pods(ns).Get(ctx, p.name, metav1.GetOptions{})
			return err == nil && pod.Status.Phase == corev1.PodRunning, err
		}); err != nil {
			t.Fatalf("pod %s never ran: %v\n%s", p.name, err, framework.DescribePods(c, ns))
		}
	}

	// The agent's annotation is exactly what the kubelet says.
	var published, kubelet map[string][]int
	if err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		a, err := gputopology.ParseAssignments(n.Annotations[gputopology.AssignmentsAnnotation])
		if err != nil {
			return false, nil
		}
		published, kubelet = map[string][]int{}, kubeletAssignments(t, socket)
		for k, v := range a.Pods {
			if strings.HasPrefix(k, ns+"/") {
				published[k] = v
			}
		}
		for k := range kubelet {
			if !strings.HasPrefix(k, ns+"/") {
				delete(kubelet, k)
			}
		}
		return len(kubelet) == 2 && reflect.DeepEqual(published, kubelet), nil
	}); err != nil {
		t.Fatalf("the agent published %v, the kubelet assigned %v: %v", published, kubelet, err)
	}
	t.Logf("kubelet assigned %v; the agent published the same", kubelet)

	// The scheduler's model of the node follows the agent: with the node's
	// annotations and pods, Occupy reports the kubelet's GPUs, source agent.
	n, err := c.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	model, err := gputopology.ModelFor(n.Annotations[gputopology.Annotation])
	if err != nil {
		t.Fatal(err)
	}
	asg, err := gputopology.ParseAssignments(n.Annotations[gputopology.AssignmentsAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	var reqs []gputopology.PodRequest
	for key, idx := range kubelet {
		reqs = append(reqs, gputopology.PodRequest{Key: key, GPUs: len(idx)})
	}
	occ := model.Occupy(reqs, asg)
	for key, idx := range kubelet {
		if got := model.Indices(occ.Pods[key]); !reflect.DeepEqual(got, idx) {
			t.Errorf("the model gives %s GPUs %v, the kubelet gave %v", key, got, idx)
		}
	}
	if occ.Source != gputopology.SourceAgent {
		t.Errorf("the model used %s, want the agent's report", occ.Source)
	}
}
