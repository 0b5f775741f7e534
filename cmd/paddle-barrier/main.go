// Command paddle-barrier is the init container the paddle job plugin adds to
// every pod of a Paddle job: it exits 0 once every peer host name has an
// address in the cluster DNS, and 1 with the names that do not after the
// timeout, so that the pod fails visibly (and a RestartJob policy restarts
// the gang) instead of Paddle failing a one-shot lookup later. How it avoids
// leaving negative answers in CoreDNS's cache: internal/dnsbarrier.
//
// It reads its input from the environment the plugin sets:
//
//	PADDLE_BARRIER_HOSTS            comma-separated peer names (e.g. wd-ps-0.wd,wd-worker-0.wd)
//	PADDLE_BARRIER_TIMEOUT_SECONDS  how long to wait
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/volcano-paddle/volcano-paddle/internal/dnsbarrier"
	"github.com/volcano-paddle/volcano-paddle/pkg/version"
)

func main() {
	klog.InitFlags(nil)
	showVersion := flag.Bool("version", false, "print the version and exit")
	resolvConf := flag.String("resolv-conf", "/etc/resolv.conf", "resolver configuration to read name servers and the search domain from")
	interval := flag.Duration("interval", 200*time.Millisecond, "time between two rounds of questions")
	termLog := flag.String("termination-log", "/dev/termination-log", "where to write the report when the barrier passes (empty: nowhere)")
	flag.Parse()
	if *showVersion {
		version.Print(os.Stdout, "paddle-barrier")
		return
	}
	if err := run(*resolvConf, *interval, *termLog); err != nil {
		fmt.Fprintf(os.Stderr, "paddle: %v\n", err)
		klog.Flush()
		os.Exit(1)
	}
}

func run(resolvConf string, interval time.Duration, termLog string) error {
	hosts := strings.Split(os.Getenv("PADDLE_BARRIER_HOSTS"), ",")
	secs, err := strconv.Atoi(os.Getenv("PADDLE_BARRIER_TIMEOUT_SECONDS"))
	if err != nil || secs < 1 {
		return fmt.Errorf("PADDLE_BARRIER_TIMEOUT_SECONDS=%q: want a whole number of seconds, at least 1", os.Getenv("PADDLE_BARRIER_TIMEOUT_SECONDS"))
	}
	servers, search, err := dnsbarrier.FromResolvConf(resolvConf)
	if err != nil {
		return err
	}
	// The kubelet stops an init container with SIGTERM when the pod goes.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	res, err := dnsbarrier.Wait(ctx, dnsbarrier.Config{
		Hosts: hosts, Search: search, Servers: servers,
		Timeout: time.Duration(secs) * time.Second, Interval: interval,
	})
	if err != nil {
		return err
	}
	passed := time.Now()
	fmt.Printf("paddle: all %d peers resolve (%s, %d DNS questions)\n", len(res.Addresses), res.Elapsed.Round(time.Millisecond), res.Questions)
	if termLog == "" {
		return nil
	}
	b, err := json.Marshal(dnsbarrier.Report{
		Passed: passed.UTC().Format(time.RFC3339Nano), Elapsed: res.Elapsed.String(),
		Questions: res.Questions, Addresses: res.Addresses,
	})
	if err != nil {
		return err
	}
	// A missing termination log (run outside Kubernetes) is not an error.
	if err := os.WriteFile(termLog, b, 0o644); err != nil && !os.IsNotExist(err) {
		klog.InfoS("could not write the termination message", "path", termLog, "err", err)
	}
	return nil
}
