package paddlejob

// The etcd of an elastic job, built here; pkg/paddlekube creates and
// deletes it. Paddle's launchers connect to their etcd
// without credentials or TLS (controllers/master.py: ETCDMaster.__init__,
// etcd3.client(host, port)), and every starting launcher deletes its job's
// prefix: an etcd shared by jobs would let any job wipe another's
// rendezvous. So each elastic job gets its own, created by the plugin when
// the job starts (OnJobAdd, before Volcano creates the job's PodGroup and
// pods) and deleted with it (OnJobDelete, which Volcano runs on completion,
// termination and every restart of the whole job; the owner reference
// covers a controller that missed it):
//
//   - a Pod paddle-etcd-<job> running a single-member etcd, its data in an
//     emptyDir (a crashed etcd process restarts in place with its data;
//     restartPolicy Always). Outside the gang: it is created first and
//     placed on its own (Volcano makes it a PodGroup of one), so a trainer
//     never waits for room for it;
//   - a headless Service of the same name without a selector, and an
//     EndpointSlice of the same name that the plugin and the paddleelastic
//     controller write from the etcd pod (EtcdEndpointSlice): its one
//     endpoint is the pod's IP, ready once etcd answers (readiness probe).
//     The pods' barrier waits for that name (CoreDNS answers a headless
//     Service from its slices' ready endpoints), so no launcher starts
//     before its etcd does. No selector, so that no pod joins the address
//     by carrying the etcd pod's labels: only the job's own etcd pod,
//     written by us, is ever published under the name;
//   - a NetworkPolicy of the same name: only the job's trainers and the
//     controller manager (the paddleelastic loss notice) reach it, on the
//     client port only.
//
// Every one of them is used only while the job controls it
// (metav1.IsControlledBy): pkg/paddlekube refuses to start or repair the
// store over an object someone else made under its name
// (StoreConflictReason), and BorrowedStoreLabels keeps the etcd pod's
// labels out of every Job's pod templates.

import (
	"fmt"
	"net"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// The controller manager's pods, which the NetworkPolicy lets reach the
// etcd: Volcano's release manifest and Helm chart run them in
// volcano-system with the label app=volcano-controller.
var (
	ControllerNamespace = "volcano-system"
	ControllerPodLabels = map[string]string{"app": "volcano-controller"}
)

const etcdDataDir = "/var/lib/etcd"

// etcdLabels select the job's etcd pod.
func etcdLabels(job *batch.Job) map[string]string {
	return map[string]string{ManagedByLabel: PluginName, EtcdOfLabel: job.Name, paddleapi.ElasticLabel: paddleapi.ElasticEtcd}
}

func etcdObjectMeta(job *batch.Job, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace:       job.Namespace,
		Name:            EtcdName(job.Name),
		Labels:          labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)},
	}
}

