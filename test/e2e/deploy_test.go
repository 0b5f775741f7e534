package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

func repoPath(t *testing.T, parts ...string) string {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

// Every example in deploy/examples runs on the local cluster: its gang is
// placed and started, its pods pass Paddle's rules, and jobs whose trainers
// finish complete.
func TestExamples(t *testing.T) {
	c := framework.Cluster(t)
	files, err := filepath.Glob(repoPath(t, "deploy", "examples", "*.yaml"))
	if err != nil || len(files) < 6 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			ns := framework.Namespace(t, c)
			objs, err := localcluster.ReadManifests(f)
			if err != nil {
				t.Fatal(err)
			}
			var jobs []*unstructured.Unstructured
			for _, o := range objs {
				if o.GetKind() == "Job" {
					localcluster.SimulateTraining(o, "3s")
					jobs = append(jobs, o)
				}
				if o.GetKind() == "PersistentVolume" {
					name := o.GetName()
					t.Cleanup(func() {
						_ = c.Kube.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{})
					})
				}
			}
			if len(jobs) != 1 {
				t.Fatalf("%d jobs in the example, want 1", len(jobs))
			}
			if _, err := c.Create(context.Background(), ns, objs); err != nil {
				t.Fatal(err)
			}
			name := jobs[0].GetName()
			framework.WaitJobPhase(t, c, ns, name, batchv1alpha1.Running, 90*time.Second)
			checkContract(t, c, ns, name)
			var job batchv1alpha1.Job
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(jobs[0].Object, &job); err != nil {
				t.Fatal(err)
			}
			if localcluster.CompletesWithTrainers(&job) {
				framework.WaitJobPhase(t, c, ns, name, batchv1alpha1.Completed, 90*time.Second)
			}
		})
	}
}

