// Package localcluster runs a real Kubernetes control plane on loopback for
// the demo, the e2e tests and the benchmarks: etcd, kube-apiserver, Volcano's
// CRDs and webhook configurations (read from the module cache), KWOK as the
// kubelets of simulated GPU nodes, and our Volcano builds (webhook manager,
// controller manager, scheduler) with the scheduler configuration from
// deploy/. No container runtime and no download is involved.
package localcluster

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
	"github.com/volcano-paddle/volcano-paddle/pkg/controllers/paddleelastic"
)

//go:embed kwok.yaml
var kwokConfig []byte

// Component names, also the names of their log files.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	KubeControllers   = "kube-controller-manager"
	Kwok              = "kwok"
	WebhookManager    = "vc-webhook-manager-paddle"
	ControllerManager = "vc-controller-manager-paddle"
	Scheduler         = "vc-scheduler-paddle"
)

// Options configures a local cluster. The zero value gives the default
// topology, the deploy/ scheduler configuration and binaries from bin/.
type Options struct {
	// Name appears in work and log folder names; default "cluster".
	Name string
	// BinDir holds etcd, kube-apiserver, kwok and our three binaries.
	BinDir string
	// Topology of the simulated nodes; default DefaultTopology().
	Topology *Topology
	// SchedulerConf is the scheduler configuration file; default the one in
	// deploy/paddle.
	SchedulerConf string
	// LogDir receives one log per component; default .local/logs/<name>-<time>.
	LogDir string
	// KubeconfigPath, if set, also receives the admin kubeconfig.
	KubeconfigPath string
	// Verbosity of Volcano's components (klog -v); default 3.
	Verbosity int
	// ExtraArgs are appended to a component's command line, by component name.
	ExtraArgs map[string][]string
	// SkipVolcano starts only the control plane and KWOK (no Volcano parts).
	SkipVolcano bool
	// WithoutNodeLifecycle leaves out Kubernetes' node lifecycle controller.
	// Benchmarks with thousands of simulated nodes use it: on 2 cores KWOK
	// cannot renew that many node Leases in time, and the controller would
	// mark nodes unreachable in waves.
	WithoutNodeLifecycle bool
	// RealNode, when set, adds the real node real-0 (kubelet, containerd,
	// CoreDNS) beside the KWOK nodes; see realnode.go. It needs root and
	// the packages hack/realnode-deps.sh installs.
	RealNode *RealNodeOptions
	// Logf reports progress; default discards.
	Logf func(format string, args ...interface{})
}

// Cluster is a running local cluster.
type Cluster struct {
	// Kubeconfig is the admin kubeconfig (in the work folder, or
	// Options.KubeconfigPath when given).
	Kubeconfig string
	// controllersKubeconfig authenticates as ControllersUser.
	controllersKubeconfig string
	Config                *rest.Config
	Kube                  kubernetes.Interface
	Volcano               vcclient.Interface
	// LogDir holds one log file per component.
	LogDir string
	// WorkDir holds etcd data, certificates and configuration; removed on Stop.
	WorkDir string
	// SchedulerConf is the configuration file the scheduler watches; write it
	// (SetSchedulerConf) to change tiers while the scheduler runs.
	SchedulerConf string
	// Topology the nodes were built from.
	Topology *Topology

	opts  Options
	pki   *pki
	ports map[string]int

	real *realNode

	mu    sync.Mutex
	procs map[string]*process
	order []string
	args  map[string][]string
	bins  map[string]string
}

