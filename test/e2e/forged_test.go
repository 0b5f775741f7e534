package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

const paddlePodHook = "volcano-admission-service-pods-paddle-validate"

// podOnlyUser returns a client for a user who may only manage pods in ns,
// the attacker of issue 28.
func podOnlyUser(t *testing.T, c *localcluster.Cluster, ns, user string) kubernetes.Interface {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Kube.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pods-only"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "update", "patch", "delete"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pods-only"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pods-only"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// forgedPod copies what Volcano's controller wrote on a pod of the victim
// (labels, annotations, controller reference), under a new name, with a
// scheduler that does not exist so that it stays Pending.
func forgedPod(real corev1.Pod, name string, mod func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: real.Namespace, Name: name,
			Labels: map[string]string{}, Annotations: map[string]string{}, OwnerReferences: real.OwnerReferences},
		Spec: corev1.PodSpec{SchedulerName: "nobody", RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/evil:1"}}},
	}
	for k, v := range real.Labels {
		p.Labels[k] = v
	}
	for k, v := range real.Annotations {
		p.Annotations[k] = v
	}
	if mod != nil {
		mod(p)
	}
	return p
}

type jobState struct {
	version int32
	pods    map[string]types.UID
	cms     []string
}

func victimState(t *testing.T, c *localcluster.Cluster, ns, name string) jobState {
	t.Helper()
	ctx := context.Background()
	j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := jobState{version: j.Status.Version, pods: podUIDs(framework.JobPods(t, c, ns, name))}
	cms, err := c.Kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1alpha1.JobNameKey + "=" + name})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		s.cms = append(s.cms, cm.Name)
	}
	return s
}

// Issue 28, item 2: a user who may only create pods forges pods of another
// user's Paddle job. With the pod rule every forgery is refused and the
// victim is untouched; without it (the webhook configuration removed), one
// Pending forged pod restarts the victim through Volcano's own controller
// (it deletes the surplus pod, and the deletion is the victim's PodEvicted
// -> RestartJob), which is what the rule prevents.
func TestForgedPodsRefused(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	job := runningPSJob(t, c, ns, "victim")
	mallory := podOnlyUser(t, c, ns, "mallory")
	var worker corev1.Pod
	for _, p := range framework.JobPods(t, c, ns, job.Name) {
		if p.Labels[paddleapi.RoleLabel] == "trainer" {
			worker = p
		}
	}
	if worker.Name == "" {
		t.Fatal("no trainer pod")
	}
	before := victimState(t, c, ns, job.Name)

	// The user can create pods: the refusals below are the rule's.
	plain, err := mallory.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain", Labels: map[string]string{"app": "mine"}},
		Spec: corev1.PodSpec{SchedulerName: "nobody", Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/mine:1"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a pod that claims no job: %v", err)
	}

	forgeries := map[string]*corev1.Pod{
		"version 99 (issue 28)": forgedPod(worker, "victim-worker-7", func(p *corev1.Pod) { p.Annotations[batchv1alpha1.JobVersion] = "99" }),
		"pending surplus pod":   forgedPod(worker, "victim-worker-8", nil),
		"annotations and owner only, no label": forgedPod(worker, "victim-worker-9", func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "x"}
		}),
		"bare pod with the job's labels (a second DNS record)": forgedPod(worker, "extra", func(p *corev1.Pod) {
			p.Annotations, p.OwnerReferences = nil, nil
			p.Labels = map[string]string{batchv1alpha1.JobNameKey: job.Name, batchv1alpha1.JobNamespaceKey: ns}
		}),
	}
	for name, p := range forgeries {
		_, err := mallory.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only the Volcano job controller") {
			t.Errorf("%s: created or refused for another reason: %v", name, err)
		}
	}
	// Nor may an existing pod be turned into one of the job's.
	plain.Labels[batchv1alpha1.JobNameKey] = job.Name
	if _, err := mallory.CoreV1().Pods(ns).Update(ctx, plain, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("labelling a pod into the Paddle job: %v", err)
	}

	// Give Volcano's controller and paddle-objects time to act on anything
	// that got through: a restart shows within seconds (below).
	if err := framework.Poll(ctx, 5*time.Second, func(ctx context.Context) (bool, error) {
		now := victimState(t, c, ns, job.Name)
		return now.version != before.version || len(now.pods) != len(before.pods), nil
	}); err == nil {
		t.Fatalf("the victim changed after the refused forgeries: %+v -> %+v", before, victimState(t, c, ns, job.Name))
	}
	after := victimState(t, c, ns, job.Name)
	if after.version != before.version || strings.Join(after.cms, ",") != strings.Join(before.cms, ",") {
		t.Fatalf("victim changed: %+v -> %+v", before, after)
	}
	for n, uid := range before.pods {
		if after.pods[n] != uid {
			t.Fatalf("victim pod %s replaced", n)
		}
	}
	if want := paddlejob.ConfigMapName(job.Name, int(before.version)); len(after.cms) != 1 || after.cms[0] != want {
		t.Fatalf("victim ConfigMaps %v, want [%s]", after.cms, want)
	}

	// Without the rule.
	adm := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	vwc, err := adm.Get(ctx, paddlePodHook, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.Delete(ctx, paddlePodHook, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		vwc.ResourceVersion, vwc.UID = "", ""
		if _, err := adm.Create(context.Background(), vwc, metav1.CreateOptions{}); err != nil {
			t.Errorf("restoring %s: %v", paddlePodHook, err)
		}
	})
	pending := forgeries["pending surplus pod"]
	if err := framework.Poll(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := mallory.CoreV1().Pods(ns).Create(ctx, pending, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the API server still calls the pod rule: %v", err)
	}
	if _, err := mallory.CoreV1().Pods(ns).Create(ctx, pending, metav1.CreateOptions{}); err != nil {
		t.Fatalf("without the rule: %v", err)
	}
	if err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		return victimState(t, c, ns, job.Name).version > before.version, nil
	}); err != nil {
		t.Fatalf("without the rule the forged Pending pod did not restart the victim (Volcano's weak point no longer there? update docs/security.md): %v", err)
	}
	t.Logf("without the rule: one Pending forged pod moved the victim from version %d to %d", before.version, victimState(t, c, ns, job.Name).version)
}
