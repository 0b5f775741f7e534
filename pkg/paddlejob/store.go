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
//   - a headless Service of the same name that publishes the pod only once
//     etcd answers (readiness probe, publishNotReadyAddresses false): the
//     pods' barrier waits for that name, so no launcher starts before its
//     etcd does;
//   - a NetworkPolicy of the same name: only the job's trainers and the
//     controller manager (the paddleelastic loss notice) reach it, on the
//     client port only.

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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
				Ports: []v1.ContainerPort{{Name: "etcd-client", ContainerPort: EtcdClientPort, Protocol: v1.ProtocolTCP}},
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

// EtcdService is the headless Service whose name (EtcdName) resolves to the
// etcd pod's IP once etcd answers.
func EtcdService(job *batch.Job) *v1.Service {
	lbl := ObjectLabels(job)
	lbl[EtcdOfLabel] = job.Name
	return &v1.Service{
		ObjectMeta: etcdObjectMeta(job, lbl),
		Spec: v1.ServiceSpec{
			ClusterIP: v1.ClusterIPNone,
			Selector:  etcdLabels(job),
			Ports:     []v1.ServicePort{{Name: "etcd-client", Port: EtcdClientPort, TargetPort: intstr.FromInt32(EtcdClientPort), Protocol: v1.ProtocolTCP}},
		},
	}
}

// EtcdNetworkPolicy admits the job's trainers and the controller manager to
// the etcd's client port, and nothing else. The trainers' own traffic is
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
					// Volcano labels every pod of a job with its job and
					// task (job_controller_util.go: createJobPod).
					{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
						batch.JobNameKey: job.Name, batch.TaskSpecKey: l.Trainer.TaskName,
					}}},
					{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1.LabelMetadataName: ControllerNamespace}},
						PodSelector:       &metav1.LabelSelector{MatchLabels: ControllerPodLabels},
					},
				},
			}},
		},
	}
}