func (o *Options) defaults() error {
	if o.Name == "" {
		o.Name = "cluster"
	}
	if o.Logf == nil {
		o.Logf = func(string, ...interface{}) {}
	}
	if o.Topology == nil {
		o.Topology = DefaultTopology()
	}
	if err := o.Topology.Validate(); err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	if o.Verbosity == 0 {
		o.Verbosity = 3
	}
	root, rootErr := RepoRoot()
	if o.BinDir == "" {
		if rootErr != nil {
			return rootErr
		}
		o.BinDir = filepath.Join(root, "bin")
	}
	if o.SchedulerConf == "" {
		p, err := DeploySchedulerConf()
		if err != nil {
			return err
		}
		o.SchedulerConf = p
	}
	if o.LogDir == "" {
		if rootErr != nil {
			return rootErr
		}
		o.LogDir = filepath.Join(root, ".local", "logs", fmt.Sprintf("%s-%s", o.Name, time.Now().Format("20060102-150405.000")))
	}
	return nil
}

// Start brings the cluster up and returns once nodes are Ready and every
// component is serving. On error everything started so far is stopped and
// the error names the component and its log.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if !opts.SkipVolcano {
		if err := checkVolcanoBinaries(ctx, opts.BinDir); err != nil {
			return nil, err
		}
	}
	SweepStaleWorkDirs()
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", workDirPrefix+opts.Name+"-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(work, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, err
	}
	c := &Cluster{
		LogDir: opts.LogDir, WorkDir: work, opts: opts, Topology: opts.Topology,
		procs: map[string]*process{}, args: map[string][]string{}, bins: map[string]string{},
	}
	started := time.Now()
	if err := c.startAll(ctx); err != nil {
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, fmt.Errorf("%w\ncomponent logs are in %s", err, opts.LogDir)
	}
	opts.Logf("local cluster %q ready in %s (%d nodes); logs in %s", opts.Name, time.Since(started).Round(100*time.Millisecond), opts.Topology.NodeCount(), opts.LogDir)
	return c, nil
}

func (c *Cluster) startAll(ctx context.Context) error {
	var err error
	if c.pki, err = newPKI(filepath.Join(c.WorkDir, "pki")); err != nil {
		return err
	}
	names := []string{"etcd-client", "etcd-peer", "apiserver", "kcm", "webhook", "kwok", "sched-metrics", "sched-healthz", "ctrl-metrics", "ctrl-healthz"}
	ports, err := freePorts(len(names))
	if err != nil {
		return err
	}
	c.ports = map[string]int{}
	for i, n := range names {
		c.ports[n] = ports[i]
	}

	etcdURL, err := c.startEtcd(ctx)
	if err != nil {
		return err
	}
	if err := c.startAPIServer(ctx, etcdURL); err != nil {
		return err
	}
	admissions, err := c.installVolcanoAndStartControllers(ctx)
	if err != nil {
		return err
	}
	if err := c.startKwok(ctx); err != nil {
		return err
	}
	if c.opts.SkipVolcano {
		return c.waitNodesReady(ctx, 60*time.Second)
	}
	if err := c.startVolcano(ctx, admissions); err != nil {
		return err
	}
	if err := c.waitNodesReady(ctx, 60*time.Second); err != nil {
		return err
	}
	if c.opts.RealNode != nil {
		if err := c.startRealNode(ctx); err != nil {
			return fmt.Errorf("real node: %w", err)
		}
	}
	return c.waitVolcanoReady(ctx)
}

