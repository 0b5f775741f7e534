package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
)

type clusterFlags struct {
	topology      string
	schedulerConf string
	verbosity     int
	realNode      bool
	dnsCache      int
	dnsTTL        int
}

func (f *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.topology, "topology", "", "topology file for the simulated nodes (default: 2 racks x 4 nodes x 8 GPUs)")
	fs.StringVar(&f.schedulerConf, "scheduler-conf", "", "scheduler configuration file (default: deploy/paddle/volcano-scheduler.conf)")
	fs.IntVar(&f.verbosity, "v", 3, "log verbosity of the Volcano components")
	fs.BoolVar(&f.realNode, "real-node", false, "add the real node real-0 (kubelet, containerd, CoreDNS; needs root)")
	fs.IntVar(&f.dnsCache, "dns-cache", 30, "CoreDNS `cache` seconds on the real node")
	fs.IntVar(&f.dnsTTL, "dns-ttl", 30, "CoreDNS kubernetes `ttl` seconds on the real node")
}

// parseClusterFlags parses the args of serve or up (up passes its args on
// to serve, so both take these flags) and returns the flags with the local
// cluster's paths.
func parseClusterFlags(command string, args []string) (*clusterFlags, paths, error) {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	cf := &clusterFlags{}
	cf.register(fs)
	p, err := parseArgs(fs, args)
	return cf, p, err
}

func (f *clusterFlags) options(name string, p paths, logf func(string, ...interface{})) (localcluster.Options, error) {
	opts := localcluster.Options{
		Name: name, KubeconfigPath: p.kubeconfig, Verbosity: f.verbosity, Logf: logf,
		LogDir: filepath.Join(p.dir, "logs", name),
	}
	if f.realNode {
		opts.RealNode = &localcluster.RealNodeOptions{CacheSeconds: f.dnsCache, TTLSeconds: f.dnsTTL}
	}
	if f.schedulerConf != "" {
		conf, err := filepath.Abs(f.schedulerConf)
		if err != nil {
			return opts, err
		}
		if _, err := os.Stat(conf); err != nil {
			return opts, fmt.Errorf("scheduler configuration: %w", err)
		}
		opts.SchedulerConf = conf
	}
	if f.topology != "" {
		t, err := localcluster.LoadTopology(f.topology)
		if err != nil {
			return opts, err
		}
		opts.Topology = t
	}
	// A fresh folder per run: logs of an earlier run would mislead.
	if err := os.RemoveAll(opts.LogDir); err != nil {
		return opts, err
	}
	return opts, nil
}

// runServe runs the cluster in the foreground until SIGINT/SIGTERM, keeping
// .local/cluster.json up to date for up, down and status.
func runServe(args []string) error {
	cf, p, err := parseClusterFlags("serve", args)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	if s, err := running(p); err != nil {
		return err
	} else if s != nil && s.PID != os.Getpid() {
		return fmt.Errorf("a local cluster already runs (pid %d); run `make down` first", s.PID)
	}
	st := &state{PID: os.Getpid(), Kubeconfig: p.kubeconfig}
	if err := writeState(p, st); err != nil {
		return err
	}
	logger := log.New(os.Stdout, "", log.LstdFlags)
	opts, err := cf.options("up", p, logger.Printf)
	if err != nil {
		st.Error = err.Error()
		_ = writeState(p, st)
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	c, err := localcluster.Start(ctx, opts)
	if err != nil {
		st.Error = err.Error()
		_ = writeState(p, st)
		return err
	}
	st.Ready, st.LogDir, st.Components, st.Nodes = true, c.LogDir, c.PIDs(), c.Topology.NodeCount()
	st.RealNode = opts.RealNode != nil
	if err := writeState(p, st); err != nil {
		_ = c.Stop()
		return err
	}
	logger.Printf("serving; stop with `make down` (SIGTERM to pid %d)", os.Getpid())

	var runErr error
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
			if err := c.Healthy(); err != nil {
				runErr = err
				logger.Printf("stopping: %v", err)
				break loop
			}
		}
	}
	logger.Printf("stopping the local cluster")
	if err := c.Stop(); err != nil {
		logger.Printf("stop: %v", err)
		if runErr == nil {
			runErr = err
		}
	}
	_ = os.Remove(p.kubeconfig)
	_ = os.Remove(p.state)
	logger.Printf("stopped")
	return runErr
}