// EtcdPod is the job's etcd pod. It goes where the trainers may go (their
// node selector and tolerations) and asks little: Paddle's keys are a few
// hundred bytes per pod, written every 5 s. It runs as a non-root user
// (restrictedContainer) and writes only its emptyDir, which is writable by
// every user.
func EtcdPod(job *batch.Job, l *Layout) *v1.Pod {
	small := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")}
	limits := v1.ResourceList{v1.ResourceMemory: resource.MustParse("512Mi")}
	tmpl := &job.Spec.Tasks[l.Trainer.TaskIndex].Template.Spec
	port := fmt.Sprint(EtcdClientPort)
	meta := etcdObjectMeta(job, etcdLabels(job))
	// Volcano's podgroup controller puts a pod without a PodGroup into one
	// of its own, in this queue. Volcano takes a pod without
	// volcano.sh/preemptable as preemptable (api.GetPodPreemptable): the
	// job's rendezvous must never be a victim of the preempt or reclaim
	// actions.
	meta.Annotations = map[string]string{scheduling.QueueNameAnnotationKey: job.Spec.Queue, scheduling.PodPreemptable: "false"}
	automount := false
	enableLinks := false
	return &v1.Pod{
		ObjectMeta: meta,
		Spec: v1.PodSpec{
			SchedulerName:                job.Spec.SchedulerName,
			PriorityClassName:            job.Spec.PriorityClassName,
			RestartPolicy:                v1.RestartPolicyAlways,
			AutomountServiceAccountToken: &automount,
			EnableServiceLinks:           &enableLinks,
			NodeSelector:                 tmpl.NodeSelector,
			Tolerations:                  tmpl.Tolerations,
			Containers: []v1.Container{{
				Name:    "etcd",
				Image:   l.Elastic.Args.EtcdImage,
				Command: []string{"etcd"},
				Args: []string{
					"--name=paddle",
					"--data-dir=" + etcdDataDir,
					"--listen-client-urls=http://0.0.0.0:" + port,
					"--advertise-client-urls=http://$(POD_IP):" + port,
					"--listen-peer-urls=http://127.0.0.1:2380",
					"--initial-advertise-peer-urls=http://127.0.0.1:2380",
					"--initial-cluster=paddle=http://127.0.0.1:2380",
					// Heartbeats rewrite keys every 5 s per pod: keep
					// the history short.
					"--auto-compaction-mode=revision",
					"--auto-compaction-retention=1000",
					"--quota-backend-bytes=268435456",
				},
				Env:   []v1.EnvVar{{Name: EnvPodIP, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				Ports: []v1.ContainerPort{{Name: etcdPortName, ContainerPort: EtcdClientPort, Protocol: v1.ProtocolTCP}},
				ReadinessProbe: &v1.Probe{
					ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(EtcdClientPort)}},
					PeriodSeconds: 2, FailureThreshold: 2,
				},
				LivenessProbe: &v1.Probe{
					ProbeHandler:        v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(EtcdClientPort)}},
					InitialDelaySeconds: 10, PeriodSeconds: 10, FailureThreshold: 6,
				},
				Resources:       v1.ResourceRequirements{Requests: small, Limits: limits},
				VolumeMounts:    []v1.VolumeMount{{Name: "data", MountPath: etcdDataDir}},
				SecurityContext: restrictedContainer(),
			}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		},
	}
}

// etcdPortName names the client port on the Service, the EndpointSlice
// and the pod alike.
const etcdPortName = "etcd-client"

// EtcdService is the headless Service whose name (EtcdName) resolves to the
// etcd pod's IP once etcd answers. It has no selector: its one address is
// the EndpointSlice EtcdEndpointSlice builds, so a pod that carries the
// etcd pod's labels is never published under the name (with a selector,
// Kubernetes' endpointslice controller would list every such pod of the
// namespace: pkg/controller/endpointslice, syncService).
func EtcdService(job *batch.Job) *v1.Service {
	lbl := ObjectLabels(job)
	lbl[EtcdOfLabel] = job.Name
	return &v1.Service{
		ObjectMeta: etcdObjectMeta(job, lbl),
		Spec: v1.ServiceSpec{
			ClusterIP: v1.ClusterIPNone,
			Ports:     []v1.ServicePort{{Name: etcdPortName, Port: EtcdClientPort, TargetPort: intstr.FromInt32(EtcdClientPort), Protocol: v1.ProtocolTCP}},
		},
	}
}

// EtcdEndpointSlice is the address of the selector-less EtcdService: the
// etcd pod's IP, or no endpoint while pod is nil (gone, or not the job's:
// the caller passes only a pod the job controls) or has no IP yet. Ready
// is the pod's Ready condition (the readiness probe asks etcd's /health)
// and false while it terminates. It is always set: CoreDNS takes an
// endpoint whose ready condition is unset as ready (plugin/kubernetes
// object/endpoint.go: EndpointSliceToEndpoints), and only ready endpoints
// answer a headless name, which is what the trainers' barrier waits for.
func EtcdEndpointSlice(job *batch.Job, pod *v1.Pod) *discoveryv1.EndpointSlice {
	lbl := ObjectLabels(job)
	lbl[EtcdOfLabel] = job.Name
	// The labels that tie a slice to its Service, and tell Kubernetes'
	// endpointslice controllers to leave it alone (discovery/v1 types.go:
	// LabelServiceName, LabelManagedBy).
	lbl[discoveryv1.LabelServiceName] = EtcdName(job.Name)
	lbl[discoveryv1.LabelManagedBy] = EtcdEndpointSliceManager
	name, proto, port := etcdPortName, v1.ProtocolTCP, int32(EtcdClientPort)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  etcdObjectMeta(job, lbl),
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &port}},
	}
	if pod == nil || pod.Status.PodIP == "" {
		return slice
	}
	ip := net.ParseIP(pod.Status.PodIP)
	if ip == nil {
		return slice
	}
	if ip.To4() == nil {
		slice.AddressType = discoveryv1.AddressTypeIPv6
	}
	terminating := pod.DeletionTimestamp != nil
	ready := podReady(pod) && !terminating
	serving := podReady(pod)
	ep := discoveryv1.Endpoint{
		Addresses:  []string{pod.Status.PodIP},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &v1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		node := pod.Spec.NodeName
		ep.NodeName = &node
	}
	slice.Endpoints = []discoveryv1.Endpoint{ep}
	return slice
}

