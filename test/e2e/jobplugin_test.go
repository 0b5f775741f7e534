package e2e

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/test/contract"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// checkContract reads the job's pods, Service and ConfigMaps from the API
// server and fails the test on any violation of the rules of every Paddle
// entry point of the job's mode.
func checkContract(t *testing.T, c *localcluster.Cluster, ns, job string) []corev1.Pod {
	t.Helper()
	pods := framework.JobPods(t, c, ns, job)
	svc, err := c.Kube.CoreV1().Services(ns).Get(context.Background(), job, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Service of job %s: %v", job, err)
	}
	for _, v := range contract.Check(pods, svc, jobConfigMaps(t, c, ns, job)...) {
		t.Errorf("contract: %s", v)
	}
	return pods
}

// jobConfigMaps are the ConfigMaps the pods of a job may refer to: all of
// its namespace, as the kubelet resolves references by name (Volcano's svc
// plugin, used beside ours in some jobs, keeps one too).
func jobConfigMaps(t *testing.T, c *localcluster.Cluster, ns, job string) []corev1.ConfigMap {
	t.Helper()
	cms, err := c.Kube.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("ConfigMaps of job %s: %v", job, err)
	}
	return cms.Items
}

// podEnv is a pod's env as its container gets it.
func podEnv(t *testing.T, c *localcluster.Cluster, p *corev1.Pod) map[string]string {
	t.Helper()
	env, problems := contract.Env(p, jobConfigMaps(t, c, p.Namespace, p.Labels[batchv1alpha1.JobNameKey])...)
	for _, v := range problems {
		t.Errorf("env: %s", v)
	}
	return env
}

func paddleJob(ns, name string, args []string, min int32, tasks ...framework.Task) *batchv1alpha1.Job {
	j := framework.NewJob(ns, name, min, tasks...)
	if args == nil {
		args = []string{}
	}
	j.Spec.Plugins = map[string][]string{"paddle": args}
	return j
}

// runningPSJob creates a Paddle PS job of one pserver and two workers (tasks
// ps and worker) and returns it once it runs: the job the tests that act on
// a running job start from.
func runningPSJob(t *testing.T, c *localcluster.Cluster, ns, name string) *batchv1alpha1.Job {
	t.Helper()
	job := framework.CreateJob(t, c, paddleJob(ns, name, nil, 3,
		framework.Task{Name: "ps", Replicas: 1}, framework.Task{Name: "worker", Replicas: 2}))
	return framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 60*time.Second)
}

// restartedAnew reads whether job name restarted: Running again after at
// least one retry, with want pods, every one of them new (a UID not in
// uids, the pods before) and running. It returns the job as read.
func restartedAnew(ctx context.Context, c *localcluster.Cluster, ns, name string, uids map[string]types.UID, want int) (*batchv1alpha1.Job, bool, error) {
	j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	if j.Status.State.Phase != batchv1alpha1.Running || j.Status.RetryCount < 1 {
		return j, false, nil
	}
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1alpha1.JobNameKey + "=" + name})
	if err != nil || len(pods.Items) != want {
		return j, false, err
	}
	for _, p := range pods.Items {
		if p.UID == uids[p.Name] || p.Status.Phase != corev1.PodRunning {
			return j, false, nil
		}
	}
	return j, true, nil
}

