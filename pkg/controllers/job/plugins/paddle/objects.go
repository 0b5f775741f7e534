package paddle

import (
	"context"

	"k8s.io/client-go/kubernetes"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// EnsureObjects (re)creates the API objects a started Paddle job needs
// while it exists (EnsureJobObjects: its headless Service and the ConfigMap
// of its incarnation), for the sizes its pods were started with: while a
// resize is held (update.go: holdResize) the spec's replicas are not the
// running ones. The paddleobjects controller calls it when one of them is
// deleted under a running job; the plugin's own hooks only run on job
// syncs, which a deletion does not trigger.
func EnsureObjects(ctx context.Context, client kubernetes.Interface, job *batch.Job) error {
	if was, ok := job.Status.ControlledResources[layoutKey]; ok {
		job = job.DeepCopy()
		restoreSizes(job, parseReplicaSummary(was))
	}
	return EnsureJobObjects(ctx, client, job)
}

// Serves reports whether the plugin has set the job up (OnJobAdd) and not
// torn it down since (OnJobDelete, which Volcano's killJob runs on every
// restart, completion and termination): its objects should exist.
func Serves(job *batch.Job) bool {
	return job.Status.ControlledResources[controlledKey] == PluginName
}
