// Command jobsize runs the job-size benchmark alone and writes its section
// of the full run's page, docs/bench/full/README.md (make bench runs it
// too, after the other parts, into its own run's page):
//
//	go run ./bench/jobsize/cmd -trainers 100,2000,10000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/jobsize"
	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
)

func main() {
	sizes := flag.String("trainers", "100,2000,10000", "trainer counts, comma-separated")
	out := flag.String("out", "", "report file whose job-size section is (re)written (default docs/bench/full/README.md)")
	timeout := flag.Duration("timeout", 20*time.Minute, "how long one job may take to run")
	flag.Parse()
	var trainers []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "jobsize: -trainers %q: want positive numbers\n", *sizes)
			os.Exit(2)
		}
		trainers = append(trainers, n)
	}
	if *out == "" {
		root, err := localcluster.RepoRoot()
		if err != nil {
			fmt.Fprintln(os.Stderr, "jobsize:", err)
			os.Exit(1)
		}
		*out = filepath.Join(root, "docs", "bench", "full", "README.md")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logf := func(f string, a ...interface{}) {
		fmt.Printf("%s "+f+"\n", append([]interface{}{time.Now().Format("15:04:05")}, a...)...)
	}
	rs, err := jobsize.Run(ctx, jobsize.Options{Trainers: trainers, Logf: logf, Timeout: *timeout})
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobsize:", err)
		os.Exit(1)
	}
	cmd := "go run ./bench/jobsize/cmd -trainers " + *sizes
	if err := jobsize.WriteSection(*out, jobsize.Markdown(rs, cmd)); err != nil {
		fmt.Fprintln(os.Stderr, "jobsize:", err)
		os.Exit(1)
	}
	logf("wrote the job-size section of %s", *out)
}
