package localcluster

import (
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Default node label keys for the rack and spine (the tier above racks) a
// node sits in. They match the scheduler plugin's defaults in deploy/.
const (
	LabelRack  = paddleapi.DefaultRackLabel
	LabelSpine = paddleapi.DefaultSpineLabel
)

// Topology describes the simulated nodes of a local cluster. A file holds
// one or more groups; each group is racks x nodesPerRack identical nodes.
//
//	groups:
//	- name: gpu            # node names: gpu-r0-n0 ... gpu-r1-n3
//	  racks: 2
//	  nodesPerRack: 4
//	  racksPerSpine: 2     # optional, default: all racks under spine 0
//	  cpu: "64"
//	  memory: 512Gi
//	  pods: 110
//	  gpus: 8
//	  gpuFabric: NVLink    # NVSwitch, NVLink or PCIe
//	  gpuIslandSize: 4     # GPUs per NVLink island
//	  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
type Topology struct {
	Groups []NodeGroup `json:"groups"`
}

// NodeGroup is a set of identical nodes spread over racks.
type NodeGroup struct {
	Name          string             `json:"name"`
	Racks         int                `json:"racks"`
	NodesPerRack  int                `json:"nodesPerRack"`
	RacksPerSpine int                `json:"racksPerSpine,omitempty"`
	CPU           string             `json:"cpu"`
	Memory        string             `json:"memory"`
	Pods          int                `json:"pods,omitempty"`
	GPUs          int                `json:"gpus,omitempty"`
	GPUFabric     gputopology.Fabric `json:"gpuFabric,omitempty"`
	GPUIslandSize int                `json:"gpuIslandSize,omitempty"`
	Labels        map[string]string  `json:"labels,omitempty"`
	// NoGPUTopology leaves the GPU-topology annotation off, as on a cluster
	// that does not publish it.
	NoGPUTopology bool `json:"noGPUTopology,omitempty"`
	// Taints of every node of the group, e.g. a control-plane node that
	// only pods tolerating node-role.kubernetes.io/control-plane may use.
	Taints []corev1.Taint `json:"taints,omitempty"`
}

// DefaultTopology is the cluster the demo and the e2e tests use: 2 racks x 4
// nodes, each with 8 GPUs in two NVLink islands of 4, 64 CPUs and 512Gi.
func DefaultTopology() *Topology {
	return &Topology{Groups: []NodeGroup{{
		Name: "gpu", Racks: 2, NodesPerRack: 4,
		CPU: "64", Memory: "512Gi", Pods: 110,
		GPUs: 8, GPUFabric: gputopology.FabricNVLink, GPUIslandSize: 4,
		Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
	}}}
}

// LoadTopology reads a topology file.
func LoadTopology(path string) (*Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t Topology
	if err := yaml.UnmarshalStrict(data, &t); err != nil {
		return nil, fmt.Errorf("topology %s: %w", path, err)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("topology %s: %w", path, err)
	}
	return &t, nil
}

// Validate reports the first field that cannot produce nodes.
func (t *Topology) Validate() error {
	if len(t.Groups) == 0 {
		return fmt.Errorf("groups is empty")
	}
	names := map[string]bool{}
	for i, g := range t.Groups {
		switch {
		case g.Name == "":
			return fmt.Errorf("groups[%d].name is empty", i)
		case names[g.Name]:
			return fmt.Errorf("groups[%d].name %q is used twice", i, g.Name)
		case g.Racks <= 0 || g.NodesPerRack <= 0:
			return fmt.Errorf("groups[%d] (%s): racks and nodesPerRack must be positive", i, g.Name)
		case g.GPUs < 0:
			return fmt.Errorf("groups[%d] (%s): gpus must not be negative", i, g.Name)
		}
		if _, err := resource.ParseQuantity(g.CPU); err != nil {
			return fmt.Errorf("groups[%d] (%s).cpu: %v", i, g.Name, err)
		}
		if _, err := resource.ParseQuantity(g.Memory); err != nil {
			return fmt.Errorf("groups[%d] (%s).memory: %v", i, g.Name, err)
		}
		for j, taint := range g.Taints {
			switch {
			case taint.Key == "":
				return fmt.Errorf("groups[%d] (%s).taints[%d]: key is empty", i, g.Name, j)
			case taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectPreferNoSchedule && taint.Effect != corev1.TaintEffectNoExecute:
				return fmt.Errorf("groups[%d] (%s).taints[%d]: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", i, g.Name, j, taint.Effect)
			}
		}
		if g.GPUs > 0 && g.GPUFabric != "" {
			tp := gputopology.Uniform(g.GPUFabric, g.GPUs, g.GPUIslandSize)
			if err := tp.Validate(); err != nil {
				return fmt.Errorf("groups[%d] (%s): %v", i, g.Name, err)
			}
		}
		names[g.Name] = true
	}
	return nil
}

// NodeCount is the number of nodes the topology produces.
func (t *Topology) NodeCount() int {
	n := 0
	for _, g := range t.Groups {
		n += g.Racks * g.NodesPerRack
	}
	return n
}

// Nodes builds the Node objects; KWOK then reports them Ready.
func (t *Topology) Nodes() []*corev1.Node {
	var nodes []*corev1.Node
	for _, g := range t.Groups {
		pods := g.Pods
		if pods == 0 {
			pods = 110
		}
		rps := g.RacksPerSpine
		if rps <= 0 {
			rps = g.Racks
		}
		res := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(g.CPU),
			corev1.ResourceMemory: resource.MustParse(g.Memory),
			corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
			// Real kubelets report their disk; pods (the CTR example) request it.
			corev1.ResourceEphemeralStorage: resource.MustParse("2Ti"),
		}
		if g.GPUs > 0 {
			res[gputopology.ResourceName] = *resource.NewQuantity(int64(g.GPUs), resource.DecimalSI)
		}
		groupIndex := len(nodes)
		for r := 0; r < g.Racks; r++ {
			for n := 0; n < g.NodesPerRack; n++ {
				name := fmt.Sprintf("%s-r%d-n%d", g.Name, r, n)
				labels := map[string]string{
					"kubernetes.io/hostname": name,
					"kubernetes.io/os":       "linux",
					"kubernetes.io/arch":     "amd64",
					"type":                   "kwok",
					LabelRack:                fmt.Sprintf("%s-rack%d", g.Name, r),
					LabelSpine:               fmt.Sprintf("%s-spine%d", g.Name, r/rps),
				}
				for k, v := range g.Labels {
					labels[k] = v
				}
				node := &corev1.Node{
					ObjectMeta: metav1.ObjectMeta{
						Name:   name,
						Labels: labels,
						Annotations: map[string]string{
							"kwok.x-k8s.io/node": "fake",
						},
					},
					Spec: corev1.NodeSpec{Taints: append([]corev1.Taint(nil), g.Taints...)},
					Status: corev1.NodeStatus{
						Capacity: res.DeepCopy(), Allocatable: res.DeepCopy(),
						Addresses: []corev1.NodeAddress{
							{Type: corev1.NodeInternalIP, Address: nodeIP(groupIndex + r*g.NodesPerRack + n)},
							{Type: corev1.NodeHostName, Address: name},
						},
					},
				}
				if g.GPUs > 0 && g.GPUFabric != "" && !g.NoGPUTopology {
					node.Annotations[gputopology.Annotation] =
						gputopology.Uniform(g.GPUFabric, g.GPUs, g.GPUIslandSize).Encode()
				}
				nodes = append(nodes, node)
			}
		}
	}
	return nodes
}

// nodeIP gives node i a distinct address in 10.128.0.0/9, out of the pod
// range KWOK allocates from (10.0.0.0/16).
func nodeIP(i int) string {
	i++
	return fmt.Sprintf("10.%d.%d.%d", 128+(i>>16)&0x7f, (i>>8)&0xff, i&0xff)
}