// startEtcd starts etcd on loopback and returns its client URL once healthy.
func (c *Cluster) startEtcd(ctx context.Context) (string, error) {
	c.opts.Logf("starting etcd")
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", c.ports["etcd-client"])
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", c.ports["etcd-peer"])
	if err := c.start(Etcd, []string{
		"--name=local", "--data-dir=" + filepath.Join(c.WorkDir, "etcd"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=local=" + peerURL,
		// The data is thrown away with the cluster; fsync only costs time.
		"--unsafe-no-fsync=true", "--log-level=warn",
		"--quota-backend-bytes=8589934592",
	}); err != nil {
		return "", err
	}
	return etcdURL, c.waitHTTP(ctx, Etcd, etcdURL+"/health", 30*time.Second, nil)
}

// startAPIServer starts kube-apiserver, waits until it is ready and makes the
// admin kubeconfig and clients.
func (c *Cluster) startAPIServer(ctx context.Context, etcdURL string) error {
	c.opts.Logf("starting kube-apiserver")
	host := fmt.Sprintf("https://127.0.0.1:%d", c.ports["apiserver"])
	if err := c.start(APIServer, []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", c.ports["apiserver"]),
		"--tls-cert-file=" + c.pki.apiserverCertFile, "--tls-private-key-file=" + c.pki.apiserverKeyFile,
		"--client-ca-file=" + c.pki.caCertFile,
		"--token-auth-file=" + c.pki.tokenFile,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.pki.saPubFile,
		"--service-account-signing-key-file=" + c.pki.saKeyFile,
		"--service-cluster-ip-range=10.96.0.0/16",
		// kubectl logs/exec reach a real kubelet at its node IP; KWOK nodes
		// list one too (design.md 5b).
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		// No token controller runs here, and no node-lifecycle controller
		// would ever lift the not-ready taint added at node creation.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--allow-privileged=true",
		"--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000",
		"--cert-dir=" + filepath.Join(c.WorkDir, "apiserver-certs"),
		"--v=1",
	}); err != nil {
		return err
	}
	c.Config = &rest.Config{Host: host, BearerToken: c.pki.adminToken, TLSClientConfig: c.tlsConfig(), QPS: 500, Burst: 1000}
	if err := c.waitHTTP(ctx, APIServer, host+"/readyz", 60*time.Second, c.Config); err != nil {
		return err
	}
	if err := c.writeKubeconfig(); err != nil {
		return err
	}
	var err error
	if c.Kube, err = kubernetes.NewForConfig(c.Config); err != nil {
		return err
	}
	c.Volcano, err = vcclient.NewForConfig(c.Config)
	return err
}

// tlsConfig trusts the cluster's CA.
func (c *Cluster) tlsConfig() rest.TLSClientConfig {
	return rest.TLSClientConfig{CAData: c.pki.caCertPEM}
}

// installVolcanoAndStartControllers installs the CRDs of the embedded Volcano
// release, starts kube-controller-manager and (unless SkipVolcano) creates
// Volcano's webhook configurations; it returns the admission paths the
// webhook manager must serve.
func (c *Cluster) installVolcanoAndStartControllers(ctx context.Context) ([]string, error) {
	ext, err := apiextensionsclient.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	c.opts.Logf("installing Volcano %s CRDs and webhook configurations", volcanorelease.Version())
	if err := installVolcanoCRDs(ctx, ext); err != nil {
		return nil, fmt.Errorf("installing Volcano CRDs: %w", err)
	}
	if err := c.ensureNamespace(ctx, "volcano-system"); err != nil {
		return nil, err
	}
	// The garbage collector removes what a deleted Job owns (pods, PodGroups,
	// the plugin's Service), the namespace controller empties deleted
	// namespaces, the PV binder binds claims and the node lifecycle controller
	// taints nodes that stop being Ready (KWOK renews their Leases), as on
	// any real cluster. The endpointslice controller publishes the pods of
	// headless Services, from which CoreDNS builds their records (the real
	// node). Started after the CRDs exist so that its first discovery
	// already covers Volcano's resources.
	controllers := "garbagecollector,namespace,persistentvolume-binder,endpointslice,nodelifecycle"
	if c.opts.WithoutNodeLifecycle {
		controllers = "garbagecollector,namespace,persistentvolume-binder,endpointslice"
	}
	if err := c.start(KubeControllers, []string{
		"--kubeconfig=" + c.Kubeconfig, "--leader-elect=false",
		"--controllers=" + controllers,
		"--node-monitor-grace-period=40s", "--node-eviction-rate=0.1",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", c.ports["kcm"]),
		"--cert-dir=" + filepath.Join(c.WorkDir, "kcm-certs"),
		"--kube-api-qps=200", "--kube-api-burst=400",
		"--v=1",
	}); err != nil {
		return nil, err
	}
	if c.opts.SkipVolcano {
		return nil, nil
	}
	admissions, err := installVolcanoWebhooks(ctx, c.Kube, c.webhookURL(), c.pki.caCertPEM)
	if err != nil {
		return nil, fmt.Errorf("installing Volcano webhook configurations: %w", err)
	}
	return admissions, nil
}

