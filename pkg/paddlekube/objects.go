package paddlekube

import (
	"context"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// EnsureObjects (re)creates the API objects a started Paddle job needs
// while it exists (EnsureJobObjects: its headless Service and the ConfigMap
// of its incarnation), for the sizes its pods were started with: while a
// resize is held (the job plugin's holdResize) the spec's replicas are not the
// running ones. The paddleobjects controller calls it when one of them is
// deleted under a running job; the plugin's own hooks only run on job
// syncs, which a deletion does not trigger.
func EnsureObjects(ctx context.Context, client kubernetes.Interface, job *batch.Job) error {
	if was, ok := job.Status.ControlledResources[paddlejob.LayoutKey]; ok {
		job = job.DeepCopy()
		paddlejob.RestoreSizes(job, paddlejob.ParseReplicaSummary(was))
	}
	return EnsureJobObjects(ctx, client, job)
}

// Start creates what a Paddle job needs before Volcano creates its pods
// (the job plugin's OnJobAdd): its headless Service, an elastic job's
// store address (its pod comes with the trainers: EnsureEtcdStarted) and
// the ConfigMap of its current incarnation, so that the peer lists exist
// before any pod refers to them; then it records in the job's status that
// the plugin serves it (paddlejob.Serves), at the sizes of l. l is the
// job's validated layout.
func Start(ctx context.Context, client kubernetes.Interface, job *batch.Job, l *paddlejob.Layout) error {
	if err := EnsureService(ctx, client, job); err != nil {
		return err
	}
	if l.Elastic != nil {
		if err := ensureEtcdAddress(ctx, client, job, l); err != nil {
			return err
		}
	}
	if err := EnsureIncarnation(ctx, client, job, l.At(int(job.Status.Version))); err != nil {
		return err
	}
	job.Status.ControlledResources[paddlejob.ControlledKey] = paddlejob.PluginName
	job.Status.ControlledResources[paddlejob.LayoutKey] = l.ReplicaSummary()
	return nil
}

// EnsureJobObjects (re)creates, idempotently, what the plugin keeps for a
// running Paddle job: its headless Service and the ConfigMap of its current
// incarnation (runningIncarnation). A controller calls it when one of them
// is deleted while the job exists; both carry the volcano.sh/job-name label.
// A job the plugin rejects gets a *paddlejob.InvalidJobError and nothing
// created.
func EnsureJobObjects(ctx context.Context, client kubernetes.Interface, job *batch.Job) error {
	s, ok := paddlejob.Read(job)
	if !ok {
		return nil
	}
	l, err := s.Validate(job)
	if err != nil {
		return err
	}
	if err := EnsureService(ctx, client, job); err != nil {
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