// Seed 000: Volcano's CTR example, rewritten without its in-pod discovery
// script: tasks pserver/trainer, port 30236, trainers finish and the job
// completes, pservers are stopped by CompleteJob.
func TestPaddleCTRSeedJob(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	job := paddleJob(ns, "ctr-volcano", []string{"--port=30236"}, 4,
		framework.Task{Name: "pserver", Replicas: 2, CPU: "1"},
		framework.Task{Name: "trainer", Replicas: 2, CPU: "1", SucceedAfter: "4s", CompleteJob: true})
	framework.CreateJob(t, c, job)
	framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 60*time.Second)
	pods := checkContract(t, c, ns, job.Name)
	if len(pods) != 4 {
		t.Fatalf("%d pods, want 4", len(pods))
	}
	for _, p := range pods {
		role := p.Labels[paddleapi.RoleLabel]
		if (strings.Contains(p.Name, "pserver") && role != "pserver") || (strings.Contains(p.Name, "trainer") && role != "trainer") {
			t.Errorf("%s has role label %q", p.Name, role)
		}
		if p.Labels[paddleapi.ModeLabel] != "ps" {
			t.Errorf("%s has mode label %q", p.Name, p.Labels[paddleapi.ModeLabel])
		}
		env := podEnv(t, c, &p)
		// pserver i at PADDLE_PORT+i, where the CTR image's train.py looks.
		if env["PADDLE_PSERVERS"] != "ctr-volcano-pserver-0.ctr-volcano:30236,ctr-volcano-pserver-1.ctr-volcano:30237" {
			t.Errorf("%s: PADDLE_PSERVERS=%q", p.Name, env["PADDLE_PSERVERS"])
		}
	}
	framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Completed, 90*time.Second)
}

// paddle-operator's wide&deep: ps/worker task names, gloo on.
func TestPaddleOperatorStyleGloo(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	job := paddleJob(ns, "wide-and-deep", []string{"--gloo=1"}, 4,
		framework.Task{Name: "ps", Replicas: 2}, framework.Task{Name: "worker", Replicas: 2})
	framework.CreateJob(t, c, job)
	framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 60*time.Second)
	pods := checkContract(t, c, ns, job.Name)
	var glooPorts []string
	for _, p := range pods {
		for _, port := range p.Spec.Containers[0].Ports {
			if port.Name == "paddle-gloo" {
				glooPorts = append(glooPorts, p.Name)
			}
		}
		if len(p.Spec.InitContainers) == 0 || p.Spec.InitContainers[0].Name != "paddle-wait-peers" {
			t.Errorf("%s has no DNS barrier", p.Name)
		}
	}
	if !reflect.DeepEqual(glooPorts, []string{"wide-and-deep-ps-0"}) {
		t.Errorf("gloo port declared on %v, want only pserver 0", glooPorts)
	}
}

// ResNet collective on GPUs (seed 002 example 2) with Volcano's svc plugin
// in the same job: one Service, publishing not-ready addresses.
func TestPaddleCollectiveGPUWithSvcPlugin(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	job := paddleJob(ns, "resnet", nil, 2, framework.Task{Name: "trainer", Replicas: 2, GPUs: 4, CPU: "8"})
	job.Spec.Plugins["svc"] = []string{}
	framework.CreateJob(t, c, job)
	framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 60*time.Second)
	pods := checkContract(t, c, ns, job.Name)
	for _, p := range pods {
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if env["FLAGS_selected_gpus"] != "0,1,2,3" || env["PADDLE_MASTER"] != "resnet-trainer-0.resnet:36000" {
			t.Errorf("%s: FLAGS_selected_gpus=%q PADDLE_MASTER=%q", p.Name, env["FLAGS_selected_gpus"], env["PADDLE_MASTER"])
		}
	}
	svcs, err := c.Kube.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs.Items) != 1 {
		t.Errorf("%d Services with svc and paddle plugins together, want 1", len(svcs.Items))
	}
}

func TestPaddleHeterPS(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	job := paddleJob(ns, "heter-ctr", nil, 5,
		framework.Task{Name: "ps", Replicas: 1}, framework.Task{Name: "worker", Replicas: 2},
		framework.Task{Name: "heter", Replicas: 2, GPUs: 1})
	framework.CreateJob(t, c, job)
	framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 60*time.Second)
	for _, p := range checkContract(t, c, ns, job.Name) {
		if p.Labels[paddleapi.ModeLabel] != "heter-ps" {
			t.Errorf("%s mode label %q", p.Name, p.Labels[paddleapi.ModeLabel])
		}
	}
}

