package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"k8s.io/klog/v2"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

// readTopology reads the node's GPUs: from a topo -m file when given, else
// through NVML (go-nvml loads libnvidia-ml at run time, so the agent runs,
// and says why it cannot read NVML, on a machine without the driver), and
// when NVML is missing from the text of `nvidia-smi topo -m`.
func readTopology(topoFile string, useNVML bool, sysfs string) (*gputopology.Topology, string, error) {
	if topoFile != "" {
		b, err := readFileOrStdin(topoFile)
		if err != nil {
			return nil, "", err
		}
		t, err := gputopology.ParseTopoMatrix(string(b))
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", topoFile, err)
		}
		return t, "topo-file", nil
	}
	t, nvmlErr := gputopology.FromNVML(nvml.New(), sysfsLocality{root: sysfs})
	if nvmlErr == nil || useNVML {
		return t, "nvml", nvmlErr
	}
	klog.InfoS("NVML unavailable, reading nvidia-smi topo -m instead", "err", nvmlErr)
	out, err := exec.Command("nvidia-smi", "topo", "-m").Output()
	if err != nil {
		return nil, "", fmt.Errorf("neither NVML (%v) nor nvidia-smi topo -m (%v) could be read", nvmlErr, err)
	}
	t, err = gputopology.ParseTopoMatrix(string(out))
	if err != nil {
		return nil, "", fmt.Errorf("nvidia-smi topo -m: %w", err)
	}
	return t, "nvidia-smi", nil
}

func readFileOrStdin(name string) ([]byte, error) {
	if name == "-" {
		var b bytes.Buffer
		_, err := b.ReadFrom(os.Stdin)
		return b.Bytes(), err
	}
	return os.ReadFile(name)
}

// sysfsLocality finds what NVML does not know from Linux's sysfs: a GPU's
// NUMA node (bus/pci/devices/<id>/numa_node) and its nearest NIC, the RDMA
// device (class/infiniband), else network interface (class/net), whose PCI
// path shares the longest prefix with the GPU's: the same PCIe switch
// before the same root port, before the same host bridge, as nvidia-smi
// ranks PIX, PXB, PHB. Among equally near NICs, the first by name.
type sysfsLocality struct{ root string }

func (s sysfsLocality) NUMA(bus string) int {
	b, err := os.ReadFile(filepath.Join(s.root, "bus", "pci", "devices", bus, "numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func (s sysfsLocality) NearestNIC(bus string) string {
	gpu, err := filepath.EvalSymlinks(filepath.Join(s.root, "bus", "pci", "devices", bus))
	if err != nil {
		return ""
	}
	for _, class := range []string{"infiniband", "net"} {
		entries, err := os.ReadDir(filepath.Join(s.root, "class", class))
		if err != nil {
			continue
		}
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		best, bestDepth := "", 0
		for _, name := range names {
			dev, err := filepath.EvalSymlinks(filepath.Join(s.root, "class", class, name, "device"))
			if err != nil {
				continue // virtual interfaces have no device
			}
			if d := commonDepth(gpu, dev); d > bestDepth {
				best, bestDepth = name, d
			}
		}
		if best != "" {
			return best
		}
	}
	return ""
}

// commonDepth counts the path elements two sysfs device paths share.
func commonDepth(a, b string) int {
	pa, pb := strings.Split(a, "/"), strings.Split(b, "/")
	n := 0
	for n < len(pa) && n < len(pb) && pa[n] == pb[n] {
		n++
	}
	return n
}
