package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

type invalidCase struct {
	name string
	job  func(ns string) *batchv1alpha1.Job
	want []string // parts of the message: the field and the fix
}

func invalidCases() []invalidCase {
	return []invalidCase{
		{"unknown flag", func(ns string) *batchv1alpha1.Job {
			return paddleJob(ns, "bad-flag", []string{"--prot=36000"}, 2, framework.Task{Name: "worker", Replicas: 2})
		}, []string{"spec.plugins.paddle", "flag provided but not defined: -prot", "--port"}},
		{"gloo in a collective job", func(ns string) *batchv1alpha1.Job {
			return paddleJob(ns, "bad-gloo", []string{"--gloo=1"}, 2, framework.Task{Name: "worker", Replicas: 2})
		}, []string{"spec.plugins.paddle[--gloo]", "remove --gloo"}},
		{"seed 000 template: POD_IP from the pod IP", func(ns string) *batchv1alpha1.Job {
			j := paddleJob(ns, "bad-podip", nil, 2, framework.Task{Name: "pserver", Replicas: 1}, framework.Task{Name: "trainer", Replicas: 1})
			j.Spec.Tasks[0].Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD_IP",
				ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
			return j
		}, []string{"spec.tasks[0].template.spec.containers[0].env[0]", "remove it from the template"}},
		{"no trainers", func(ns string) *batchv1alpha1.Job {
			return paddleJob(ns, "bad-trainers", nil, 1, framework.Task{Name: "ps", Replicas: 1}, framework.Task{Name: "worker", Replicas: 0})
		}, []string{"spec.tasks[1].replicas", "at least 1 replica"}},
		// Building this job's pods once panicked in the controller
		// (makeslice in selectedGPUs) and took every job down with it.
		{"1e18 GPUs", func(ns string) *batchv1alpha1.Job {
			j := paddleJob(ns, "bad-gpus", nil, 2, framework.Task{Name: "ps", Replicas: 1}, framework.Task{Name: "worker", Replicas: 1})
			res := j.Spec.Tasks[1].Template.Spec.Containers[0].Resources
			res.Limits["nvidia.com/gpu"] = resource.MustParse("1e18")
			res.Requests["nvidia.com/gpu"] = resource.MustParse("1e18")
			return j
		}, []string{"spec.tasks[1].template.spec.containers[0].resources.limits[nvidia.com/gpu]", "between 0 and 256"}},
		// A valid Job name but no valid Service name: the Service create
		// failed with a raw API error and the job was terminated.
		{"name starting with a digit", func(ns string) *batchv1alpha1.Job {
			return paddleJob(ns, "1paddle", nil, 2, framework.Task{Name: "worker", Replicas: 2})
		}, []string{"metadata.name", "DNS-1035", `rename the job, e.g. "paddle-paddle"`}},
		{"a flag given twice", func(ns string) *batchv1alpha1.Job {
			return paddleJob(ns, "bad-twice", []string{"--port=30000", "--port=40000"}, 2, framework.Task{Name: "worker", Replicas: 2})
		}, []string{"spec.plugins.paddle", "given more than once"}},
		{"replicas beyond the bound", func(ns string) *batchv1alpha1.Job {
			return paddleJob(ns, "bad-replicas", nil, 1, framework.Task{Name: "ps", Replicas: 1}, framework.Task{Name: "worker", Replicas: 100000})
		}, []string{"spec.tasks[1].replicas", "between 0 and 10000"}},
	}
}

// With the paddle admission webhook installed (as deploy/ does), a bad
// Paddle job is refused at create time with the field and the fix.
func TestPaddleInvalidJobsRefusedAtAdmission(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	for _, tc := range invalidCases() {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job(ns)
			_, err := c.Volcano.BatchV1alpha1().Jobs(ns).Create(context.Background(), job, metav1.CreateOptions{})
			if err == nil {
				t.Fatal("created")
			}
			msg := err.Error()
			if !strings.Contains(msg, "paddle plugin rejected job "+ns+"/"+job.Name) {
				t.Errorf("message does not name the job: %s", msg)
			}
			// Invalid with one cause per field, as Kubernetes' own
			// validation answers.
			var status apierrors.APIStatus
			if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil || !hasCause(status.Status().Details.Causes, tc.want[0]) {
				t.Errorf("not Invalid with a cause for %s: %#v", tc.want[0], err)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q: %s", w, msg)
				}
			}
		})
	}
}