func (c *Cluster) webhookURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d", c.ports["webhook"])
}

// nodeLeaseSeconds is the duration of the simulated nodes' Leases in
// kube-node-lease, renewed every quarter of it like a kubelet's
// (KubeletConfiguration's nodeLeaseDurationSeconds default). Without them
// the node lifecycle controller sees only the Ready condition's heartbeat,
// which KWOK writes once, and marks every simulated node Unknown and
// unreachable after its grace period. Clusters without that controller
// (WithoutNodeLifecycle: thousands of nodes) get none (0), which spares
// KWOK a write per node every 10 s.
func (c *Cluster) nodeLeaseSeconds() int {
	if c.opts.WithoutNodeLifecycle {
		return 0
	}
	return 40
}

// startKwok starts KWOK for the simulated nodes and creates them.
func (c *Cluster) startKwok(ctx context.Context) error {
	c.opts.Logf("starting kwok and creating %d nodes", c.opts.Topology.NodeCount())
	kwokConf := filepath.Join(c.WorkDir, "kwok.yaml")
	if err := os.WriteFile(kwokConf, kwokConfig, 0o644); err != nil {
		return err
	}
	if err := c.start(Kwok, []string{
		"--kubeconfig=" + c.Kubeconfig, "--config=" + kwokConf,
		// Only the simulated nodes (topology.go annotates them): the real
		// node's kubelet reports its own status and runs its own pods.
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		fmt.Sprintf("--node-lease-duration-seconds=%d", c.nodeLeaseSeconds()),
		fmt.Sprintf("--server-address=127.0.0.1:%d", c.ports["kwok"]),
	}); err != nil {
		return err
	}
	return c.createNodes(ctx)
}

// waitVolcanoReady waits for the health endpoints of kube-controller-manager
// and our controller manager and scheduler, and for the default queue the
// scheduler creates.
func (c *Cluster) waitVolcanoReady(ctx context.Context) error {
	insecure := &rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	if err := c.waitHTTP(ctx, KubeControllers, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.ports["kcm"]), 60*time.Second, insecure); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, ControllerManager, fmt.Sprintf("http://127.0.0.1:%d/healthz", c.ports["ctrl-healthz"]), 60*time.Second, nil); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, Scheduler, fmt.Sprintf("http://127.0.0.1:%d/healthz", c.ports["sched-healthz"]), 60*time.Second, nil); err != nil {
		return err
	}
	if err := c.poll(ctx, "the default queue to be open", 60*time.Second, func(ctx context.Context) (bool, error) {
		q, err := c.Volcano.SchedulingV1beta1().Queues().Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return q.Status.State == "Open", nil
	}); err != nil {
		return err
	}
	// Volcano's job admission looks the queue up in the webhook manager's
	// own informer (pkg/webhooks/admission/jobs/validate/admit_job.go,
	// validateJobCreate: QueueLister.Get), which may see the new queue
	// later than the API does; a job created in between is refused with
	// "unable to find job queue". So the cluster is ready once a dry-run
	// job in the default queue passes every admission webhook.
	probe := admissionProbeJob()
	return c.poll(ctx, "job admission to see the default queue", 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := c.Volcano.BatchV1alpha1().Jobs(metav1.NamespaceDefault).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, err
	})
}

