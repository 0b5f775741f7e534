package paddle

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/test/contract"
)

// elasticJob is collective job name in ml with an elastic worker task
// (testbuilders.ElasticPaddleJob).
var elasticJob = testbuilders.ElasticPaddleJob

// pythonStrip is Python's str.strip(chars): Paddle takes the etcd address
// as PADDLE_MASTER.strip("etcd://") (controllers/master.py: ETCDMaster).
func pythonStrip(s, chars string) string {
	return strings.TrimRight(strings.TrimLeft(s, chars), chars)
}

func TestElasticPodEnv(t *testing.T) {
	for _, name := range []string{"el", "train", "deep", "ctr", "etcd"} { // names starting with e, t, c, d
		t.Run(name, func(t *testing.T) {
			job := elasticJob(name, 2, 3, 4)
			client := fake.NewSimpleClientset()
			pods, err := runJob(t, client, job)
			if err != nil {
				t.Fatal(err)
			}
			if len(pods) != 3 {
				t.Fatalf("%d pods, want 3", len(pods))
			}
			for _, v := range contract.Check(pods, nil, rememberConfigMaps(t, client, "ml")...) {
				t.Errorf("contract: %s", v)
			}
			for _, pod := range pods {
				c := &pod.Spec.Containers[0]
				env := envOf(c)
				host := "paddle-etcd-" + name + ".ml.svc"
				want := map[string]string{
					paddlejob.EnvMaster:         "etcd://" + host + ":2379",
					paddlejob.EnvNNodes:         "2:4",
					paddlejob.EnvElasticLevel:   "1",
					paddlejob.EnvElasticTimeout: "10",
					paddlejob.EnvMaxRestart:     "100",
					paddlejob.EnvJobID:          "ml-" + name,
					paddlejob.EnvProtobufImpl:   "python",
					paddlejob.EnvSelectedGPUs:   "0",
				}
				expectEnv(t, pod.Name, env, want)
				// Paddle strips characters, not a prefix: the host must survive.
				if got := pythonStrip(env[paddlejob.EnvMaster], "etcd://"); got != host+":2379" {
					t.Errorf("%s: Paddle reads the etcd address as %q, want %q", pod.Name, got, host+":2379")
				}
				for _, bad := range []string{paddlejob.EnvTrainerEndpoints, paddlejob.EnvDistributedTrainerEndpoints, paddlejob.EnvTrainerID, paddlejob.EnvRank, paddlejob.EnvTrainersNum, paddlejob.EnvTrainers, paddlejob.EnvCurrentEndpoint, paddlejob.EnvLaunchTrainers, paddlejob.EnvPort} {
					if _, ok := env[bad]; ok {
						t.Errorf("%s: %s is set (%q); it pins a fixed world", pod.Name, bad, env[bad])
					}
				}
				var podIP *v1.EnvVar
				for i := range c.Env {
					if c.Env[i].Name == paddlejob.EnvPodIP {
						podIP = &c.Env[i]
					}
				}
				if podIP == nil || podIP.ValueFrom == nil || podIP.ValueFrom.FieldRef == nil || podIP.ValueFrom.FieldRef.FieldPath != "status.podIP" {
					t.Errorf("%s: POD_IP = %+v, want the downward API's status.podIP", pod.Name, podIP)
				}
				if len(c.Ports) != 0 {
					t.Errorf("%s: declares ports %v; Paddle picks random ports at every rendezvous", pod.Name, c.Ports)
				}
				if pod.Labels[paddleapi.ElasticLabel] != "true" {
					t.Errorf("%s: labels %v lack %s", pod.Name, pod.Labels, paddleapi.ElasticLabel)
				}
				// The barrier waits for the etcd, not for peers that may
				// never come (pods above MIN may stay Pending).
				if len(pod.Spec.InitContainers) != 1 {
					t.Fatalf("%s: init containers %v", pod.Name, pod.Spec.InitContainers)
				}
				if got := envOf(&pod.Spec.InitContainers[0])[paddlejob.EnvBarrierHosts]; got != paddlejob.EtcdName(name) {
					t.Errorf("%s: barrier waits for %q, want %q", pod.Name, got, paddlejob.EtcdName(name))
				}
			}
		})
	}
}

