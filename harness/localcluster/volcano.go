package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
)

// startVolcano starts our three Volcano builds: the webhook manager first
// (queue and job admission run through it), then the controller manager,
// then the scheduler (it creates the default queue). The controller manager
// and the scheduler get the flags of the embedded release's own manifest
// (installer/volcano-development.yaml, read from its module), then what a
// loopback cluster needs instead: kubeconfig, loopback addresses, our
// scheduler configuration. So a release whose manifest passes a flag our
// mains lack fails here as its Deployment would.
func (c *Cluster) startVolcano(ctx context.Context, admissions []string) error {
	o := c.opts
	o.Logf("starting Volcano %s webhook manager, controller manager and scheduler", volcanorelease.Version())
	if err := c.start(WebhookManager, []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--webhook-url=" + c.webhookURL(),
		"--listen-address=127.0.0.1", fmt.Sprintf("--port=%d", c.ports["webhook"]),
		"--tls-cert-file=" + c.pki.webhookCertFile, "--tls-private-key-file=" + c.pki.webhookKeyFile,
		"--ca-cert-file=" + c.pki.caCertFile,
		"--enabled-admission=" + joinPaths(admissions),
		"--logtostderr", fmt.Sprintf("-v=%d", o.Verbosity),
	}); err != nil {
		return err
	}
	if err := c.waitServing(ctx, WebhookManager, c.webhookURL()+"/jobs/validate", 60*time.Second, &rest.Config{TLSClientConfig: c.tlsConfig()}, true); err != nil {
		return err
	}

	ctrlArgs, err := releaseFlags(volcanorelease.ControllerManager)
	if err != nil {
		return err
	}
	if err := c.installReleaseConfigMaps(ctx, ctrlArgs); err != nil {
		return err
	}
	if err := c.start(ControllerManager, append(ctrlArgs,
		"--kubeconfig="+c.controllersKubeconfig, "--leader-elect=false",
		fmt.Sprintf("--healthz-address=127.0.0.1:%d", c.ports["ctrl-healthz"]),
		fmt.Sprintf("--listen-address=127.0.0.1:%d", c.ports["ctrl-metrics"]),
		fmt.Sprintf("-v=%d", o.Verbosity),
	)); err != nil {
		return err
	}

	c.SchedulerConf = filepath.Join(c.WorkDir, "volcano-scheduler.conf")
	conf, err := os.ReadFile(o.SchedulerConf)
	if err != nil {
		return fmt.Errorf("scheduler configuration: %w", err)
	}
	if err := os.WriteFile(c.SchedulerConf, conf, 0o644); err != nil {
		return err
	}
	schedArgs, err := releaseFlags(volcanorelease.Scheduler)
	if err != nil {
		return err
	}
	return c.start(Scheduler, append(schedArgs,
		"--kubeconfig="+c.Kubeconfig, "--leader-elect=false",
		"--scheduler-conf="+c.SchedulerConf,
		// Tests and benchmarks also run Volcano's stock configuration.
		"--allow-without-paddle",
		fmt.Sprintf("--healthz-address=127.0.0.1:%d", c.ports["sched-healthz"]),
		fmt.Sprintf("--listen-address=127.0.0.1:%d", c.ports["sched-metrics"]),
		"--cache-dump-dir="+c.WorkDir,
		fmt.Sprintf("-v=%d", o.Verbosity),
	))
}

// releaseFlags are the flags the release manifest starts the component with;
// its trailing shell redirection ("2>&1", a plain argument there) is left out.
func releaseFlags(comp volcanorelease.Component) ([]string, error) {
	args, err := comp.ManifestArgs()
	if err != nil {
		return nil, fmt.Errorf("args of %s in Volcano %s's release manifest: %w", comp.Container, volcanorelease.Version(), err)
	}
	var flags []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			flags = append(flags, a)
		}
	}
	return flags, nil
}

// installReleaseConfigMaps creates the ConfigMaps of the release manifest
// that args name by value, such as v1.15.1's --sharding-configmap
// (volcano-sharding-configmap, which its sharding controller watches), as
// the release's own install would.
func (c *Cluster) installReleaseConfigMaps(ctx context.Context, args []string) error {
	dir, err := VolcanoModuleDir()
	if err != nil {
		return err
	}
	objs, err := ReadManifests(filepath.Join(dir, volcanorelease.ReleaseManifest))
	if err != nil {
		return err
	}
	named := map[string]bool{}
	for _, a := range args {
		if _, v, ok := strings.Cut(a, "="); ok {
			named[v] = true
		}
	}
	for _, u := range objs {
		if u.GetKind() != "ConfigMap" || !named[u.GetName()] {
			continue
		}
		var cm corev1.ConfigMap
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cm); err != nil {
			return fmt.Errorf("ConfigMap %s of the release manifest: %w", u.GetName(), err)
		}
		if cm.Namespace == "" {
			cm.Namespace = "volcano-system"
		}
		if err := c.ensureNamespace(ctx, cm.Namespace); err != nil {
			return err
		}
		if _, err := c.Kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, &cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ConfigMap %s/%s of the release manifest: %w", cm.Namespace, cm.Name, err)
		}
	}
	return nil
}
