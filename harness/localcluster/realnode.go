package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volcano-paddle/volcano-paddle/internal/images"
)

// The real node: one kubelet with containerd, runc and the CNI bridge
// plugin beside the KWOK nodes, and CoreDNS serving the cluster domain, so
// that init containers, DNS records of headless Services and the env reach
// real processes (docs/testing.md). There is at most one per machine: its
// bridge, pod range and DNS address are fixed, and a lock file says who owns
// it.
const (
	// RealNodeName is the node's name.
	RealNodeName = "real-0"
	// RealNodeTaint keeps every pod that does not tolerate it off the node;
	// RealNodeLabel selects it.
	RealNodeTaint = "paddle.volcano.sh/real-node"
	RealNodeLabel = "paddle.volcano.sh/real-node"

	// PodCIDR is the test range the node's pods get addresses from
	// (198.18.0.0/15 is reserved for benchmarks, RFC 2544); the bridge holds
	// the first address, which is also the node's IP and CoreDNS's.
	PodCIDR    = "198.18.0.0/24"
	RealNodeIP = "198.18.0.1"
	bridgeName = "vp-br0"

	// CoreDNS Components and their log names.
	Containerd = "containerd"
	Kubelet    = "kubelet"
	CoreDNS    = "coredns"

	realNodeDir   = "vp-realnode"
	realOwner     = "owner.json"
	cgroupRoot    = "volcano-paddle-real"
	cniNetwork    = "vp-realnode"
	closedPort    = "127.0.0.1:1"
	clusterDomain = "cluster.local"
)

// RealNodeOptions configures the real node.
type RealNodeOptions struct {
	// CacheSeconds is CoreDNS's `cache` and TTLSeconds its kubernetes
	// plugin's `ttl`; default 30 and 30, as Kubernetes' own Corefile.
	CacheSeconds, TTLSeconds int
	// ImageDir holds the docker-archive tarballs of `make images` and their
	// images.json; every image there is imported into the node's containerd.
	// Default <repo>/.local/images; a missing folder imports nothing.
	ImageDir string
}

// realNode is the running real node of a cluster.
type realNode struct {
	opts  RealNodeOptions
	dir   string
	lock  *os.File
	owner realOwnerState
	// Images maps an image name (e.g. paddle-probe) to the reference it was
	// imported under.
	images map[string]string
}

// realOwnerState is what a later start needs to clean up after a run that
// was killed: which shared paths existed before this run created them.
type realOwnerState struct {
	PID int `json:"pid"`
	// Existed lists shared paths that were there before the start; the
	// others among sharedPaths were created by it.
	Existed []string `json:"existed"`
	// Netns lists the network namespaces that existed before the start.
	Netns []string `json:"netns"`
}

// Paths outside our folder that containerd, the CRI plugin and kubelet
// write whatever their configuration says: containerd's shim sockets and
// fifos (containerd 1.6: pkg/process, runtime/v2/shim: SocketAddress under
// /run/containerd), the CRI plugin's network namespaces (pkg/netns:
// /var/run/netns), libcni's result cache (/var/lib/cni), and kubelet's
// device-plugin folder (pkg/kubelet/cm/devicemanager: DevicePluginPath) and
// container log links (pkg/kubelet/kuberuntime: ContainerLogsDir).
var sharedPaths = []string{
	"/run/containerd", "/run/containerd/s", "/run/containerd/fifo",
	"/var/run/netns", "/var/lib/cni", "/var/lib/cni/results",
	"/var/lib/kubelet", "/var/lib/kubelet/device-plugins",
	"/var/log/containers",
}

