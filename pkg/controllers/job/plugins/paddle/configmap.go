package paddle

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/apis/pkg/apis/helpers"
	pluginsinterface "volcano.sh/volcano/pkg/controllers/job/plugins/interface"
)

// The lists every pod of an incarnation shares live in one immutable
// ConfigMap per incarnation, <job>-paddle-v<n>, which the pods' env refers
// to (configMapKeyRef): a pod object then has the same size with 10 or
// 10,000 trainers. It is created before the incarnation's first pod, owned
// by the Job (the garbage collector removes it with the job), and replaced
// when Volcano restarts the whole job: the new pods carry new host names
// (paddleapi.WithIncarnation), so they need new lists.

// IncarnationLabel holds the incarnation (Volcano job version) of a
// ConfigMap; batch.JobNameKey names its job, as on the Service.
const IncarnationLabel = "paddle.volcano.sh/incarnation"

// configMapKey is the key in Job.Status.ControlledResources naming the
// ConfigMap of the job's latest incarnation.
const configMapKey = "plugin-" + PluginName + "-configmap"

// ConfigMapName is the ConfigMap of a job's incarnation.
func ConfigMapName(job string, incarnation int) string {
	return job + "-paddle-v" + strconv.Itoa(incarnation)
}

// objectLabels are the labels of every object the plugin creates for a job.
func objectLabels(job *batch.Job) map[string]string {
	return map[string]string{ManagedByLabel: PluginName, batch.JobNameKey: job.Name}
}

// newConfigMap is the ConfigMap of the layout's incarnation.
func newConfigMap(job *batch.Job, l *Layout) *v1.ConfigMap {
	data := map[string]string{}
	for _, k := range l.lists() {
		data[k] = l.list(k)
	}
	lbl := objectLabels(job)
	lbl[IncarnationLabel] = strconv.Itoa(l.Incarnation)
	immutable := true
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       job.Namespace,
			Name:            ConfigMapName(job.Name, l.Incarnation),
			Labels:          lbl,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, helpers.JobKind)},
		},
		Immutable: &immutable,
		Data:      data,
	}
}

// ensureConfigMap creates the ConfigMap of the layout's incarnation if it is
// not there, then deletes the ConfigMaps of older incarnations. An existing
// one of this job with other content (it is immutable) is replaced.
func ensureConfigMap(ctx context.Context, client kubernetes.Interface, job *batch.Job, l *Layout) error {
	want := newConfigMap(job, l)
	cms := client.CoreV1().ConfigMaps(job.Namespace)
	_, err := cms.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = reconcileConfigMap(ctx, client, job, want)
	}
	if err != nil {
		return err
	}
	klog.V(3).InfoS("Paddle job ConfigMap in place", "job", klog.KObj(job), "configMap", want.Name, "incarnation", l.Incarnation)
	return deleteConfigMaps(ctx, client, job, l.Incarnation)
}

func reconcileConfigMap(ctx context.Context, client kubernetes.Interface, job *batch.Job, want *v1.ConfigMap) error {
	cms := client.CoreV1().ConfigMaps(job.Namespace)
	have, err := cms.Get(ctx, want.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) { // deleted in between: try again
		return ensureCreated(ctx, client, job, want)
	}
	if err != nil {
		return fmt.Errorf("reading ConfigMap %s/%s of Paddle job %s: %w", job.Namespace, want.Name, job.Name, err)
	}
	if !metav1.IsControlledBy(have, job) {
		return fmt.Errorf("ConfigMap %s/%s already exists and does not belong to Paddle job %s/%s; the plugin keeps the job's peer lists under that name: delete the ConfigMap or rename the job",
			job.Namespace, want.Name, job.Namespace, job.Name)
	}
	if reflect.DeepEqual(have.Data, want.Data) {
		return nil
	}
	uid := have.UID
	if err := cms.Delete(ctx, want.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("replacing stale ConfigMap %s/%s of Paddle job %s: %w", job.Namespace, want.Name, job.Name, err)
	}
	klog.InfoS("Replaced a stale ConfigMap of a Paddle job", "job", klog.KObj(job), "configMap", want.Name)
	return ensureCreated(ctx, client, job, want)
}

func ensureCreated(ctx context.Context, client kubernetes.Interface, job *batch.Job, want *v1.ConfigMap) error {
	_, err := client.CoreV1().ConfigMaps(job.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ConfigMap %s/%s of Paddle job %s: %w", job.Namespace, want.Name, job.Name, err)
	}
	return nil
}

// deleteConfigMaps deletes the job's ConfigMaps of incarnations below
// before (all of them for before < 0). Only ConfigMaps the job controls are
// touched.
func deleteConfigMaps(ctx context.Context, client kubernetes.Interface, job *batch.Job, before int) error {
	cms := client.CoreV1().ConfigMaps(job.Namespace)
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(objectLabels(job)).String()})
	if err != nil {
		return fmt.Errorf("listing ConfigMaps of Paddle job %s/%s: %w", job.Namespace, job.Name, err)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		n, err := strconv.Atoi(cm.Labels[IncarnationLabel])
		if err != nil || !metav1.IsControlledBy(cm, job) || (before >= 0 && n >= before) {
			continue
		}
		if err := deleteSame(ctx, cms, job, "ConfigMap", cm); err != nil {
			return err
		}
		klog.V(3).InfoS("Deleted ConfigMap of a past incarnation", "job", klog.KObj(job), "configMap", cm.Name)
	}
	return nil
}