func podReady(pod *v1.Pod) bool {
	if pod.Status.Phase != v1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// storeLabelKeys are the labels of the etcd pod that matter to someone
// else: the store's NetworkPolicy selects the etcd pod by them (etcdLabels),
// and the paddleelastic controller takes a pod labelled
// ElasticLabel=ElasticEtcd for an etcd pod (and ElasticLabel=true for an
// elastic trainer, as the scheduler plugin does).
var storeLabelKeys = []string{ManagedByLabel, EtcdOfLabel, paddleapi.ElasticLabel}

// BorrowedStoreLabels refuses the etcd pod's labels (storeLabelKeys) in
// the pod templates of any Volcano Job, Paddle or not: the plugin sets them
// itself, on the pods it makes, and a pod carrying them would be taken for
// a job's etcd (selected by its NetworkPolicy, watched by the
// paddleelastic controller). The pod rule (pkg/webhooks/paddlepods) stops
// users who create such pods directly; the job controller, which creates
// pods from templates, is allowed, so the template is where they are
// stopped.
func BorrowedStoreLabels(job *batch.Job) field.ErrorList {
	var errs field.ErrorList
	for i := range job.Spec.Tasks {
		labels := job.Spec.Tasks[i].Template.Labels
		for _, key := range storeLabelKeys {
			if _, ok := labels[key]; ok {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "tasks").Index(i).Child("template", "metadata", "labels").Key(key),
					fmt.Sprintf("job %s/%s: the paddle job plugin puts this label on the pods it makes (an elastic job's etcd store and trainers), and a pod that carries it would be taken for one; remove it from task %q's template",
						job.Namespace, job.Name, job.Spec.Tasks[i].Name)))
			}
		}
	}
	return errs
}

// EtcdNetworkPolicy admits the job's trainers and the controller manager to
// the etcd's client port, and nothing else. It selects the etcd pod by
// etcdLabels, which no other pod can carry (BorrowedStoreLabels, and the
// pod rule of pkg/webhooks/paddlepods for pods users create), and admits
// trainers by the labels Volcano's job controller sets and overwrites on
// the pods it creates (job name, task) plus the job's UID (DecoratePod), so
// that the terminating pods of an earlier job of the same name are not
// admitted either. Where the network does not enforce NetworkPolicy,
// nothing of this holds (docs/security.md). The trainers' own traffic is
// not restricted: Paddle picks their ports at random at every rendezvous.
func EtcdNetworkPolicy(job *batch.Job, l *Layout) *networkingv1.NetworkPolicy {
	lbl := ObjectLabels(job)
	lbl[EtcdOfLabel] = job.Name
	tcp := v1.ProtocolTCP
	port := intstr.FromInt32(EtcdClientPort)
	return &networkingv1.NetworkPolicy{
		ObjectMeta: etcdObjectMeta(job, lbl),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: etcdLabels(job)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
				From: []networkingv1.NetworkPolicyPeer{
					{PodSelector: &metav1.LabelSelector{MatchLabels: trainerSelector(job, l)}},
					{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1.LabelMetadataName: ControllerNamespace}},
						PodSelector:       &metav1.LabelSelector{MatchLabels: ControllerPodLabels},
					},
				},
			}},
		},
	}
}

// trainerSelector selects the job's trainer pods: Volcano labels every pod
// of a job with its job and task (job_controller_util.go: createJobPod,
// which sets them over the template's), and DecoratePod with the job's
// UID.
func trainerSelector(job *batch.Job, l *Layout) map[string]string {
	sel := map[string]string{batch.JobNameKey: job.Name, batch.TaskSpecKey: l.Trainer.TaskName}
	if job.UID != "" {
		sel[paddleapi.JobUIDLabel] = string(job.UID)
	}
	return sel
}
