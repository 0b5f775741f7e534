package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one control-plane component running as a child process. Its
// output goes to a log file that outlives the cluster when something fails.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logFile *os.File

	done     chan struct{}
	mu       sync.Mutex
	exitErr  error
	stopping bool
}

func startProcess(name, bin string, args []string, logDir string, env []string) (*process, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: binary %s is missing (run `make binaries`): %w", name, bin, err)
	}
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "\n=== %s %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(childEnv(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C in the terminal reaches us, and we stop
		// the components in order instead of them dying at random.
		Setpgid: true,
		// If the owner dies without cleaning up (SIGKILL, a test binary
		// killed on timeout), the kernel kills the component too.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logFile: f, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// childEnv is the parent's environment without proxy settings: every
// component talks to the others on loopback, and a proxy there would break
// the API server's calls to the webhook.
func childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k := strings.ToLower(strings.SplitN(kv, "=", 2)[0])
		if k == "http_proxy" || k == "https_proxy" || k == "all_proxy" || k == "no_proxy" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended, and how, when it was not
// asked to stop.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.stopping {
			return true, nil
		}
		if p.exitErr == nil {
			return true, fmt.Errorf("%s exited unexpectedly (log: %s)", p.name, p.logPath)
		}
		return true, fmt.Errorf("%s exited unexpectedly: %v (log: %s)", p.name, p.exitErr, p.logPath)
	default:
		return false, nil
	}
}

// stop asks the component to shut down and kills it after grace.
func (p *process) stop(grace time.Duration) error {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid())
	}
}

// ProcessAlive reports whether pid names a live (not zombie) process.
func ProcessAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return !errors.Is(err, syscall.ESRCH)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Field 3 is the state; Z means it has exited and waits to be reaped.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
