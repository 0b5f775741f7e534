// Package etcdtest starts a real etcd for tests: the elastic controller's
// tests and the e2e tests speak to it as Paddle's launchers do.
package etcdtest

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

	"k8s.io/apimachinery/pkg/util/wait"
)

// Start runs a real etcd ($ETCD_BIN, else bin/etcd, which make builds for
// the local cluster) on loopback ports with a temporary data directory, for
// tests that need an elastic Paddle job's etcd: the local cluster's pods
// are simulated and their IPs are not ours to send traffic to. It returns
// the client URL; the process is stopped by its pid when the test ends.
func Start(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("ETCD_BIN")
	if bin == "" {
		bin = filepath.Join(moduleRoot(t), "bin", "etcd")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: %v; run make tools (make test-unit and make test build it)", bin, err)
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
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, client+"/health", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil // not listening yet
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

// moduleRoot is the folder of the go.mod above the test's working folder
// (not localcluster.RepoRoot: the local cluster imports the controllers
// whose tests use this package).
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
	}
	t.Fatal("no go.mod above the working folder")
	return ""
}
