package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// restrictedJob makes every container of the job comply with Pod Security's
// "restricted" profile, as a user who runs in such a namespace writes it.
func restrictedJob(j *batchv1alpha1.Job) *batchv1alpha1.Job {
	nonRoot, escalate, uid := true, false, int64(1000)
	for i := range j.Spec.Tasks {
		spec := &j.Spec.Tasks[i].Template.Spec
		spec.SecurityContext = &corev1.PodSecurityContext{
			RunAsNonRoot: &nonRoot, RunAsUser: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
		for k := range spec.Containers {
			spec.Containers[k].SecurityContext = &corev1.SecurityContext{
				AllowPrivilegeEscalation: &escalate,
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}
		}
	}
	return j
}

// In a namespace that enforces Pod Security "restricted", a Paddle job whose
// own containers comply starts: the DNS barrier the plugin adds to its pods
// and the etcd pod it creates for an elastic job comply too (the API
// server's PodSecurity admission refused both before, and the job never
// started).
func TestRestrictedNamespaceRunsPaddleJobs(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/enforce-version":"latest"}}}`)
	if _, err := c.Kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	collective := restrictedJob(paddleJob(ns, "rs-coll", nil, 2, framework.Task{Name: "trainer", Replicas: 2, GPUs: 1}))
	framework.CreateJob(t, c, collective)
	framework.WaitJobPhase(t, c, ns, collective.Name, batchv1alpha1.Running, 60*time.Second)

	elastic := restrictedJob(paddleJob(ns, "rs-el", []string{"--elastic-max=3"}, 2, framework.Task{Name: "worker", Replicas: 2, GPUs: 1}))
	elastic.Spec.Policies = nil
	min := int32(2)
	elastic.Spec.Tasks[0].MinAvailable = &min
	framework.CreateJob(t, c, elastic)
	framework.WaitJobPhase(t, c, ns, elastic.Name, batchv1alpha1.Running, 60*time.Second)
	store, err := c.Kube.CoreV1().Pods(ns).Get(ctx, paddlejob.EtcdName(elastic.Name), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the elastic job's etcd pod: %v", err)
	}
	sc := store.Spec.Containers[0].SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		t.Errorf("the etcd pod's container does not run as a non-root user: %+v", sc)
	}

	// Every pod of both jobs was admitted, with the barrier in front.
	for job, n := range map[string]int{collective.Name: 2, elastic.Name: 2} {
		pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1alpha1.JobNameKey + "=" + job})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != n {
			t.Errorf("%s has %d pods, want %d", job, len(pods.Items), n)
		}
		for _, p := range pods.Items {
			if len(p.Spec.InitContainers) == 0 || p.Spec.InitContainers[0].Name != paddlejob.BarrierContainerName {
				t.Errorf("%s: no barrier init container first: %v", p.Name, fmt.Sprint(p.Spec.InitContainers))
			}
		}
	}
}
