package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
)

// StartEtcd runs a real etcd (bin/etcd, which `make binaries` builds for the
// local cluster) on loopback ports with a temporary data directory, for
// tests that need an elastic Paddle job's etcd: the local cluster's pods
// are simulated and their IPs are not ours to send traffic to. It returns
// the client URL; the process is stopped by its pid when the test ends.
func StartEtcd(t *testing.T) string {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", "etcd")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v; run make binaries", bin, err)
	}
	var ports []int
	var held []net.Listener
	for len(ports) < 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		held = append(held, l)
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	dir := t.TempDir()
	log, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--name=paddle", "--data-dir="+filepath.Join(dir, "data"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer, "--initial-cluster=paddle="+peer)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The reserved ports are released just before etcd binds them.
	for _, l := range held {
		_ = l.Close()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		log.Close()
	})
	err = Poll(context.Background(), 30*time.Second, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, client+"/health", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		out, _ := os.ReadFile(log.Name())
		t.Fatalf("etcd did not answer at %s: %v\n%s", client, err, out)
	}
	return client
}
