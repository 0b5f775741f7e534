package paddlekube

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

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// The lists every pod of an incarnation shares live in one immutable
// ConfigMap per incarnation (paddlejob.NewConfigMap), created before the
// incarnation's first pod and replaced when Volcano restarts the whole job.

// ensureConfigMap creates the ConfigMap of the layout's incarnation if it is
// not there, then deletes the ConfigMaps of older incarnations. An existing
// one of this job with other content (it is immutable) is replaced.
func ensureConfigMap(ctx context.Context, client kubernetes.Interface, job *batch.Job, l *paddlejob.Layout) error {
	want := paddlejob.NewConfigMap(job, l)
	cms := client.CoreV1().ConfigMaps(job.Namespace)
	_, err := cms.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = reconcileConfigMap(ctx, client, job, want)
	}
	if err != nil {
		return err
	}
	klog.V(3).InfoS("Paddle job ConfigMap in place", "job", klog.KObj(job), "configMap", want.Name, "incarnation", l.Incarnation)
	return DeleteConfigMaps(ctx, client, job, l.Incarnation)
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

// DeleteConfigMaps deletes the job's ConfigMaps of incarnations below
// before (all of them for before < 0). Only ConfigMaps the job controls are
// touched.
func DeleteConfigMaps(ctx context.Context, client kubernetes.Interface, job *batch.Job, before int) error {
	cms := client.CoreV1().ConfigMaps(job.Namespace)
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(paddlejob.ObjectLabels(job)).String()})
	if err != nil {
		return fmt.Errorf("listing ConfigMaps of Paddle job %s/%s: %w", job.Namespace, job.Name, err)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		n, err := strconv.Atoi(cm.Labels[paddlejob.IncarnationLabel])
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

// maxEnsured bounds memory if OnJobDelete is missed (controller
// restarts): past it the cache starts over.
const maxEnsured = 10000

// once runs ensure for (job, incarnation) until it succeeds once.
func (c *ensuredCache) once(job *batch.Job, incarnation int, ensure func() error) error {
	key := ensuredKey{uid: job.UID, incarnation: incarnation}
	c.mu.Lock()
	e := c.entries[key]
	if e == nil {
		if len(c.entries) >= maxEnsured {
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

// Forget drops what the cache of ensured incarnations holds for a job
// (OnJobDelete).
func Forget(uid types.UID) {
	ensured.forget(uid)
	storeStarted.forget(uid)
}

// EnsureIncarnation makes sure the ConfigMap of the layout's incarnation
// exists before a pod that refers to it is created.
func EnsureIncarnation(ctx context.Context, client kubernetes.Interface, job *batch.Job, l *paddlejob.Layout) error {
	err := ensured.once(job, l.Incarnation, func() error { return ensureConfigMap(ctx, client, job, l) })
	if err != nil {
		return err
	}
	if job.Status.ControlledResources == nil {
		job.Status.ControlledResources = map[string]string{}
	}
	job.Status.ControlledResources[paddlejob.ConfigMapKey] = paddlejob.ConfigMapName(job.Name, l.Incarnation)
	return nil
}
