package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/volcano-paddle/volcano-paddle/internal/historyexport"
	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
)

var exportCommand = command{
	name:    "export",
	summary: "write the cluster's finished Volcano Jobs as a history CSV",
	run:     runExport,
	flags:   func() *flag.FlagSet { fs, _ := exportFlags(); return fs },
}

type exportOptions struct {
	kubeconfig string
	context    string
	namespace  string
	since      time.Duration
	out        string
	omitNames  bool
	qps        float64
	verbose    bool
}

func exportFlags() (*flag.FlagSet, *exportOptions) {
	o := &exportOptions{}
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)")
	fs.StringVar(&o.context, "context", "", "kubeconfig context (default: its current context)")
	fs.StringVar(&o.namespace, "namespace", "", "export the jobs of this namespace only (default: all namespaces)")
	fs.DurationVar(&o.since, "since", 0, "export the jobs that ended within this long, such as 720h for 30 days (default: all)")
	fs.StringVar(&o.out, "o", "", "write the CSV to this file, replaced only once the export succeeded (default: stdout)")
	fs.BoolVar(&o.omitNames, "omit-names", false, "leave the name column empty (namespace and queue stay: the replay needs them)")
	fs.BoolVar(&o.verbose, "v", false, "print each job left out and why")
	fs.Float64Var(&o.qps, "qps", 20, "most API requests per second (one list per page of jobs, one per finished job for its pods)")
	return fs, o
}

func runExport(args []string, stdout, stderr io.Writer) error {
	fs, o := exportFlags()
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError("%v", err)
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q: export takes flags only (paddle-replay help export)", fs.Arg(0))
	}
	if o.since < 0 {
		return usageError("--since=%s: give a positive duration such as 720h, or leave it out for all jobs", o.since)
	}
	if o.qps <= 0 {
		return usageError("--qps=%g: give a positive rate", o.qps)
	}
	kube, vc, err := clients(o)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	out, commit, abort, err := output(o.out, stdout)
	if err != nil {
		return err
	}
	w := jobhistory.NewWriter(out)
	opts := historyexport.Options{Namespace: o.namespace, Since: o.since, OmitNames: o.omitNames}
	if o.verbose {
		opts.Skipped = func(job *batch.Job, why *jobhistory.Skip) {
			fmt.Fprintf(stderr, "skipped %s/%s: %v\n", job.Namespace, job.Name, why)
		}
	}
	sum, err := historyexport.Export(ctx, kube, vc, w, opts)
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		abort()
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	where := "stdout"
	if o.out != "" {
		where = o.out
	}
	fmt.Fprintf(stderr, "paddle-replay export: %s, to %s\n", sum, where)
	return nil
}

// clients are the Kubernetes and Volcano clients of the kubeconfig, as
// kubectl finds it (clientcmd's loading rules).
func clients(o *exportOptions) (kubernetes.Interface, vcclient.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context}).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("kubeconfig: %w (give one with --kubeconfig FILE)", err)
	}
	// client-go's default of 5 requests per second would take half an
	// hour for 10,000 jobs; an export is a short burst of reads.
	cfg.QPS, cfg.Burst = float32(o.qps), int(2*o.qps)
	cfg.UserAgent = "paddle-replay-export"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	vc, err := vcclient.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return kube, vc, nil
}

// output is where the CSV goes: stdout, or a temporary file beside path
// that commit renames to path, so that a failed export never leaves a
// truncated history where a good one was; abort removes it.
func output(path string, stdout io.Writer) (w io.Writer, commit func() error, abort func(), err error) {
	if path == "" {
		return stdout, func() error { return nil }, func() {}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("-o %s: %w", path, err)
	}
	commit = func() error {
		if err := f.Close(); err != nil {
			os.Remove(f.Name())
			return fmt.Errorf("-o %s: %w", path, err)
		}
		if err := os.Rename(f.Name(), path); err != nil {
			os.Remove(f.Name())
			return fmt.Errorf("-o %s: %w", path, err)
		}
		return nil
	}
	abort = func() {
		f.Close()
		os.Remove(f.Name())
	}
	return f, commit, abort, nil
}
