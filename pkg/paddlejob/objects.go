package paddlejob

// The objects the plugin owns for a job, built here and created or
// deleted through the API by pkg/paddlekube: the job's headless Service,
// the ConfigMap of each incarnation's lists and, for an elastic job, its
// etcd (store.go).

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// jobKind is the owner kind of the objects: volcano.sh/apis helpers.JobKind,
// which this package does not import, since that package brings in
// client-go's clientset.
var jobKind = batch.SchemeGroupVersion.WithKind("Job")

// ObjectLabels are the labels of every object the plugin creates for a job.
func ObjectLabels(job *batch.Job) map[string]string {
	return map[string]string{ManagedByLabel: PluginName, batch.JobNameKey: job.Name}
}

// NewConfigMap is the ConfigMap of the layout's incarnation.
func NewConfigMap(job *batch.Job, l *Layout) *v1.ConfigMap {
	data := map[string]string{}
	for _, k := range l.lists() {
		data[k] = l.list(k)
	}
	lbl := ObjectLabels(job)
	lbl[IncarnationLabel] = strconv.Itoa(l.Incarnation)
	immutable := true
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       job.Namespace,
			Name:            ConfigMapName(job.Name, l.Incarnation),
			Labels:          lbl,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)},
		},
		Immutable: &immutable,
		Data:      data,
	}
}

// NewService is the job's headless Service: it selects the job's pods and
// publishes not-ready addresses, because Paddle resolves peers while they
// start (the TCP store client and the PS client resolve only once), so a
// name must resolve as soon as its pod has an IP, not when it is Ready.
func NewService(job *batch.Job) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       job.Namespace,
			Name:            job.Name,
			Labels:          ObjectLabels(job),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)},
		},
		Spec: v1.ServiceSpec{
			ClusterIP:                v1.ClusterIPNone,
			Selector:                 jobSelector(job),
			PublishNotReadyAddresses: true,
		},
	}
}

func jobSelector(job *batch.Job) map[string]string {
	sel := map[string]string{batch.JobNameKey: job.Name, batch.JobNamespaceKey: job.Namespace}
	// The job's name is not enough: a job re-created under the same name
	// would list the old job's terminating pods, whose host names are the
	// new pods' (OnPodCreate labels pods with their job's UID; the pod rule
	// of pkg/webhooks/paddlepods keeps users from forging it).
	if job.UID != "" {
		sel[paddleapi.JobUIDLabel] = string(job.UID)
	}
	return sel
}
