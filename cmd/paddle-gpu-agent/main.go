// Command paddle-gpu-agent runs on every GPU node (a DaemonSet, deploy/gpu-agent)
// and publishes on its Node what the scheduler needs to know about the GPUs
// inside it: per GPU its index, UUID, NUMA node, nearest NIC and link to
// every other GPU, with the NVLink islands derived from them (annotation
// paddle.volcano.sh/gpu-topology), and which GPUs the kubelet gave to which
// pods (paddle.volcano.sh/gpu-assignments), read from the kubelet's
// PodResources API. See docs/gpu-topology.md.
//
//	paddle-gpu-agent --topo-file FILE --print   what it would publish for a recorded `nvidia-smi topo -m`
//	paddle-gpu-agent --nvml --print             the same, read through NVML
//	paddle-gpu-agent --node-name NODE           publish and keep the assignments current
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

type options struct {
	topoFile   string
	nvml       bool
	print      bool
	node       string
	kubeconfig string
	socket     string
	resource   string
	resync     time.Duration
	heartbeat  time.Duration
	sysfs      string
}

func main() {
	klog.InitFlags(nil)
	var o options
	flag.StringVar(&o.topoFile, "topo-file", "", "read the GPUs from this `nvidia-smi topo -m` output (- for stdin) instead of NVML")
	flag.BoolVar(&o.nvml, "nvml", false, "read the GPUs through NVML only (no nvidia-smi fallback)")
	flag.BoolVar(&o.print, "print", false, "print what would be published and exit (no cluster needed)")
	flag.StringVar(&o.node, "node-name", os.Getenv("NODE_NAME"), "the node to publish on (default $NODE_NAME)")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig (default: in-cluster)")
	flag.StringVar(&o.socket, "pod-resources-socket", DefaultPodResourcesSocket, "the kubelet's PodResources API socket")
	flag.StringVar(&o.resource, "resource", gputopology.ResourceName, "the extended resource of the GPUs")
	flag.DurationVar(&o.resync, "resync", 30*time.Second, "re-read the kubelet's assignments at least this often (pod changes on the node trigger a read at once)")
	flag.DurationVar(&o.heartbeat, "heartbeat", 5*time.Minute, "refresh the assignments' observation time when unchanged for this long (the scheduler's paddle.gpuTopology.assignmentsMaxAge must be longer)")
	flag.StringVar(&o.sysfs, "sysfs", "/sys", "sysfs root, for NUMA nodes and NICs")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		klog.ErrorS(err, "paddle-gpu-agent")
		klog.Flush()
		os.Exit(1)
	}
}

func run(o options, stdout io.Writer) error {
	if o.topoFile != "" && o.nvml {
		return fmt.Errorf("--topo-file and --nvml are two sources: give one")
	}
	topo, source, err := readTopology(o.topoFile, o.nvml, o.sysfs)
	if err != nil {
		return err
	}
	if o.print {
		return printTopology(stdout, topo)
	}
	if o.node == "" {
		return fmt.Errorf("--node-name (or $NODE_NAME) is needed to publish; --print shows what would be published")
	}
	if o.heartbeat <= 0 || o.resync <= 0 {
		return fmt.Errorf("--resync and --heartbeat must be positive")
	}
	klog.InfoS("Read the GPU topology", "source", source, "gpus", len(topo.GPUs), "fabric", topo.Fabric, "islands", topo.Islands())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return serve(ctx, o, topo)
}

// printed is what --print writes: the annotation, the islands in it, and
// its value.
type printed struct {
	Annotation string                `json:"annotation"`
	Islands    [][]int               `json:"islands"`
	Value      *gputopology.Topology `json:"value"`
}

func printTopology(w io.Writer, t *gputopology.Topology) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(printed{Annotation: gputopology.Annotation, Islands: t.Islands(), Value: t})
}
