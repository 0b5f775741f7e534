// Package etcdtest starts a real etcd for tests: the elastic controller's
// tests and the e2e tests speak to it as Paddle's launchers do, and the
// fault tests kill, restart, wipe and pause it as a store pod's faults do.
package etcdtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Start runs a real etcd (StartServer) and returns its client URL.
func Start(t testing.TB) string { return StartServer(t).URL }

// Server is a real etcd process ($ETCD_BIN, else bin/etcd, which make
// builds for the local cluster) on loopback ports with a temporary data
// directory. The local cluster's pods are simulated and their IPs are not
// ours to send traffic to. It is stopped by its pid when the test ends.
type Server struct {
	// URL is the client URL, http://127.0.0.1:port; it stays the same
	// across Restart.
	URL string

	t      testing.TB
	bin    string
	dir    string
	peer   string
	logf   *os.File
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartServer starts an etcd and waits until it answers.
func StartServer(t testing.TB) *Server {
	t.Helper()
	bin := os.Getenv("ETCD_BIN")
	if bin == "" {
		bin = filepath.Join(moduleRoot(t), "bin", "etcd")
	}
	return StartBinary(t, bin)
}

// StartBinary starts the etcd binary bin (a benchmark passes its own t
// or a stand-in) and waits until it answers.
func StartBinary(t testing.TB, bin string) *Server {
	t.Helper()
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
	dir := t.TempDir()
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{
		URL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), peer: fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		t: t, bin: bin, dir: dir, logf: logf,
	}
	// The reserved ports are released just before etcd binds them.
	for _, l := range held {
		_ = l.Close()
	}
	t.Cleanup(func() {
		s.stop()
		logf.Close()
	})
	s.start()
	return s
}

func (s *Server) start() {
	s.t.Helper()
	cmd := exec.Command(s.bin, "--name=paddle", "--data-dir="+filepath.Join(s.dir, "data"),
		"--listen-client-urls="+s.URL, "--advertise-client-urls="+s.URL,
		"--listen-peer-urls="+s.peer, "--initial-advertise-peer-urls="+s.peer, "--initial-cluster=paddle="+s.peer)
	cmd.Stdout, cmd.Stderr = s.logf, s.logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	s.waitHealthy()
}

func (s *Server) waitHealthy() {
	s.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/health", nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil // not listening yet
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		out, _ := os.ReadFile(s.logf.Name())
		s.t.Fatalf("etcd did not answer at %s: %v\n%s", s.URL, err, out)
	}
}

// stop ends the process (SIGTERM, SIGKILL after 10 s) if it runs; a
// paused one is resumed first so that it can end.
func (s *Server) stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Kill ends the process with SIGKILL (an OOM kill, a node's power loss)
// and waits until it has exited.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Restart starts the killed etcd again on the same ports, with its data
// (a container restarted in place) or without (wipe: a store pod
// re-created), and waits until it answers.
func (s *Server) Restart(wipe bool) {
	s.t.Helper()
	if wipe {
		if err := os.RemoveAll(filepath.Join(s.dir, "data")); err != nil {
			s.t.Fatal(err)
		}
	}
	s.start()
}

// Pause stops the process (SIGSTOP: its connections stay open and
// nothing answers, as a store that hangs) and waits until it has stopped
// (StopProcess). Resume lets it go on.
func (s *Server) Pause() {
	s.t.Helper()
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	if err := StopProcess(pid); err != nil {
		s.t.Fatal(err)
	}
}

// StopProcess sends SIGSTOP to process pid and waits until every thread of
// it has stopped: the signal is delivered asynchronously, and a request
// sent at once could still be answered.
func StopProcess(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("stopping process %d: %w", pid, err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return allThreadsStopped(pid)
	})
	if err != nil {
		return fmt.Errorf("process %d did not stop on SIGSTOP: %w", pid, err)
	}
	return nil
}

func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

// allThreadsStopped: every thread of process pid is in state T (stopped),
// per /proc/PID/task/TID/stat (proc(5): the state follows the command
// name in parentheses).
func allThreadsStopped(pid int) (bool, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false, err
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false, nil // the thread ended: look again
		}
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return false, fmt.Errorf("unreadable %s", stat)
		}
		if stat[i+2] != 'T' {
			return false, nil
		}
	}
	return len(tasks) > 0, nil
}

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signal %v to etcd: %v", sig, err)
	}
}

// moduleRoot is the folder of the go.mod above the test's working folder
// (not localcluster.RepoRoot: the local cluster imports the controllers
// whose tests use this package).
func moduleRoot(t testing.TB) string {
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

// Unanswered waits until the etcd stopped, killed or paused has left its
// clients unanswered for d: polled, its /health answers nothing for d in a
// row. It is how long a fault lasts as the store's clients see it. The
// test fails if the store answers meanwhile or d has not passed within
// d + 30 s.
func (s *Server) Unanswered(d time.Duration) {
	s.t.Helper()
	if err := WaitUnanswered(context.Background(), s.URL, d); err != nil {
		s.t.Fatal(err)
	}
}

// WaitUnanswered polls url's /health until it has answered nothing for d
// in a row; it fails if it answers, or when d has not passed within d +
// 30 s.
func WaitUnanswered(ctx context.Context, url string, d time.Duration) error {
	client := &http.Client{Timeout: 200 * time.Millisecond}
	var since time.Time
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, d+30*time.Second, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
		res, err := client.Do(req)
		if err == nil {
			res.Body.Close()
			return false, fmt.Errorf("etcd at %s answered %s during its fault", url, res.Status)
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= d, nil
	})
	if err != nil {
		return fmt.Errorf("etcd at %s not unanswered for %s: %w", url, d, err)
	}
	return nil
}