// OnPodCreate runs once per pod, and Volcano creates a job's pods from
// several goroutines: the ConfigMap of an incarnation is ensured once (one
// API call in the common case), the other callers wait for that one.
type ensuredKey struct {
	uid         types.UID
	incarnation int
}

type ensuredEntry struct {
	mu   sync.Mutex
	done bool
}

type ensuredCache struct {
	mu      sync.Mutex
	entries map[ensuredKey]*ensuredEntry
}

var ensured = &ensuredCache{entries: map[ensuredKey]*ensuredEntry{}}

// once runs ensure for (job, incarnation) until it succeeds once.
func (c *ensuredCache) once(job *batch.Job, incarnation int, ensure func() error) error {
	key := ensuredKey{uid: job.UID, incarnation: incarnation}
	c.mu.Lock()
	e := c.entries[key]
	if e == nil {
		if len(c.entries) >= maxCachedLayouts {
			c.entries = map[ensuredKey]*ensuredEntry{}
		}
		e = &ensuredEntry{}
		c.entries[key] = e
	}
	c.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.done {
		return nil
	}
	if err := ensure(); err != nil {
		return err
	}
	e.done = true
	return nil
}

func (c *ensuredCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if k.uid == uid {
			delete(c.entries, k)
		}
	}
}

// ensureIncarnation makes sure the ConfigMap of the layout's incarnation
// exists before a pod that refers to it is created.
func ensureIncarnation(ctx context.Context, client kubernetes.Interface, job *batch.Job, l *Layout) error {
	err := ensured.once(job, l.Incarnation, func() error { return ensureConfigMap(ctx, client, job, l) })
	if err != nil {
		return err
	}
	if job.Status.ControlledResources == nil {
		job.Status.ControlledResources = map[string]string{}
	}
	job.Status.ControlledResources[configMapKey] = ConfigMapName(job.Name, l.Incarnation)
	return nil
}

// EnsureJobObjects (re)creates, idempotently, what the plugin keeps for a
// running Paddle job: its headless Service and the ConfigMap of its current
// incarnation (runningIncarnation). A controller calls it when one of them
// is deleted while the job exists; both carry the volcano.sh/job-name label.
// A job the plugin rejects gets an *InvalidJobError and nothing created.
func EnsureJobObjects(ctx context.Context, client kubernetes.Interface, job *batch.Job) error {
	args, ok := job.Spec.Plugins[PluginName]
	if !ok {
		return nil
	}
	p := New(pluginsinterface.PluginClientset{KubeClients: client}, args).(*jobPlugin)
	l, err := p.layout(job)
	if err != nil {
		return err
	}
	if err := ensureService(ctx, client, job); err != nil {
		return err
	}
	inc, err := runningIncarnation(ctx, client, job)
	if err != nil {
		return err
	}
	l = l.At(inc)
	if err := ensureConfigMap(ctx, client, job, l); err != nil {
		return err
	}
	// Later OnPodCreate calls of this incarnation need not ask again.
	return ensured.once(job, l.Incarnation, func() error { return nil })
}

// runningIncarnation is the incarnation whose lists the job's pods refer to:
// the highest volcano.sh/job-version annotation among the pods the job
// controls (Volcano writes it from job.Status.Version when it creates a pod,
// pkg/controllers/job/job_controller_util.go: createJobPod), or
// job.Status.Version when the job has no pod. The pods, not the status, are
// the truth here: Volcano bumps job.Status.Version in killJob, which also
// runs while an incarnation's pods exist (e.g. twice per RestartJob, seen on
// the real node: version 20 after 10 restarts while the pods carried 10),
// and re-creating the lists under the status's number would delete the
// ConfigMap the running pods use (ensureConfigMap removes older ones).
func runningIncarnation(ctx context.Context, client kubernetes.Interface, job *batch.Job) (int, error) {
	sel := labels.SelectorFromSet(labels.Set{batch.JobNameKey: job.Name}).String()
	pods, err := client.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return 0, fmt.Errorf("listing pods of Paddle job %s/%s: %w", job.Namespace, job.Name, err)
	}
	inc, found := 0, false
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !metav1.IsControlledBy(pod, job) {
			continue
		}
		// Volcano never writes a version above the job's (createJobPod): a
		// higher one is forged, and must not move the job's lists.
		if n, err := strconv.Atoi(pod.Annotations[batch.JobVersion]); err == nil && n >= 0 && n <= int(job.Status.Version) && (!found || n > inc) {
			inc, found = n, true
		}
	}
	if !found {
		return int(job.Status.Version), nil
	}
	return inc, nil
}
