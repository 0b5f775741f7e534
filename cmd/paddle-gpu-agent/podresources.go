package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

// DefaultPodResourcesSocket is where the kubelet serves its PodResources
// API (k8s.io/kubelet/pkg/apis/podresources/v1).
const DefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// podResourcesTimeout bounds one call to the kubelet.
const podResourcesTimeout = 10 * time.Second

// assignmentReader reads which GPUs the kubelet gave to which pods.
type assignmentReader struct {
	client   podresourcesv1.PodResourcesListerClient
	resource string
	// index maps a device ID as the device plugin names it (NVIDIA's: the
	// GPU UUID by default, the index with deviceIDStrategy=index) to the
	// GPU index.
	index map[string]int
	// unknown remembers device IDs already reported as not in the topology.
	unknown map[string]bool
}

func dialPodResources(socket string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

func newAssignmentReader(conn grpc.ClientConnInterface, resource string, t *gputopology.Topology) *assignmentReader {
	r := &assignmentReader{client: podresourcesv1.NewPodResourcesListerClient(conn), resource: resource,
		index: map[string]int{}, unknown: map[string]bool{}}
	for _, g := range t.GPUs {
		r.index[strconv.Itoa(g.Index)] = g.Index
		if g.UUID != "" {
			r.index[g.UUID] = g.Index
		}
	}
	return r
}

// read lists the pods' devices (List) and maps them to GPU indices. The
// allocatable devices (GetAllocatableResources) are checked against the
// topology once per unknown ID: a device the topology does not know means
// the agent reads another GPU numbering than the device plugin's.
func (r *assignmentReader) read(ctx context.Context) (map[string][]int, error) {
	ctx, cancel := context.WithTimeout(ctx, podResourcesTimeout)
	defer cancel()
	alloc, err := r.client.GetAllocatableResources(ctx, &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("kubelet PodResources GetAllocatableResources: %w", err)
	}
	for _, d := range alloc.GetDevices() {
		if d.GetResourceName() == r.resource {
			for _, id := range d.GetDeviceIds() {
				r.lookup(id)
			}
		}
	}
	list, err := r.client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		return nil, fmt.Errorf("kubelet PodResources List: %w", err)
	}
	out := map[string][]int{}
	for _, p := range list.GetPodResources() {
		var idx []int
		for _, c := range p.GetContainers() {
			for _, d := range c.GetDevices() {
				if d.GetResourceName() != r.resource {
					continue
				}
				for _, id := range d.GetDeviceIds() {
					if i, ok := r.lookup(id); ok {
						idx = append(idx, i)
					}
				}
			}
		}
		if len(idx) > 0 {
			sort.Ints(idx)
			out[p.GetNamespace()+"/"+p.GetName()] = idx
		}
	}
	return out, nil
}

func (r *assignmentReader) lookup(id string) (int, bool) {
	i, ok := r.index[id]
	if !ok && !r.unknown[id] {
		r.unknown[id] = true
		klog.ErrorS(nil, "The kubelet reports a GPU the topology does not know; its pods' GPUs are left out", "resource", r.resource, "deviceID", id)
	}
	return i, ok
}