// runUp starts `serve` detached from the terminal and returns when the
// cluster is ready, streaming its progress.
func runUp(args []string) error {
	_, p, err := parseClusterFlags("up", args)
	if err != nil {
		return err
	}
	if s, err := running(p); err != nil {
		return err
	} else if s != nil {
		fmt.Printf("A local cluster already runs (pid %d).\n", s.PID)
		printUsage(p, s)
		return nil
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	s, err := startDetached(p, args)
	if err != nil {
		return err
	}
	printUsage(p, s)
	return nil
}

func startDetached(p paths, serveArgs []string) (*state, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	_ = os.Remove(p.state)
	logf, err := os.Create(p.serveLog)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, append([]string{"serve"}, serveArgs...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own session: the cluster outlives this command and the terminal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	follow, err := os.Open(p.serveLog)
	if err != nil {
		return nil, err
	}
	defer follow.Close()
	rd := bufio.NewReader(follow)
	pump := func() {
		for {
			line, err := rd.ReadString('\n')
			if line != "" && strings.HasSuffix(line, "\n") {
				fmt.Print("  " + line)
			} else if line != "" {
				// Partial line: read it again once complete.
				_, _ = follow.Seek(-int64(len(line)), io.SeekCurrent)
				rd.Reset(follow)
				return
			}
			if err != nil {
				return
			}
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		pump()
		select {
		case err := <-exited:
			pump()
			return nil, fmt.Errorf("the cluster exited during start-up (%v); see %s", err, p.serveLog)
		case <-time.After(200 * time.Millisecond):
		}
		s, err := readState(p)
		if err != nil || s.PID != cmd.Process.Pid {
			continue
		}
		if s.Error != "" {
			return nil, fmt.Errorf("%s", s.Error)
		}
		if s.Ready {
			pump()
			return s, nil
		}
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
	return nil, fmt.Errorf("the cluster was not ready after 5 minutes; see %s", p.serveLog)
}

func printUsage(p paths, s *state) {
	rel := func(path string) string {
		if wd, err := os.Getwd(); err == nil {
			if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
				return r
			}
		}
		return path
	}
	fmt.Printf(`
Local cluster is up: %d simulated GPU nodes, Volcano built with volcano-paddle.

  kubectl --kubeconfig %s get nodes
  export KUBECONFIG=%s
  kubectl apply -f deploy/examples/ctr-volcano.yaml
  kubectl get vcjob,pods -o wide

Component logs: %s
Stop it with:   make down
`, s.Nodes, rel(p.kubeconfig), p.kubeconfig, rel(s.LogDir))
	if s.RealNode {
		fmt.Printf(`
The real node %s runs too (kubelet, containerd, CoreDNS at %s). Pods land
there with nodeSelector %s: "true", a toleration of the taint %s,
schedulerName volcano, and images imported from .local/images (make images);
nothing is pulled. See docs/testing.md.
`, localcluster.RealNodeName, localcluster.RealNodeIP, localcluster.RealNodeLabel, localcluster.RealNodeTaint)
	}
}

func runDown(args []string) error {
	p, s, err := stateFor("down", args)
	if err != nil {
		return err
	}
	if s == nil {
		_ = os.Remove(p.kubeconfig)
		if err := cleanupRealNode(); err != nil {
			return err
		}
		fmt.Println("No local cluster is running.")
		return nil
	}
	fmt.Printf("Stopping the local cluster (pid %d)...\n", s.PID)
	_ = syscall.Kill(s.PID, syscall.SIGTERM)
	deadline := time.Now().Add(90 * time.Second)
	for alive(s.PID) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(s.PID) {
		_ = syscall.Kill(s.PID, syscall.SIGKILL)
	}
	// The components die with their owner (parent-death signal); make sure.
	var left []string
	for name, pid := range s.Components {
		for i := 0; i < 100 && alive(pid); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			left = append(left, fmt.Sprintf("%s (pid %d)", name, pid))
		}
	}
	_ = os.Remove(p.kubeconfig)
	_ = os.Remove(p.state)
	if err := cleanupRealNode(); err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("had to kill leftover components: %s", strings.Join(left, ", "))
	}
	fmt.Println("Stopped; no component is left running.")
	return nil
}

// cleanupRealNode removes what a real node left when its owner was killed
// (its containers, mounts, bridge and cgroups outlive it); a clean stop
// leaves nothing, and then this does nothing.
func cleanupRealNode() error {
	if !localcluster.RealNodeLeftovers() {
		return nil
	}
	fmt.Println("Removing what a killed run's real node left behind...")
	return localcluster.CleanupRealNode()
}

func runStatus(args []string) error {
	p, s, err := stateFor("status", args)
	if err != nil {
		return err
	}
	if s == nil {
		fmt.Println("No local cluster is running. Start one with `make up`.")
		return nil
	}
	if !s.Ready {
		fmt.Printf("The local cluster (pid %d) is starting.\n", s.PID)
		return nil
	}
	fmt.Printf("The local cluster runs (pid %d).\n", s.PID)
	printUsage(p, s)
	return nil
}

func alive(pid int) bool { return localcluster.ProcessAlive(pid) }
