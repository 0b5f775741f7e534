package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

const (
	demoNamespace = "paddle-demo"
	// In the demo, trainers of jobs that complete when their trainers do
	// finish this long after starting (KWOK plays the kubelet; nothing runs).
	demoTrainDuration = "15s"
)

func runDemo(args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	var cf clusterFlags
	cf.register(fs)
	keep := fs.Bool("keep", false, "keep the cluster running afterwards (stop it with `make down`)")
	examples := fs.String("examples", "", "folder of example jobs (default: deploy/examples)")
	timeout := fs.Duration("timeout", 3*time.Minute, "how long to wait for the jobs")
	p, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *examples == "" {
		root, err := localcluster.RepoRoot()
		if err != nil {
			return err
		}
		*examples = filepath.Join(root, "deploy", "examples")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// Use the cluster of `make up` if one runs; with --keep start one like
	// `make up` does; otherwise run a cluster for the demo only.
	var d *demoCluster
	if s, err := running(p); err != nil {
		return err
	} else if s != nil && s.Ready {
		fmt.Printf("Using the running local cluster (pid %d).\n", s.PID)
		if d, err = connect(p.kubeconfig); err != nil {
			return err
		}
	} else if *keep {
		fmt.Println("Starting the local cluster in the background (--keep).")
		var serveArgs []string
		if cf.topology != "" {
			serveArgs = append(serveArgs, "--topology", cf.topology)
		}
		if _, err := startDetached(p, serveArgs); err != nil {
			return err
		}
		if d, err = connect(p.kubeconfig); err != nil {
			return err
		}
	} else {
		fmt.Println("Starting a local cluster for the demo (etcd, kube-apiserver, KWOK nodes, Volcano with volcano-paddle).")
		opts, err := cf.options("demo", p, func(f string, a ...interface{}) { fmt.Printf("  "+f+"\n", a...) })
		if err != nil {
			return err
		}
		c, err := localcluster.Start(ctx, opts)
		if err != nil {
			return err
		}
		defer func() {
			fmt.Println("\nStopping the demo cluster (run `make demo DEMO_FLAGS=--keep` to keep it).")
			if err := c.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "stop: %v\n", err)
			}
		}()
		d = &demoCluster{kube: c.Kube, volcano: c.Volcano, create: c.Create}
	}
	return d.run(ctx, *examples, *timeout)
}

type demoCluster struct {
	kube    kubernetes.Interface
	volcano vcclient.Interface
	create  func(context.Context, string, []*unstructured.Unstructured) ([]*unstructured.Unstructured, error)
}

func connect(kubeconfig string) (*demoCluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	c := &localcluster.Cluster{Config: cfg}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Volcano, err = vcclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return &demoCluster{kube: c.Kube, volcano: c.Volcano, create: c.Create}, nil
}

func (d *demoCluster) run(ctx context.Context, dir string, timeout time.Duration) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no examples in %s", dir)
	}
	sort.Strings(files)
	if _, err := d.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	var jobs []string
	fmt.Printf("\nSubmitting the examples of %s to namespace %s:\n", dir, demoNamespace)
	for _, f := range files {
		objs, err := localcluster.ReadManifests(f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, o := range objs {
			if o.GetKind() == "Job" {
				localcluster.SimulateTraining(o, demoTrainDuration)
				jobs = append(jobs, o.GetName())
			}
		}
		if _, err := d.create(ctx, demoNamespace, objs); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
		fmt.Printf("  %-24s %s\n", filepath.Base(f), kindsOf(objs))
	}
	fmt.Printf("(simulation: trainers of jobs that complete with their trainers exit %s after they start)\n", demoTrainDuration)

	fmt.Println("\nWaiting for every gang to be placed and started...")
	if err := d.waitJobs(ctx, jobs, timeout, func(p batchv1alpha1.JobPhase) bool {
		return p == batchv1alpha1.Running || p == batchv1alpha1.Completed
	}); err != nil {
		return err
	}
	if err := d.printPlacement(ctx, jobs); err != nil {
		return err
	}
	if err := d.printGPUs(ctx, jobs); err != nil {
		return err
	}
	fmt.Println("\nWaiting for the jobs whose trainers finish to complete (pservers are then stopped by CompleteJob)...")
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		return d.allSettled(ctx, jobs), nil
	})
	if perr := d.printPhases(ctx, jobs); perr != nil {
		return perr
	}
	if err != nil {
		return fmt.Errorf("not every job completed within %s", timeout)
	}
	return nil
}

func kindsOf(objs []*unstructured.Unstructured) string {
	var parts []string
	for _, o := range objs {
		parts = append(parts, fmt.Sprintf("%s/%s", strings.ToLower(o.GetKind()), o.GetName()))
	}
	return strings.Join(parts, ", ")
}

