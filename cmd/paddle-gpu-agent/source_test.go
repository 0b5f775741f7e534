package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A sysfs tree: two GPUs and two RDMA NICs under two host bridges, and a
// network interface without a device (a bridge).
func fakeSysfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	devices := map[string]string{
		"gpu0": "devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0",
		"nic0": "devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:03:00.0",
		"gpu1": "devices/pci0000:40/0000:40:01.0/0000:41:00.0",
		"nic1": "devices/pci0000:40/0000:40:03.0/0000:43:00.0",
	}
	for _, d := range devices {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(root, target), filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(devices["gpu0"], "bus/pci/devices/0000:02:00.0")
	link(devices["gpu1"], "bus/pci/devices/0000:41:00.0")
	link(devices["nic0"], "class/infiniband/mlx5_1/device")
	link(devices["nic1"], "class/infiniband/mlx5_0/device")
	if err := os.MkdirAll(filepath.Join(root, "class/net/br0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, devices["gpu1"], "numa_node"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, devices["gpu0"], "numa_node"), []byte("-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestSysfsLocality(t *testing.T) {
	s := sysfsLocality{root: fakeSysfs(t)}
	cases := []struct {
		bus  string
		nic  string
		numa int
	}{
		{"0000:02:00.0", "mlx5_1", -1}, // behind the same PCIe switch as mlx5_1
		{"0000:41:00.0", "mlx5_0", 1},  // same host bridge as mlx5_0
		{"0000:99:00.0", "", -1},       // not in sysfs
	}
	for _, c := range cases {
		if got := s.NearestNIC(c.bus); got != c.nic {
			t.Errorf("%s: nearest NIC %q, want %q", c.bus, got, c.nic)
		}
		if got := s.NUMA(c.bus); got != c.numa {
			t.Errorf("%s: NUMA %d, want %d", c.bus, got, c.numa)
		}
	}
}