// A pod failure restarts the whole gang (RestartJob): the new pods belong to
// a new incarnation (the job's status.version), with host names that carry
// it, the lists of that incarnation in a new ConfigMap, the old one gone, and
// they pass the contract again.
func TestPaddleRestartNewIncarnation(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	job := paddleJob(ns, "restart", []string{"--gloo=1"}, 4,
		framework.Task{Name: "ps", Replicas: 2}, framework.Task{Name: "worker", Replicas: 2})
	framework.CreateJob(t, c, job)
	framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 60*time.Second)
	uids := map[string]types.UID{}
	for _, p := range checkContract(t, c, ns, job.Name) {
		uids[p.Name] = p.UID
		if p.Spec.Hostname != p.Name {
			t.Errorf("%s: first incarnation hostname %q", p.Name, p.Spec.Hostname)
		}
	}
	if names := configMapNames(jobConfigMaps(t, c, ns, job.Name)); !reflect.DeepEqual(names, []string{"restart-paddle-v0"}) {
		t.Errorf("ConfigMaps of the first incarnation: %v", names)
	}

	// Inject a failure: KWOK fails the pod carrying this annotation.
	framework.FailPod(t, c, ns, "restart-worker-1")
	// Every pod must be replaced (new UID) and the job Running again.
	var version int32
	err := framework.Poll(ctx, 120*time.Second, func(ctx context.Context) (bool, error) {
		j, done, err := restartedAnew(ctx, c, ns, job.Name, uids, 4)
		if j != nil {
			version = j.Status.Version
		}
		return done, err
	})
	if err != nil {
		t.Fatalf("job did not restart with 4 new running pods: %v\n%s", err, framework.DescribePods(c, ns))
	}
	if version < 1 {
		t.Fatalf("job version %d after a RestartJob", version)
	}
	suffix := fmt.Sprintf("-v%d", version)
	for _, p := range checkContract(t, c, ns, job.Name) {
		if p.Spec.Hostname != p.Name+suffix || p.Annotations[batchv1alpha1.JobVersion] != fmt.Sprint(version) {
			t.Errorf("%s (version %s): hostname %q, want %q", p.Name, p.Annotations[batchv1alpha1.JobVersion], p.Spec.Hostname, p.Name+suffix)
		}
		if env := podEnv(t, c, &p); env["POD_IP"] != p.Name+suffix+".restart" || !strings.Contains(env["PADDLE_PSERVERS_IP_PORT_LIST"], "restart-ps-1"+suffix+".restart:36000") {
			t.Errorf("%s: POD_IP=%q PADDLE_PSERVERS_IP_PORT_LIST=%q", p.Name, env["POD_IP"], env["PADDLE_PSERVERS_IP_PORT_LIST"])
		}
	}
	if names := configMapNames(jobConfigMaps(t, c, ns, job.Name)); !reflect.DeepEqual(names, []string{"restart-paddle" + suffix}) {
		t.Errorf("ConfigMaps after the restart: %v, want only restart-paddle%s", names, suffix)
	}
}

// configMapNames are the names of the paddle plugin's ConfigMaps among cms.
func configMapNames(cms []corev1.ConfigMap) []string {
	var out []string
	for _, cm := range cms {
		if cm.Labels[paddlejob.ManagedByLabel] == paddlejob.PluginName {
			out = append(out, cm.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Deleting the job removes its Service and ConfigMap (and the garbage
// collector its pods).
func TestPaddleServiceRemovedWithJob(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	job := paddleJob(ns, "short", nil, 2, framework.Task{Name: "worker", Replicas: 2})
	framework.CreateJob(t, c, job)
	framework.WaitJobPhase(t, c, ns, job.Name, batchv1alpha1.Running, 60*time.Second)
	if err := c.Volcano.BatchV1alpha1().Jobs(ns).Delete(ctx, job.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := c.Kube.CoreV1().Services(ns).Get(ctx, job.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("Service still there after the job was deleted: %v", err)
	}
	err = framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		cms, err := c.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1alpha1.JobNameKey + "=" + job.Name})
		return err == nil && len(cms.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("ConfigMap still there after the job was deleted: %v", err)
	}
}
