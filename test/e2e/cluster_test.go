package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

func tinyTopology() *localcluster.Topology {
	return &localcluster.Topology{Groups: []localcluster.NodeGroup{{
		Name: "tiny", Racks: 1, NodesPerRack: 1, CPU: "8", Memory: "32Gi", GPUs: 8, GPUFabric: "NVLink", GPUIslandSize: 4,
	}}}
}

// Stopping a cluster leaves no process and no work folder behind.
func TestLocalClusterStopLeavesNothing(t *testing.T) {
	c, err := localcluster.Start(context.Background(), localcluster.Options{Name: "stop-test", Topology: tinyTopology(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	pids := c.PIDs()
	if len(pids) != 7 {
		t.Errorf("want 7 running components, got %d: %v", len(pids), pids)
	}
	for name, pid := range pids {
		if !localcluster.ProcessAlive(pid) {
			t.Errorf("%s (pid %d) not alive while the cluster runs", name, pid)
		}
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	for name, pid := range pids {
		if localcluster.ProcessAlive(pid) {
			t.Errorf("%s (pid %d) still alive after Stop", name, pid)
		}
	}
	if _, err := os.Stat(c.WorkDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work folder %s still exists after Stop (stat: %v)", c.WorkDir, err)
	}
	if t.Failed() {
		t.Logf("logs kept in %s", c.LogDir)
	} else if err := c.RemoveLogs(); err != nil {
		t.Error(err)
	}
}

const ownerHelperEnv = "VOLCANO_PADDLE_E2E_OWNER_REPORT"

type ownerReport struct {
	PIDs    map[string]int `json:"pids"`
	WorkDir string         `json:"workDir"`
	LogDir  string         `json:"logDir"`
}

// runOwnerHelper starts a cluster, reports its processes and waits to be
// killed (it is this test binary, re-run by TestLocalClusterOwnerKilled).
func runOwnerHelper() {
	report := os.Getenv(ownerHelperEnv)
	c, err := localcluster.Start(context.Background(), localcluster.Options{Name: "owner-killed", Topology: tinyTopology()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b, _ := json.Marshal(ownerReport{PIDs: c.PIDs(), WorkDir: c.WorkDir, LogDir: c.LogDir})
	if err := os.WriteFile(report, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	select {} // until SIGKILL
}

// When the owner of a cluster is killed outright (a test binary hitting its
// timeout, kill -9), its components die with it and the next cluster start
// removes the orphaned work folder.
func TestLocalClusterOwnerKilled(t *testing.T) {
	report := filepath.Join(t.TempDir(), "report.json")
	owner := exec.Command(os.Args[0], "-test.run=^$")
	owner.Env = append(os.Environ(), ownerHelperEnv+"="+report)
	out, err := os.Create(filepath.Join(t.TempDir(), "owner.log"))
	if err != nil {
		t.Fatal(err)
	}
	owner.Stdout, owner.Stderr = out, out
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- owner.Wait() }()

	var r ownerReport
	err = framework.Poll(context.Background(), 90*time.Second, func(context.Context) (bool, error) {
		select {
		case err := <-exited:
			return false, fmt.Errorf("owner exited early: %v (log %s)", err, out.Name())
		default:
		}
		b, err := os.ReadFile(report)
		if err != nil {
			return false, nil
		}
		return json.Unmarshal(b, &r) == nil, nil
	})
	if err != nil {
		_ = owner.Process.Kill()
		t.Fatalf("owner did not start its cluster: %v", err)
	}
	if len(r.PIDs) != 7 {
		t.Errorf("owner reports %d components, want 7: %v", len(r.PIDs), r.PIDs)
	}

	if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	err = framework.Poll(context.Background(), 30*time.Second, func(context.Context) (bool, error) {
		for _, pid := range r.PIDs {
			if localcluster.ProcessAlive(pid) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		for name, pid := range r.PIDs {
			if localcluster.ProcessAlive(pid) {
				t.Errorf("%s (pid %d) survived its owner", name, pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if _, err := os.Stat(r.WorkDir); err != nil {
		t.Fatalf("a killed owner cannot clean up, yet its work folder is gone: %v", err)
	}
	localcluster.SweepStaleWorkDirs()
	if _, err := os.Stat(r.WorkDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphaned work folder %s survived the sweep (stat: %v)", r.WorkDir, err)
	}
	if !t.Failed() {
		_ = os.RemoveAll(r.LogDir)
	}
}