func TestElasticUserEnvKept(t *testing.T) {
	job := elasticJob("el", 1, 2, 3)
	job.Spec.Tasks[0].Template.Spec.Containers[0].Env = []v1.EnvVar{
		{Name: paddlejob.EnvProtobufImpl, Value: "upb"},
		{Name: paddlejob.EnvMaxRestart, Value: "7"},
		{Name: paddlejob.EnvElasticTimeout, Value: "30"},
		{Name: paddlejob.EnvElasticLevel, Value: "1"},
	}
	pods, err := runJob(t, fake.NewSimpleClientset(), job)
	if err != nil {
		t.Fatal(err)
	}
	env := envOf(&pods[0].Spec.Containers[0])
	for k, v := range map[string]string{paddlejob.EnvProtobufImpl: "upb", paddlejob.EnvMaxRestart: "7", paddlejob.EnvElasticTimeout: "30", paddlejob.EnvNNodes: "1:3"} {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
}

func TestElasticEtcdObjects(t *testing.T) {
	ctx := context.Background()
	job := elasticJob("el", 2, 3, 4)
	job.Spec.Tasks[0].Template.Spec.NodeSelector = map[string]string{"pool": "gpu"}
	client := fake.NewSimpleClientset()
	pods, err := runJob(t, client, job)
	if err != nil {
		t.Fatal(err)
	}
	name := paddlejob.EtcdName("el")
	pod, err := client.CoreV1().Pods("ml").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no etcd pod: %v", err)
	}
	if !metav1.IsControlledBy(pod, job) || pod.Spec.SchedulerName != "volcano" || pod.Spec.NodeSelector["pool"] != "gpu" ||
		pod.Spec.RestartPolicy != v1.RestartPolicyAlways || pod.Spec.Containers[0].Image != paddlejob.DefaultEtcdImage {
		t.Errorf("etcd pod: owner %v scheduler %q nodeSelector %v restart %q image %q", pod.OwnerReferences, pod.Spec.SchedulerName, pod.Spec.NodeSelector, pod.Spec.RestartPolicy, pod.Spec.Containers[0].Image)
	}
	if rp := pod.Spec.Containers[0].ReadinessProbe; rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Port.IntValue() != paddlejob.EtcdClientPort {
		t.Errorf("etcd pod readiness probe %+v; the Service must publish it only once etcd answers", rp)
	}
	svc, err := client.CoreV1().Services("ml").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no etcd Service: %v", err)
	}
	// Selector-less: the address is the EndpointSlice the plugin writes
	// from the etcd pod (no IP yet here: no endpoint), never a pod that
	// carries the etcd pod's labels.
	if svc.Spec.ClusterIP != v1.ClusterIPNone || svc.Spec.PublishNotReadyAddresses || len(svc.Spec.Selector) != 0 ||
		len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != paddlejob.EtcdClientPort {
		t.Errorf("etcd Service spec %+v: want headless, selector-less, on %d", svc.Spec, paddlejob.EtcdClientPort)
	}
	slice, err := client.DiscoveryV1().EndpointSlices("ml").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no etcd EndpointSlice: %v", err)
	}
	if !metav1.IsControlledBy(slice, job) || slice.Labels[discoveryv1.LabelServiceName] != name || slice.Labels[discoveryv1.LabelManagedBy] != paddlejob.EtcdEndpointSliceManager ||
		len(slice.Endpoints) != 0 || len(slice.Ports) != 1 || *slice.Ports[0].Port != paddlejob.EtcdClientPort || *slice.Ports[0].Name != svc.Spec.Ports[0].Name {
		t.Errorf("etcd EndpointSlice %+v", slice)
	}
	np, err := client.NetworkingV1().NetworkPolicies("ml").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no NetworkPolicy: %v", err)
	}
	sel, _ := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("NetworkPolicy selects %v, not the etcd pod %v", sel, pod.Labels)
	}
	// The pods as the job controller creates them and OnPodCreate decorates
	// them; an earlier job of the same name (another UID) is not admitted.
	trainer := &pods[2]
	otherPods, err := runJob(t, fake.NewSimpleClientset(), elasticJob("other", 2, 3, 4))
	if err != nil {
		t.Fatal(err)
	}
	other := &otherPods[0]
	earlier := trainer.DeepCopy()
	earlier.Labels[paddleapi.JobUIDLabel] = "uid-of-an-earlier-job"
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != paddlejob.EtcdClientPort {
		t.Fatalf("ingress %+v: want one rule on port %d", np.Spec.Ingress, paddlejob.EtcdClientPort)
	}
	var trainerIn, otherIn, controllerIn bool
	for _, from := range np.Spec.Ingress[0].From {
		ps, _ := metav1.LabelSelectorAsSelector(from.PodSelector)
		if from.NamespaceSelector == nil {
			trainerIn = trainerIn || ps.Matches(labels.Set(trainer.Labels))
			otherIn = otherIn || ps.Matches(labels.Set(other.Labels)) || ps.Matches(labels.Set(earlier.Labels))
			continue
		}
		ns, _ := metav1.LabelSelectorAsSelector(from.NamespaceSelector)
		controllerIn = ns.Matches(labels.Set{v1.LabelMetadataName: "volcano-system"}) && ps.Matches(labels.Set{"app": "volcano-controller"})
	}
	if !trainerIn || otherIn || !controllerIn {
		t.Errorf("NetworkPolicy admits the job's trainer %v, another job's pod %v, the controller %v; want true, false, true", trainerIn, otherIn, controllerIn)
	}

	// Idempotent, and torn down with the job.
	if err := plugin(t, client, job).OnJobAdd(job); err != nil {
		t.Fatal(err)
	}
	if err := plugin(t, client, job).OnJobDelete(job); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("ml").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("etcd pod left after OnJobDelete: %v", err)
	}
	if _, err := client.CoreV1().Services("ml").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("etcd Service left after OnJobDelete: %v", err)
	}
	if _, err := client.NetworkingV1().NetworkPolicies("ml").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("NetworkPolicy left after OnJobDelete: %v", err)
	}
	if _, err := client.DiscoveryV1().EndpointSlices("ml").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("EndpointSlice left after OnJobDelete: %v", err)
	}

	// A fixed-size job gets no etcd.
	fixedJob := newJob("ml", "fixed", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
	if _, err := runJob(t, client, fixedJob); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("ml").Get(ctx, paddlejob.EtcdName("fixed"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a fixed-size job got an etcd pod: %v", err)
	}
}

func TestElasticEtcdOfPreviousRunTerminating(t *testing.T) {
	job := elasticJob("el", 2, 3, 4)
	now := metav1.Now()
	old := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: paddlejob.EtcdName("el"), DeletionTimestamp: &now, Finalizers: []string{"x"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batch.SchemeGroupVersion.WithKind("Job"))}}}
	client := fake.NewSimpleClientset(old)
	job.Status.ControlledResources = map[string]string{}
	err := plugin(t, client, job).OnJobAdd(job)
	if err == nil || !strings.Contains(err.Error(), "still terminating") {
		t.Fatalf("OnJobAdd = %v; want a retry while the previous etcd terminates", err)
	}
}

