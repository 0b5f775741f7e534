// Package paddle is an admission webhook for Volcano's webhook manager: it
// runs the paddle job plugin's validation when a Job is created or updated,
// so `kubectl apply` of a Paddle job the plugin cannot serve fails at once
// with the field and the fix, instead of the job sitting Pending.
//
// The job controller validates again (for clusters without this webhook);
// both use paddle.ValidateJob, so they cannot disagree.
package paddle

import (
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	whv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/webhooks/router"
	"volcano.sh/volcano/pkg/webhooks/schema"
	"volcano.sh/volcano/pkg/webhooks/util"

	jobplugin "github.com/volcano-paddle/volcano-paddle/pkg/controllers/job/plugins/paddle"
)

// Path is where the webhook manager serves this admission; add it to the
// manager's --enabled-admission list.
const Path = "/jobs/paddle/validate"

func init() {
	if err := router.RegisterAdmission(service); err != nil {
		panic(err)
	}
}

var service = &router.AdmissionService{
	Path: Path,
	Func: Admit,
	ValidatingConfig: &whv1.ValidatingWebhookConfiguration{
		Webhooks: []whv1.ValidatingWebhook{{
			Name: "validatepaddlejob.volcano.sh",
			Rules: []whv1.RuleWithOperations{{
				Operations: []whv1.OperationType{whv1.Create, whv1.Update},
				Rule: whv1.Rule{
					APIGroups:   []string{"batch.volcano.sh"},
					APIVersions: []string{"v1alpha1"},
					Resources:   []string{"jobs"},
				},
			}},
		}},
	},
}

// Admit allows every Job without the paddle plugin and validates the others.
func Admit(ar admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
	job, err := schema.DecodeJob(ar.Request.Object, ar.Request.Resource)
	if err != nil {
		return util.ToAdmissionResponse(err)
	}
	args, uses := job.Spec.Plugins[jobplugin.PluginName]
	if !uses {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	if job.Namespace == "" {
		job.Namespace = ar.Request.Namespace
	}
	a, errs := jobplugin.ParseArgs(args)
	var layout *jobplugin.Layout
	if len(errs) == 0 {
		layout, errs = jobplugin.ValidateJob(job, a)
	}
	if len(errs) == 0 && ar.Request.Operation == admissionv1.Update {
		errs = validateUpdate(ar, layout, a)
	}
	if len(errs) == 0 {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	msg := jobplugin.NewInvalidJobError(job, errs).Error()
	klog.V(3).InfoS("Denied Paddle job", "job", klog.KObj(job), "reason", msg)
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  metav1.StatusReasonInvalid,
			Code:    422,
			Message: msg,
		},
	}
}

// validateUpdate refuses changing the replicas of a Paddle role: the peer
// lists of running processes cannot change.
func validateUpdate(ar admissionv1.AdmissionReview, now *jobplugin.Layout, a *jobplugin.Args) field.ErrorList {
	old, err := schema.DecodeJob(ar.Request.OldObject, ar.Request.Resource)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	if old.Namespace == "" {
		old.Namespace = ar.Request.Namespace
	}
	was, errs := jobplugin.ValidateJob(old, a)
	if len(errs) > 0 || was == nil {
		return nil // the old job was never valid: judge the new one alone
	}
	if was.ReplicaSummary() != now.ReplicaSummary() {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "tasks"),
			fmt.Sprintf("replicas of Paddle roles cannot change (%s -> %s): Paddle's peer lists are fixed when its processes start; delete the job and create it with the new sizes",
				was.ReplicaSummary(), now.ReplicaSummary()))}
	}
	return nil
}