// admissionProbeJob is the smallest job Volcano's admission accepts: one
// task of one pod in the default queue. It is only ever created dry-run.
func admissionProbeJob() *batchv1alpha1.Job {
	return &batchv1alpha1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "admission-probe", Namespace: metav1.NamespaceDefault},
		Spec: batchv1alpha1.JobSpec{
			SchedulerName: "volcano",
			Queue:         "default",
			MinAvailable:  1,
			Tasks: []batchv1alpha1.TaskSpec{{
				Name:     "probe",
				Replicas: 1,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "probe", Image: "probe"}},
				}},
			}},
		},
	}
}

func (c *Cluster) start(name string, args []string) error {
	return c.startBinary(name, filepath.Join(c.opts.BinDir, name), append(args, c.opts.ExtraArgs[name]...), componentEnv(name))
}

// componentEnv is what a component gets on top of this process's
// environment. The controller manager's elastic-job controller may connect
// only to etcd pods on loopback or the real node's pod range, never to a
// simulated pod's IP: KWOK hands out 10.0.0.0/16, which leads off the
// machine (paddleelastic.NetworksEnv).
func componentEnv(name string) []string {
	if name == ControllerManager {
		return []string{paddleelastic.NetworksEnv + "=127.0.0.0/8," + PodCIDR}
	}
	return nil
}

// startBinary starts a component from any binary (containerd comes from
// the system) and records it for Stop, Healthy and StartComponent.
func (c *Cluster) startBinary(name, bin string, args, env []string) error {
	p, err := startProcess(name, bin, args, c.LogDir, env)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.procs[name]; !ok {
		c.order = append(c.order, name)
	}
	c.procs[name], c.args[name], c.bins[name] = p, args, bin
	return nil
}

// waitHTTP polls url until it answers 2xx, failing fast if the component
// exits.
func (c *Cluster) waitHTTP(ctx context.Context, name, url string, timeout time.Duration, cfg *rest.Config) error {
	return c.waitServing(ctx, name, url, timeout, cfg, false)
}

// waitServing polls url until it answers (2xx, or anything when anyStatus:
// the webhook has no health endpoint, but it only listens once it is ready).
func (c *Cluster) waitServing(ctx context.Context, name, url string, timeout time.Duration, cfg *rest.Config, anyStatus bool) error {
	client := &http.Client{Timeout: 2 * time.Second}
	if cfg != nil {
		rt, err := rest.TransportFor(cfg)
		if err != nil {
			return err
		}
		client.Transport = rt
	}
	return c.poll(ctx, name+" to serve "+url, timeout, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return anyStatus || resp.StatusCode/100 == 2, nil
	})
}

// poll waits for cond, failing early when any component has died.
func (c *Cluster) poll(ctx context.Context, what string, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Healthy(); err != nil {
			return false, err
		}
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		if herr := c.Healthy(); herr != nil {
			return herr
		}
		if last != nil {
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, err, last)
		}
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// Healthy returns an error naming the first component that exited without
// being asked to, with its log.
func (c *Cluster) Healthy() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.order {
		if _, err := c.procs[n].exited(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.pki.caCertPEM}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: c.pki.adminToken}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "local"
	c.Kubeconfig = filepath.Join(c.WorkDir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, c.Kubeconfig); err != nil {
		return err
	}
	ctrl := cfg.DeepCopy()
	ctrl.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: c.pki.controllersToken}
	c.controllersKubeconfig = filepath.Join(c.WorkDir, "kubeconfig-controllers")
	if err := clientcmd.WriteToFile(*ctrl, c.controllersKubeconfig); err != nil {
		return err
	}
	if p := c.opts.KubeconfigPath; p != "" {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return clientcmd.WriteToFile(*cfg, p)
	}
	return nil
}

func (c *Cluster) ensureNamespace(ctx context.Context, name string) error {
	_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (c *Cluster) createNodes(ctx context.Context) error {
	nodes := c.opts.Topology.Nodes()
	var g errgroup.Group
	g.SetLimit(32)
	for _, n := range nodes {
		g.Go(func() error {
			if _, err := c.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating node %s: %w", n.Name, err)
			}
			return nil
		})
	}
	return g.Wait()
}