// kubectl runs the kubectl this repository builds (bin/kubectl).
func kubectl(t *testing.T, c *localcluster.Cluster, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(repoPath(t, "bin", "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	cmd.Dir = repoPath(t)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return out.String() + errOut.String(), err
	}
	return out.String(), nil
}

// installVolcanoRelease creates the objects of Volcano's release manifest
// (from the module cache), as `kubectl apply -f volcano-development.yaml`
// would, except what the local cluster already has or cannot run.
func installVolcanoRelease(t *testing.T, c *localcluster.Cluster) {
	t.Helper()
	dir, err := localcluster.VolcanoModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := localcluster.ReadManifests(filepath.Join(dir, "installer", "volcano-development.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var keep []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Job":
			continue
		}
		keep = append(keep, o)
	}
	if _, err := c.Create(context.Background(), "volcano-system", keep); err != nil {
		t.Fatal(err)
	}
}

func deployment(t *testing.T, c *localcluster.Cluster, name string) *appsv1.Deployment {
	t.Helper()
	d, err := c.Kube.AppsV1().Deployments("volcano-system").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func container(d *appsv1.Deployment, name string) *corev1.Container {
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == name {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

// installOverlays are the overlays for each Volcano release and the image
// tags they set (deploy/).
var installOverlays = map[string]struct{ paddle, stock, ourTag, stockTag string }{
	"v1.15.1": {"deploy/paddle", "deploy/stock", "v0.1.0-volcano-v1.15.1", "v1.15.1"},
	"v1.14.1": {"deploy/volcano-v1.14/paddle", "deploy/volcano-v1.14/stock", "v0.1.0-volcano-v1.14.1", "v1.14.1"},
}

// The install overlay, checked against a real API server holding Volcano's
// release manifest: a server-side dry run, then the real switch to our
// builds and back to stock Volcano. (A private control plane: the overlay
// replaces webhook configurations the shared cluster's Volcano relies on.)
func TestInstallOverlay(t *testing.T) {
	ov, ok := installOverlays[volcanorelease.Version()]
	if !ok {
		t.Fatalf("no install overlays for Volcano %s", volcanorelease.Version())
	}
	c := framework.StartCluster(t, localcluster.Options{SkipVolcano: true, Topology: tinyTopology()})
	installVolcanoRelease(t, c)
	before := deployment(t, c, "volcano-scheduler")

	out, err := kubectl(t, c, "apply", "--dry-run=server", "-k", ov.paddle)
	if err != nil {
		t.Fatalf("server-side dry run of %s failed: %v\n%s", ov.paddle, err, out)
	}
	for _, want := range []string{
		"deployment.apps/volcano-scheduler configured (server dry run)",
		"deployment.apps/volcano-controllers configured (server dry run)",
		"deployment.apps/volcano-admission configured (server dry run)",
		"configmap/volcano-scheduler-configmap configured (server dry run)",
		"validatingwebhookconfiguration.admissionregistration.k8s.io/volcano-admission-service-jobs-paddle-validate created (server dry run)",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/volcano-admission-service-jobs-paddle-mutate created (server dry run)",
		"clusterrole.rbac.authorization.k8s.io/volcano-paddle-controllers created (server dry run)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if got := deployment(t, c, "volcano-scheduler"); container(got, "volcano-scheduler").Image != container(before, "volcano-scheduler").Image {
		t.Fatal("the dry run changed the cluster")
	}

	// The real switch.
	if out, err := kubectl(t, c, "apply", "-k", ov.paddle); err != nil {
		t.Fatalf("kubectl apply -k %s: %v\n%s", ov.paddle, err, out)
	}
	sched := deployment(t, c, "volcano-scheduler")
	if img := container(sched, "volcano-scheduler").Image; img != "ghcr.io/volcano-paddle/vc-scheduler-paddle:"+ov.ourTag {
		t.Errorf("scheduler image %q", img)
	}
	// Only the image changed: Volcano's flags, volumes and account stay.
	if !equalStrings(container(sched, "volcano-scheduler").Args, container(before, "volcano-scheduler").Args) ||
		sched.Spec.Template.Spec.ServiceAccountName != before.Spec.Template.Spec.ServiceAccountName ||
		len(sched.Spec.Template.Spec.Volumes) != len(before.Spec.Template.Spec.Volumes) {
		t.Errorf("the overlay changed more than the image of the scheduler")
	}
	adm := container(deployment(t, c, "volcano-admission"), "admission")
	if adm.Image != "ghcr.io/volcano-paddle/vc-webhook-manager-paddle:"+ov.ourTag || !strings.Contains(strings.Join(adm.Args, " "), ",/jobs/paddle/validate") {
		t.Errorf("admission: image %q args %v", adm.Image, adm.Args)
	}
	if img := container(deployment(t, c, "volcano-controllers"), "volcano-controllers").Image; img != "ghcr.io/volcano-paddle/vc-controller-manager-paddle:"+ov.ourTag {
		t.Errorf("controllers image %q", img)
	}
	cm, err := c.Kube.CoreV1().ConfigMaps("volcano-system").Get(context.Background(), "volcano-scheduler-configmap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := os.ReadFile(repoPath(t, "deploy", "paddle", "volcano-scheduler.conf"))
	if cm.Data["volcano-scheduler.conf"] != string(ours) {
		t.Errorf("scheduler ConfigMap is not deploy/paddle/volcano-scheduler.conf:\n%s", cm.Data["volcano-scheduler.conf"])
	}

	// And back.
	if out, err := kubectl(t, c, "apply", "-k", ov.stock); err != nil {
		t.Fatalf("kubectl apply -k %s: %v\n%s", ov.stock, err, out)
	}
	if out, err := kubectl(t, c, "delete", "-f", "deploy/paddle/admission-paddle.yaml"); err != nil {
		t.Fatalf("deleting the paddle admission: %v\n%s", err, out)
	}
	if img := container(deployment(t, c, "volcano-scheduler"), "volcano-scheduler").Image; img != "docker.io/volcanosh/vc-scheduler:"+ov.stockTag {
		t.Errorf("after switching back, scheduler image %q", img)
	}
	adm = container(deployment(t, c, "volcano-admission"), "admission")
	if strings.Contains(strings.Join(adm.Args, " "), "paddle") {
		t.Errorf("after switching back, admission args %v", adm.Args)
	}
	stock, _ := os.ReadFile(repoPath(t, "deploy", "stock", "volcano-scheduler.conf"))
	cm, _ = c.Kube.CoreV1().ConfigMaps("volcano-system").Get(context.Background(), "volcano-scheduler-configmap", metav1.GetOptions{})
	if cm.Data["volcano-scheduler.conf"] != string(stock) {
		t.Errorf("after switching back, the scheduler ConfigMap is not stock")
	}
}

// On a cluster without Volcano the overlay fails instead of creating
// half-made Deployments.
func TestInstallOverlayNeedsVolcano(t *testing.T) {
	c := framework.StartCluster(t, localcluster.Options{SkipVolcano: true, Topology: tinyTopology()})
	out, err := kubectl(t, c, "apply", "--dry-run=server", "-k", "deploy/paddle")
	if err == nil {
		t.Fatalf("applied without Volcano installed:\n%s", out)
	}
	if !strings.Contains(out, "selector") {
		t.Errorf("error does not say the Deployment is incomplete:\n%s", out)
	}
	deps, _ := c.Kube.AppsV1().Deployments("volcano-system").List(context.Background(), metav1.ListOptions{})
	if len(deps.Items) != 0 {
		t.Errorf("%d Deployments created", len(deps.Items))
	}
}

func equalStrings(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}
