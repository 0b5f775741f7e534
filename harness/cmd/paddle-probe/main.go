// Command paddle-probe stands in for a Paddle trainer image in the real-node
// e2e tests: it does on the network what Paddle does when a distributed job
// starts (harness/paddleprobe) and reports it as JSON on stdout and in the
// termination message. SIGTERM ends it at once with exit 0, as a trainer
// that `exec`s does when CompleteJob stops the job.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/volcano-paddle/volcano-paddle/harness/paddleprobe"
	"github.com/volcano-paddle/volcano-paddle/pkg/version"
)

func main() {
	klog.InitFlags(nil)
	showVersion := flag.Bool("version", false, "print the version and exit")
	timeout := flag.Duration("timeout", 2*time.Minute, "how long clients retry connecting and the master waits for its trainers")
	failUntil := flag.Int("fail-until-version", 0, "trainer 0 fails after connecting while the job version is below this (injected failure)")
	fluidCTR := flag.Bool("fluid-ctr", false, "play seed 000's CTR image (Fluid endpoints) instead of fleet")
	termLog := flag.String("termination-log", "/dev/termination-log", "where to write the report (empty: stdout only)")
	flag.Parse()
	if *showVersion {
		version.Print(os.Stdout, "paddle-probe")
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	report, err := paddleprobe.Run(ctx, paddleprobe.Config{Env: os.Getenv, Timeout: *timeout, FailUntilVersion: *failUntil, FluidCTR: *fluidCTR})
	// Stopped from outside (CompleteJob, pod deletion) is a clean end.
	code := 0
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "paddle-probe: %v\n", err)
		code = 1
		var exit *paddleprobe.ExitError
		if errors.As(err, &exit) {
			code = exit.Code
		}
	}
	b, _ := json.Marshal(report)
	fmt.Println(string(b))
	if *termLog != "" {
		if err := os.WriteFile(*termLog, b, 0o644); err != nil && !os.IsNotExist(err) {
			klog.InfoS("could not write the termination message", "path", *termLog, "err", err)
		}
	}
	klog.Flush()
	os.Exit(code)
}