// Without the webhook (a cluster that did not install it, or a job admitted
// before), the controller rejects the job: a Warning event and the job's
// status say why, and no PodGroup, pod or Service is created.
func TestPaddleInvalidJobsRejectedByController(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	withoutPaddleWebhooks(t, c)

	for _, tc := range invalidCases() {
		t.Run(tc.name, func(t *testing.T) {
			job := framework.CreateJob(t, c, tc.job(ns))
			var event *corev1.Event
			err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
				evs, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + job.Name})
				if err != nil {
					return false, err
				}
				for i, e := range evs.Items {
					if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "paddle plugin rejected job") {
						event = &evs.Items[i]
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				t.Fatalf("no Warning event from the paddle plugin: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(event.Message, w) {
					t.Errorf("event lacks %q: %s", w, event.Message)
				}
			}
			var got *batchv1alpha1.Job
			err = framework.Poll(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
				got, err = c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
				return err == nil && got.Status.State.Reason == "PaddleInvalidSpec", err
			})
			if err != nil {
				t.Fatalf("job status does not carry the rejection: %+v", got.Status.State)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Status.State.Message, w) {
					t.Errorf("status message lacks %q: %s", w, got.Status.State.Message)
				}
			}
			// Let the controller retry a few times, then check nothing exists.
			if err := c.WaitSchedulerSessions(ctx, 2, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			sel := metav1.ListOptions{LabelSelector: batchv1alpha1.JobNameKey + "=" + job.Name}
			if pods, _ := c.Kube.CoreV1().Pods(ns).List(ctx, sel); len(pods.Items) != 0 {
				t.Errorf("%d pods created for a rejected job", len(pods.Items))
			}
			if _, err := c.Kube.CoreV1().Services(ns).Get(ctx, job.Name, metav1.GetOptions{}); err == nil {
				t.Error("a Service was created for a rejected job")
			}
			pgs, _ := c.Volcano.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{})
			for _, pg := range pgs.Items {
				if metav1.IsControlledBy(&pg, got) {
					t.Errorf("PodGroup %s created for a rejected job", pg.Name)
				}
			}
		})
	}

	// With all of them in the cluster, the controller still serves other
	// jobs, and no hook panicked on them.
	good := framework.CreateJob(t, c, paddleJob(ns, "bystander", nil, 2, framework.Task{Name: "worker", Replicas: 2}))
	framework.WaitJobPhase(t, c, ns, good.Name, batchv1alpha1.Running, 60*time.Second)
	assertNoPanic(t, c)
}

// Without the paddle webhook, an invalid Paddle job
// that also uses Volcano's svc plugin gets svc's Service, ConfigMap and
// NetworkPolicy before the paddle plugin rejects it, and svc never removes
// them (its status record is not written). Once Volcano gives up on the
// job, paddle-objects-controller removes them.
func TestInvalidJobWithSvcLeavesNothing(t *testing.T) {
	c, ns := framework.ClusterNamespace(t)
	ctx := context.Background()
	withoutPaddleWebhooks(t, c)
	job := paddleJob(ns, "badsvc", []string{"--gloo=1"}, 2, framework.Task{Name: "worker", Replicas: 2})
	job.Spec.Plugins["svc"] = []string{}
	framework.CreateJob(t, c, job)
	// Plugins run in map order: svc creates its objects in the rounds it
	// comes first. For a map of two keys that is one round in 8 (Go's
	// small maps start their iteration at one of 8 slots and wrap), and
	// Volcano's retries of a failing job thin out exponentially (15 rounds
	// in a minute: svc never came first in one run in about 7). Each
	// change to the job is another round: the test touches an annotation
	// until svc has come first.
	rounds := 0
	if err := framework.Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		if _, err := c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, job.Name+"-svc", metav1.GetOptions{}); err == nil {
			return true, nil
		}
		rounds++
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.paddle.volcano.sh/round":"%d"}}}`, rounds)
		_, err := c.Volcano.BatchV1alpha1().Jobs(ns).Patch(ctx, job.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return false, err
	}); err != nil {
		t.Fatalf("the svc plugin created nothing in %d rounds: %v", rounds, err)
	}
	start := time.Now()
	var phase batchv1alpha1.JobPhase
	if err := framework.Poll(ctx, 5*time.Minute, func(ctx context.Context) (bool, error) {
		j, err := c.Volcano.BatchV1alpha1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase = j.Status.State.Phase
		switch phase {
		case batchv1alpha1.Failed, batchv1alpha1.Terminated, batchv1alpha1.Aborted, batchv1alpha1.Completed:
			return true, nil
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the invalid job did not finish (phase %s): %v", phase, err)
	}
	t.Logf("Volcano gave up on the invalid job after %s (phase %s)", time.Since(start).Round(time.Second), phase)
	if err := framework.Poll(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		_, e1 := c.Kube.CoreV1().Services(ns).Get(ctx, job.Name, metav1.GetOptions{})
		_, e2 := c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, job.Name+"-svc", metav1.GetOptions{})
		_, e3 := c.Kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, job.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2) && apierrors.IsNotFound(e3), nil
	}); err != nil {
		t.Fatalf("the svc plugin's objects are still there after the job finished: %v", err)
	}
	waitJobEvent(t, c, ns, job.Name, corev1.EventTypeNormal, "PaddleSvcObjectsRemoved")
}
