package paddle

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// reportInvalid writes the rejection into the Job's status (reason and
// message next to its Pending phase), where `kubectl get vcjob -o yaml` and
// `kubectl describe` show it. Volcano's controller already records the
// error as a Warning event on the Job.
//
// Job plugins only get a Kubernetes clientset, so the patch goes through its
// REST client to the Volcano Job status subresource, with the controller's
// own credentials. The controller does not write the status of a job whose
// plugins fail, so this message stays until the job is fixed or deleted.
func reportInvalid(ctx context.Context, client kubernetes.Interface, job *batch.Job, msg string) {
	reportState(ctx, client, job, paddlejob.InvalidReason, msg)
}

// reportState sets the Job status reason and message (unchanged phase).
func reportState(ctx context.Context, client kubernetes.Interface, job *batch.Job, reason, msg string) {
	if job.Status.State.Reason == reason && job.Status.State.Message == msg {
		return
	}
	rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return // a fake clientset in tests without an API server
	}
	patch, _ := json.Marshal(map[string]interface{}{
		"status": map[string]interface{}{
			"state": map[string]interface{}{"reason": reason, "message": msg},
		},
	})
	path := fmt.Sprintf("/apis/%s/namespaces/%s/jobs/%s/status", batch.SchemeGroupVersion.String(), job.Namespace, job.Name)
	if err := rc.Patch(types.MergePatchType).AbsPath(path).Body(patch).Do(ctx).Error(); err != nil {
		klog.ErrorS(err, "Failed to record the paddle plugin's message in the Job status", "job", klog.KObj(job), "reason", reason)
		return
	}
	job.Status.State.Reason, job.Status.State.Message = reason, msg
}