func (d *demoCluster) waitJobs(ctx context.Context, jobs []string, timeout time.Duration, done func(batchv1alpha1.JobPhase) bool) error {
	last := map[string]batchv1alpha1.JobPhase{}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		all := true
		for _, name := range jobs {
			j, err := d.volcano.BatchV1alpha1().Jobs(demoNamespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			ph := j.Status.State.Phase
			if ph != last[name] {
				fmt.Printf("  %-20s %s\n", name, ph)
				last[name] = ph
			}
			if !done(ph) {
				all = false
			}
		}
		return all, nil
	})
	if err != nil {
		var stuck []string
		for _, name := range jobs {
			if !done(last[name]) {
				stuck = append(stuck, fmt.Sprintf("%s (%s)", name, last[name]))
			}
		}
		return fmt.Errorf("jobs not there after %s: %s; see `kubectl --kubeconfig .local/kubeconfig -n %s describe vcjob`", timeout, strings.Join(stuck, ", "), demoNamespace)
	}
	return nil
}

func (d *demoCluster) allSettled(ctx context.Context, jobs []string) bool {
	for _, name := range jobs {
		j, err := d.volcano.BatchV1alpha1().Jobs(demoNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		if j.Status.State.Phase != batchv1alpha1.Completed && localcluster.CompletesWithTrainers(j) {
			return false
		}
	}
	return true
}

func (d *demoCluster) printPlacement(ctx context.Context, jobs []string) error {
	nodes, err := d.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	rack := map[string]string{}
	for _, n := range nodes.Items {
		rack[n.Name] = n.Labels[localcluster.LabelRack]
	}
	fmt.Println("\nWhere every pod went, and what it was told (all from the API server):")
	// The peer lists are in the job's ConfigMap; pods refer to them.
	cms, err := d.kube.CoreV1().ConfigMaps(demoNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	cmData := map[string]map[string]string{}
	for _, cm := range cms.Items {
		cmData[cm.Name] = cm.Data
	}
	for _, name := range jobs {
		pods, err := d.kube.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1alpha1.JobNameKey + "=" + name})
		if err != nil {
			return err
		}
		sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
		j, _ := d.volcano.BatchV1alpha1().Jobs(demoNamespace).Get(ctx, name, metav1.GetOptions{})
		mode := ""
		if len(pods.Items) > 0 {
			mode = pods.Items[0].Labels[paddleapi.ModeLabel]
		}
		fmt.Printf("\njob %s (mode %s, phase %s, plugins %v)\n", name, mode, j.Status.State.Phase, j.Spec.Plugins)
		tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  POD\tTRAINING_ROLE\tNODE\tRACK\tGPUS\tPOD_IP (DNS name)\tID\tPADDLE_CURRENT_ENDPOINT")
		var shared map[string]string
		for _, p := range pods.Items {
			env := map[string]string{}
			for _, e := range p.Spec.Containers[0].Env {
				env[e.Name] = e.Value
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					env[e.Name] = cmData[e.ValueFrom.ConfigMapKeyRef.Name][e.ValueFrom.ConfigMapKeyRef.Key]
				}
			}
			if shared == nil {
				shared = env
			}
			id := env["PADDLE_TRAINER_ID"]
			if v, ok := env["PADDLE_PSERVER_ID"]; ok {
				id = "ps " + v
			}
			gpus := "-"
			if q, ok := p.Spec.Containers[0].Resources.Limits[gputopology.ResourceName]; ok {
				gpus = q.String()
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, env["TRAINING_ROLE"], p.Spec.NodeName, rack[p.Spec.NodeName], gpus, env["POD_IP"], id, env["PADDLE_CURRENT_ENDPOINT"])
		}
		tw.Flush()
		for _, k := range []string{"PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ENDPOINTS", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_PSERVERS", "PADDLE_MASTER", "PADDLE_NNODES", "PADDLE_WITH_GLOO", "PADDLE_GLOO_HTTP_ENDPOINT", "TRAINER_PORTS_NUM"} {
			if v, ok := shared[k]; ok {
				fmt.Printf("    %s=%s\n", k, v)
			}
		}
	}
	return nil
}

func (d *demoCluster) printPhases(ctx context.Context, jobs []string) error {
	fmt.Println("\nJobs:")
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  JOB\tPHASE\tPODS")
	for _, name := range jobs {
		j, err := d.volcano.BatchV1alpha1().Jobs(demoNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pods, err := d.kube.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1alpha1.JobNameKey + "=" + name})
		if err != nil {
			return err
		}
		count := map[corev1.PodPhase]int{}
		for _, p := range pods.Items {
			count[p.Status.Phase]++
		}
		var parts []string
		for _, ph := range []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded, corev1.PodPending, corev1.PodFailed} {
			if count[ph] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", count[ph], strings.ToLower(string(ph))))
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", name, j.Status.State.Phase, strings.Join(parts, ", "))
	}
	return tw.Flush()
}