// RealNodeRequirements reports what this machine lacks for a real node: the
// commands from Debian packages (hack/realnode-deps.sh installs them) and
// root. An empty result means it can run.
func RealNodeRequirements(binDir string) []string {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (the real node creates a bridge, network namespaces, mounts and cgroups)")
	}
	pkgs := map[string]string{
		"containerd": "containerd", "ctr": "containerd", "runc": "runc", "ip": "iproute2",
		"/usr/lib/cni/bridge": "containernetworking-plugins", "/usr/lib/cni/host-local": "containernetworking-plugins",
		"/usr/lib/cni/loopback": "containernetworking-plugins", "/bin/busybox": "busybox-static",
	}
	var pkgMissing []string
	for cmd, pkg := range pkgs {
		if strings.HasPrefix(cmd, "/") {
			if _, err := os.Stat(cmd); err == nil {
				continue
			}
		} else if _, err := exec.LookPath(cmd); err == nil {
			continue
		}
		if !slices.Contains(pkgMissing, pkg) {
			pkgMissing = append(pkgMissing, pkg)
		}
	}
	if len(pkgMissing) > 0 {
		missing = append(missing, fmt.Sprintf("Debian packages %s (as root: hack/realnode-deps.sh, or apt-get install -y %s)",
			strings.Join(pkgMissing, ", "), strings.Join(pkgMissing, " ")))
	}
	for _, b := range []string{Kubelet, CoreDNS} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			missing = append(missing, fmt.Sprintf("%s (make bin/%s)", filepath.Join(binDir, b), b))
		}
	}
	return missing
}

// RealNodeDir is the folder of the machine's real node.
func RealNodeDir() string { return filepath.Join(os.TempDir(), realNodeDir) }

// RealNodeLeftovers says whether a real node's owner file is there: a real
// node runs, or one was killed and left things for CleanupRealNode.
func RealNodeLeftovers() bool {
	_, err := os.Stat(filepath.Join(RealNodeDir(), realOwner))
	return err == nil
}

// RealNodeImages maps each image imported into the real node's containerd
// (by name: paddle-probe, paddle-barrier, vc-scheduler-paddle, ..., pause)
// to its reference; nil without a real node.
func (c *Cluster) RealNodeImages() map[string]string {
	if c.real == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range c.real.images {
		out[k] = v
	}
	return out
}