func (c *Cluster) waitNodesReady(ctx context.Context, timeout time.Duration) error {
	want := c.opts.Topology.NodeCount()
	if want > 1000 {
		timeout += time.Duration(want/1000) * 30 * time.Second
	}
	return c.poll(ctx, fmt.Sprintf("%d nodes to be Ready", want), timeout, func(ctx context.Context) (bool, error) {
		list, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, n := range list.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= want, nil
	})
}

// PIDs returns the process id of every running component, by name.
func (c *Cluster) PIDs() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for n, p := range c.procs {
		if done, _ := p.exited(); !done {
			out[n] = p.pid()
		}
	}
	return out
}

// LogPath is the log file of a component.
func (c *Cluster) LogPath(name string) string { return filepath.Join(c.LogDir, name+".log") }

// StopComponent stops one component (e.g. the scheduler, to test a restart).
func (c *Cluster) StopComponent(name string) error {
	p, err := lookupComponent(c, c.procs, name)
	if err != nil {
		return err
	}
	return p.stop(15 * time.Second)
}

// lookupComponent reads a component's entry of one of the cluster's
// per-component maps under the cluster's lock.
func lookupComponent[V any](c *Cluster, m map[string]V, name string) (V, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := m[name]
	if !ok {
		return v, fmt.Errorf("no component %q", name)
	}
	return v, nil
}

// StartComponent starts a stopped component again with its original flags
// and, for Volcano's scheduler and controller manager, waits until it serves
// its health check.
func (c *Cluster) StartComponent(name string) error {
	args, err := lookupComponent(c, c.args, name)
	if err != nil {
		return err
	}
	if running := c.PIDs()[name]; running != 0 {
		return fmt.Errorf("%s is still running (pid %d)", name, running)
	}
	if err := c.start(name, args[:len(args)-len(c.opts.ExtraArgs[name])]); err != nil {
		return err
	}
	ctx := context.Background()
	switch name {
	case Scheduler:
		return c.waitHTTP(ctx, name, fmt.Sprintf("http://127.0.0.1:%d/healthz", c.ports["sched-healthz"]), 60*time.Second, nil)
	case ControllerManager:
		return c.waitHTTP(ctx, name, fmt.Sprintf("http://127.0.0.1:%d/healthz", c.ports["ctrl-healthz"]), 60*time.Second, nil)
	}
	return nil
}

// SetSchedulerConf replaces the scheduler configuration; Volcano's scheduler
// watches the file and reloads it.
func (c *Cluster) SetSchedulerConf(content []byte) error {
	tmp := c.SchedulerConf + ".tmp"
	if err := os.WriteFile(tmp, content, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, c.SchedulerConf)
}

// Stop stops every component in reverse start order and removes the work
// folder. Logs stay in LogDir; call RemoveLogs when they are not needed.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	order := append([]string(nil), c.order...)
	procs := c.procs
	c.mu.Unlock()
	var errs []error
	for i := len(order) - 1; i >= 0; i-- {
		if err := procs[order[i]].stop(15 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	// After kubelet, CoreDNS and containerd have stopped: what they leave
	// behind (containers, mounts, network namespaces, the bridge, cgroups).
	if err := c.stopRealNode(); err != nil {
		errs = append(errs, fmt.Errorf("cleaning up the real node: %w", err))
	}
	if c.WorkDir != "" {
		if err := os.RemoveAll(c.WorkDir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RemoveLogs deletes the log folder (after a successful run).
func (c *Cluster) RemoveLogs() error { return os.RemoveAll(c.LogDir) }

const (
	workDirPrefix = "volcano-paddle-"
	ownerFile     = "owner.pid"
)

// SweepStaleWorkDirs removes work folders left by owners that were killed
// before they could clean up (their components died with them). Start calls
// it, so a crash costs disk space only until the next cluster starts.
func SweepStaleWorkDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), workDirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || ProcessAlive(pid) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}