// The controller follows a resize within [MIN, MAX] instead of holding it:
// Volcano then creates or deletes the pods above the new size and leaves
// the others alone.
func TestElasticResizeFollowed(t *testing.T) {
	job := elasticJob("el", 2, 3, 4)
	client := fake.NewSimpleClientset()
	if _, err := runJob(t, client, job); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int32{4, 2} {
		job.Spec.Tasks[0].Replicas = n
		if err := plugin(t, client, job).OnJobUpdate(job); err != nil {
			t.Fatal(err)
		}
		if job.Spec.Tasks[0].Replicas != n {
			t.Fatalf("resize to %d was held at %d", n, job.Spec.Tasks[0].Replicas)
		}
		if job.Status.State.Reason == paddlejob.ResizeHeldReason {
			t.Fatalf("resize to %d reported as held: %s", n, job.Status.State.Message)
		}
		// A pod of the new size gets the same env as the first ones.
		if n == 4 {
			pod := newPod(job, 0, 3)
			if err := plugin(t, client, job).OnPodCreate(pod, job); err != nil {
				t.Fatal(err)
			}
			if envOf(&pod.Spec.Containers[0])[paddlejob.EnvNNodes] != "2:4" {
				t.Errorf("new pod env %v", envOf(&pod.Spec.Containers[0]))
			}
		}
	}
	// Beyond MAX the controller holds it, as for a fixed-size job.
	job.Spec.Tasks[0].Replicas = 6
	if err := plugin(t, client, job).OnJobUpdate(job); err != nil {
		t.Fatal(err)
	}
	if job.Spec.Tasks[0].Replicas != 2 {
		t.Fatalf("resize beyond MAX not held: replicas %d", job.Spec.Tasks[0].Replicas)
	}
}

// Issue 37, cost: a job that waits in its queue runs no store. OnJobAdd
// (Volcano calls it before the PodGroup is enqueued) writes the store's
// address objects only; the store pod comes with the first trainer pod
// Volcano creates, once per incarnation.
func TestElasticStoreStartsWithTheTrainers(t *testing.T) {
	ctx := context.Background()
	job := elasticJob("el", 2, 3, 4)
	client := fake.NewSimpleClientset()
	job.Status.ControlledResources = map[string]string{}
	if err := plugin(t, client, job).OnJobAdd(job); err != nil {
		t.Fatal(err)
	}
	name := paddlejob.EtcdName("el")
	if _, err := client.CoreV1().Pods("ml").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the store pod exists before any trainer pod: %v", err)
	}
	for _, get := range []func() error{
		func() error { _, err := client.CoreV1().Services("ml").Get(ctx, name, metav1.GetOptions{}); return err },
		func() error {
			_, err := client.NetworkingV1().NetworkPolicies("ml").Get(ctx, name, metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); err != nil {
			t.Errorf("store address object missing after OnJobAdd: %v", err)
		}
	}
	if err := plugin(t, client, job).OnPodCreate(newPod(job, 0, 0), job); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("ml").Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("no store pod once a trainer pod is created: %v", err)
	}
	// The other trainers cost no store call.
	client.ClearActions()
	for i := 1; i < 3; i++ {
		if err := plugin(t, client, job).OnPodCreate(newPod(job, 0, i), job); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range client.Actions() {
		if a.GetResource().Resource == "pods" {
			t.Errorf("a later trainer pod called the API for the store: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}