// startRealNode brings up containerd, CoreDNS and kubelet after the control
// plane, and returns when the node is Ready.
func (c *Cluster) startRealNode(ctx context.Context) error {
	o := c.opts.RealNode
	if o.CacheSeconds == 0 {
		o.CacheSeconds = 30
	}
	if o.TTLSeconds == 0 {
		o.TTLSeconds = 30
	}
	if o.ImageDir == "" {
		if root, err := RepoRoot(); err == nil {
			o.ImageDir = filepath.Join(root, ".local", "images")
		}
	}
	if missing := RealNodeRequirements(c.opts.BinDir); len(missing) > 0 {
		return fmt.Errorf("the real node cannot start here; missing:\n  - %s", strings.Join(missing, "\n  - "))
	}
	rn := &realNode{opts: *o, dir: RealNodeDir(), images: map[string]string{}}
	if err := rn.acquire(); err != nil {
		return err
	}
	c.real = rn
	c.opts.Logf("starting the real node %s (containerd, CoreDNS, kubelet)", RealNodeName)
	if err := rn.network(); err != nil {
		return err
	}
	if err := c.startContainerd(ctx); err != nil {
		return err
	}
	if err := c.importImages(ctx); err != nil {
		return err
	}
	if err := c.startCoreDNS(ctx); err != nil {
		return err
	}
	if err := c.startKubelet(ctx); err != nil {
		return err
	}
	return c.poll(ctx, "node "+RealNodeName+" to be Ready", 90*time.Second, func(ctx context.Context) (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, RealNodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
}

// acquire takes the machine's real-node lock, cleans up after an owner that
// died, and records what exists before this run creates anything.
func (rn *realNode) acquire() error {
	if err := os.MkdirAll(rn.dir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(rn.dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return fmt.Errorf("another real node runs on this machine (lock %s held): %w", lock.Name(), err)
	}
	rn.lock = lock
	if err := CleanupRealNode(); err != nil {
		return fmt.Errorf("cleaning up what an earlier real node left: %w", err)
	}
	if err := os.MkdirAll(rn.dir, 0o755); err != nil {
		return err
	}
	rn.owner = realOwnerState{PID: os.Getpid()}
	for _, p := range sharedPaths {
		if _, err := os.Lstat(p); err == nil {
			rn.owner.Existed = append(rn.owner.Existed, p)
		}
	}
	rn.owner.Netns = listNetns()
	b, _ := json.Marshal(rn.owner)
	return os.WriteFile(filepath.Join(rn.dir, realOwner), b, 0o644)
}

func listNetns() []string {
	entries, _ := os.ReadDir("/var/run/netns")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// network creates the bridge the CNI bridge plugin attaches pods to, with
// the node's address; pods get no default route and there is no NAT, so
// their traffic stays in the test range.
func (rn *realNode) network() error {
	if err := run("ip", "link", "add", bridgeName, "type", "bridge"); err != nil {
		return err
	}
	if err := run("ip", "addr", "add", RealNodeIP+"/24", "dev", bridgeName); err != nil {
		return err
	}
	if err := run("ip", "link", "set", bridgeName, "up"); err != nil {
		return err
	}
	conf := map[string]interface{}{
		"cniVersion": "0.4.0",
		"name":       cniNetwork,
		"plugins": []interface{}{map[string]interface{}{
			"type": "bridge", "bridge": bridgeName, "isGateway": false, "ipMasq": false, "hairpinMode": true,
			"ipam": map[string]interface{}{
				"type": "host-local", "dataDir": filepath.Join(rn.dir, "cni", "ipam"),
				"ranges": [][]map[string]string{{{"subnet": PodCIDR, "rangeStart": "198.18.0.10", "gateway": RealNodeIP}}},
			},
		}},
	}
	b, _ := json.MarshalIndent(conf, "", "  ")
	confDir := filepath.Join(rn.dir, "cni", "net.d")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(confDir, "10-"+cniNetwork+".conflist"), b, 0o644)
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func (rn *realNode) sock() string { return filepath.Join(rn.dir, "containerd", "containerd.sock") }

// pauseRef is the sandbox image, built from busybox-static at start.
const pauseRef = "localhost/volcano-paddle/pause:local"

var containerdConfig = template.Must(template.New("containerd").Parse(`version = 2
root = "{{.Dir}}/containerd/root"
state = "{{.Dir}}/containerd/state"
# The opt plugin would create /opt/containerd; the others need kernel
# features or disks we do not use.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{{.Sock}}"
[ttrpc]
  address = "{{.Sock}}.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{{.Pause}}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # runc cannot set a negative oom_score_adj without CAP_SYS_RESOURCE,
  # which this sandbox lacks ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  # Pods' network namespaces in our folder, not /var/run/netns.
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        # runc's state, in our folder rather than /run/containerd/runc.
        Root = "{{.Dir}}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{{.Dir}}/cni/net.d"
  # Images are imported, never pulled: every registry, the default one
  # included, is a closed loopback port (and so is the proxy, below).
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."*"]
    endpoint = ["http://{{.Closed}}"]
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
    endpoint = ["http://{{.Closed}}"]
`))

func (c *Cluster) startContainerd(ctx context.Context) error {
	rn := c.real
	var buf bytes.Buffer
	if err := containerdConfig.Execute(&buf, map[string]string{"Dir": rn.dir, "Sock": rn.sock(), "Pause": pauseRef, "Closed": closedPort}); err != nil {
		return err
	}
	conf := filepath.Join(rn.dir, "containerd.toml")
	if err := os.WriteFile(conf, buf.Bytes(), 0o644); err != nil {
		return err
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return err
	}
	// containerd's registry client honours the proxy variables
	// (net/http.ProxyFromEnvironment): a closed port there stops any pull
	// that got past the mirrors (containerd appends the registry's own host
	// after them).
	env := []string{"HTTP_PROXY=http://" + closedPort, "HTTPS_PROXY=http://" + closedPort, "NO_PROXY=", "no_proxy="}
	if err := c.startBinary(Containerd, bin, []string{"--config", conf, "--log-level", "info"}, env); err != nil {
		return err
	}
	return c.poll(ctx, "containerd to serve "+rn.sock(), 30*time.Second, func(ctx context.Context) (bool, error) {
		conn, err := net.Dial("unix", rn.sock())
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	})
}

// ctr runs containerd's CLI against the node's containerd in the namespace
// the CRI plugin uses.
func (rn *realNode) ctr(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", rn.sock(), "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// importImages builds the pause image and imports it with every image of
// ImageDir. The barrier image is also tagged with the tag the controller
// manager's default --barrier-image names, so jobs without a
// --barrier-image argument find it.
func (c *Cluster) importImages(ctx context.Context) error {
	rn := c.real
	pauseDir := filepath.Join(rn.dir, "images")
	// The sandbox only has to hold the pod's namespaces; the CRI plugin
	// stops it with SIGKILL (pkg/cri/server/sandbox_stop.go).
	meta := images.Meta{Registry: "localhost/volcano-paddle", Tag: "local", Version: "local", Created: time.Unix(0, 0).UTC()}
	ref, err := images.Ref(meta, "pause")
	if err != nil {
		return err
	}
	if ref.String() != pauseRef {
		return fmt.Errorf("pause image reference %s, want %s", ref, pauseRef)
	}
	built, err := images.Build([]images.Spec{{
		Name: "pause", Binary: "/bin/busybox", File: "busybox",
		Entrypoint: []string{"/usr/local/bin/busybox", "sleep", "2147483647"},
	}}, meta, pauseDir, false, func(string, ...interface{}) {})
	if err != nil {
		return fmt.Errorf("building the pause image: %w", err)
	}
	all := built
	if ours, err := images.ReadManifest(rn.opts.ImageDir); err == nil {
		all = append(all, ours...)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, b := range all {
		if err := rn.ctr(ctx, "images", "import", "--no-unpack=false", b.File); err != nil {
			return fmt.Errorf("importing %s: %w", b.File, err)
		}
		rn.images[b.Name] = b.Ref
	}
	c.opts.Logf("real node: imported %d images", len(all))
	if ref, ok := rn.images["paddle-barrier"]; ok {
		if want := c.defaultBarrierImage(ctx); want != "" && want != ref {
			if err := rn.ctr(ctx, "images", "tag", "--force", ref, want); err != nil {
				return err
			}
			rn.images["paddle-barrier@default"] = want
		}
	}
	return nil
}

// defaultBarrierImage asks our controller manager which barrier image its
// job plugin defaults to (its release, pkg/paddlejob: DefaultBarrierImage).
func (c *Cluster) defaultBarrierImage(ctx context.Context) string {
	v, err := versionLine(ctx, filepath.Join(c.opts.BinDir, ControllerManager), "Version")
	if err != nil || v == "" {
		return ""
	}
	if v == "devel" {
		v = "latest"
	}
	return "ghcr.io/volcano-paddle/paddle-barrier:" + v
}

var corefile = template.Must(template.New("Corefile").Parse(`# The usual Kubernetes Corefile (kubeadm's), without forward: names outside
# the cluster are refused, the host's resolver is never asked.
{{.Domain}}:53 in-addr.arpa:53 ip6.arpa:53 {
    bind {{.IP}}
    errors
    health 127.0.0.1:{{.Health}}
    ready 127.0.0.1:{{.Ready}}
    kubernetes {{.Domain}} in-addr.arpa ip6.arpa {
        kubeconfig {{.Kubeconfig}} local
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl {{.TTL}}
    }
    cache {{.Cache}}
}
`))

func (c *Cluster) startCoreDNS(ctx context.Context) error {
	rn := c.real
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := corefile.Execute(&buf, map[string]interface{}{
		"Domain": clusterDomain, "IP": RealNodeIP, "Health": ports[0], "Ready": ports[1],
		"Kubeconfig": c.Kubeconfig, "TTL": rn.opts.TTLSeconds, "Cache": rn.opts.CacheSeconds,
	}); err != nil {
		return err
	}
	path := filepath.Join(rn.dir, "Corefile")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := c.start(CoreDNS, []string{"-conf", path}); err != nil {
		return err
	}
	return c.waitHTTP(ctx, CoreDNS, fmt.Sprintf("http://127.0.0.1:%d/ready", ports[1]), 60*time.Second, nil)
}

var kubeletConfig = template.Must(template.New("kubelet").Parse(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: {{.IP}}
port: {{.Port}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {{.Healthz}}
# The API server reaches the kubelet for logs and exec only on the test
# range; no client here needs more.
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
# Cgroups v1 on these machines, no systemd.
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupRoot: /{{.CgroupRoot}}
failSwapOn: false
containerRuntimeEndpoint: unix://{{.Sock}}
clusterDNS: [{{.IP}}]
clusterDomain: {{.Domain}}
# Pods must not inherit the host's resolver or search domains.
resolvConf: ""
podLogsDir: {{.Dir}}/pod-logs
volumePluginDir: {{.Dir}}/kubelet/volume-plugins
registerWithTaints:
- {key: {{.Taint}}, value: "true", effect: NoSchedule}
# A test machine's disk and memory are shared; do not evict over them.
evictionHard: {memory.available: "50Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusUpdateFrequency: 4s
maxPods: 60
serializeImagePulls: false
`))

func (c *Cluster) startKubelet(ctx context.Context) error {
	rn := c.real
	// kubelet refuses a cgroup root that does not exist (pkg/kubelet/cm:
	// validateSystemRequirements and NewContainerManager).
	if err := makeCgroupRoot(); err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := kubeletConfig.Execute(&buf, map[string]interface{}{
		"IP": RealNodeIP, "Port": ports[0], "Healthz": ports[1], "CgroupRoot": cgroupRoot, "Sock": rn.sock(),
		"Domain": clusterDomain, "Dir": rn.dir, "Taint": RealNodeTaint,
	}); err != nil {
		return err
	}
	conf := filepath.Join(rn.dir, "kubelet.yaml")
	if err := os.WriteFile(conf, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := c.start(Kubelet, []string{
		"--config=" + conf, "--kubeconfig=" + c.Kubeconfig,
		"--root-dir=" + filepath.Join(rn.dir, "kubelet"), "--cert-dir=" + filepath.Join(rn.dir, "kubelet", "pki"),
		"--hostname-override=" + RealNodeName, "--node-ip=" + RealNodeIP,
		"--node-labels=" + RealNodeLabel + "=true,type=real",
		"--v=2",
	}); err != nil {
		return err
	}
	return c.waitHTTP(ctx, Kubelet, fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[1]), 60*time.Second, nil)
}

// cgroupHierarchies are the mounted cgroup v1 hierarchies (or the v2 root);
// withUnified adds the v2 hierarchy of hybrid mode, where runc mirrors the
// containers' cgroups although kubelet does not use it.
func cgroupHierarchies(withUnified bool) []string {
	if st, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil && !st.IsDir() {
		return []string{"/sys/fs/cgroup"}
	}
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var out []string
	for _, e := range entries {
		// cpu and cpuacct are links to cpu,cpuacct.
		if !e.IsDir() || (e.Name() == "unified" && !withUnified) {
			continue
		}
		out = append(out, filepath.Join("/sys/fs/cgroup", e.Name()))
	}
	return out
}

func makeCgroupRoot() error {
	for _, h := range cgroupHierarchies(false) {
		d := filepath.Join(h, cgroupRoot)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		// A new v1 cpuset has no CPUs or memory nodes: copy the parent's.
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(d, f), b, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// stopRealNode is called after kubelet, CoreDNS and containerd were
// stopped with the other components: it removes what they leave behind.
func (c *Cluster) stopRealNode() error {
	rn := c.real
	if rn == nil {
		return nil
	}
	err := CleanupRealNode()
	if rn.lock != nil {
		_ = syscall.Flock(int(rn.lock.Fd()), syscall.LOCK_UN)
		rn.lock.Close()
		_ = os.Remove(rn.lock.Name())
	}
	return err
}

// CleanupRealNode removes everything a real node created on this machine,
// whether its owner stopped it or was killed: the containers (by their
// cgroups) and containerd's shims (by their command line naming our
// socket), then mounts under its folder, the network namespaces, the bridge,
// cgroups, the shared paths it created and its folder. It touches nothing a
// real node did not create; the owner file says what existed before.
func CleanupRealNode() error {
	dir := RealNodeDir()
	b, err := os.ReadFile(filepath.Join(dir, realOwner))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st realOwnerState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, realOwner), err)
	}
	if st.PID != os.Getpid() && ProcessAlive(st.PID) {
		return fmt.Errorf("the real node's owner (pid %d) still runs", st.PID)
	}
	var errs []error
	killShims(dir)
	if err := killCgroupProcs(); err != nil {
		errs = append(errs, err)
	}
	if err := unmountUnder(dir); err != nil {
		errs = append(errs, err)
	}
	for _, ns := range listNetns() {
		if slices.Contains(st.Netns, ns) || !strings.HasPrefix(ns, "cni-") {
			continue
		}
		p := filepath.Join("/var/run/netns", ns)
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if _, err := net.InterfaceByName(bridgeName); err == nil {
		if err := run("ip", "link", "delete", bridgeName); err != nil {
			errs = append(errs, err)
		}
	}
	if err := removeCgroups(); err != nil {
		errs = append(errs, err)
	}
	// libcni caches results per network and container.
	if m, _ := filepath.Glob("/var/lib/cni/results/" + cniNetwork + "-*"); len(m) > 0 {
		for _, f := range m {
			_ = os.Remove(f)
		}
	}
	if links, _ := os.ReadDir("/var/log/containers"); links != nil {
		for _, l := range links {
			p := filepath.Join("/var/log/containers", l.Name())
			if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, dir+"/") {
				_ = os.Remove(p)
			}
		}
	}
	// Shared paths this run created, deepest first; a netns folder may be
	// a mount of its own (iproute2 makes it one).
	for i := len(sharedPaths) - 1; i >= 0; i-- {
		p := sharedPaths[i]
		if slices.Contains(st.Existed, p) {
			continue
		}
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// killShims kills containerd's shims of our containerd: they are
// daemonized (re-parented to init) and survive containerd.
func killShims(dir string) {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if len(args) > 0 && strings.HasSuffix(args[0], "containerd-shim-runc-v2") && strings.Contains(string(cmdline), dir+"/") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// killCgroupProcs kills every process in the node's cgroups (the pods'
// containers) and waits until they are gone.
func killCgroupProcs() error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		var pids []int
		for _, h := range cgroupHierarchies(true) {
			_ = filepath.WalkDir(filepath.Join(h, cgroupRoot), func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
					return nil
				}
				b, _ := os.ReadFile(p)
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pids = append(pids, pid)
					}
				}
				return nil
			})
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of the real node's cgroups survive SIGKILL", pids)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeCgroups removes the node's cgroup trees, children first (rmdir is
// how cgroup folders go).
func removeCgroups() error {
	var errs []error
	for _, h := range cgroupHierarchies(true) {
		root := filepath.Join(h, cgroupRoot)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		// Field 5 is the mount point, octal-escaped.
		mp := unescapeMountinfo(f[4])
		if strings.HasPrefix(mp, dir+"/") {
			points = append(points, mp)
		}
	}
	var errs []error
	for i := len(points) - 1; i >= 0; i-- {
		if err := syscall.Unmount(points[i], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", points[i], err))
		}
	}
	return errors.Join(errs...)
}

func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
