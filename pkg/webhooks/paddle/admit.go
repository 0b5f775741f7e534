// Package paddle is the admission for Paddle jobs in Volcano's webhook
// manager. The validating admission runs the paddle job plugin's
// validation when a Job is created or updated, so `kubectl apply` of a
// Paddle job the plugin cannot serve fails at once with every field and
// its fix, and returns warnings for risky but valid specs; the mutating
// admission applies the plugin's defaults (paddle.Defaults).
//
// The job controller validates again (for clusters without this webhook,
// and namespaces it skips); both use paddle.ValidateJob and
// paddle.ValidateUpdate, so they cannot disagree.
package paddle

import (
	"context"
	"encoding/json"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	whv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/volcano/pkg/webhooks/router"
	vcschema "volcano.sh/volcano/pkg/webhooks/schema"
	"volcano.sh/volcano/pkg/webhooks/util"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// Paths where the webhook manager serves the admissions; add both to its
// --enabled-admission list.
const (
	Path       = "/jobs/paddle/validate"
	MutatePath = "/jobs/paddle/mutate"
)

var jobRule = []whv1.RuleWithOperations{{
	Operations: []whv1.OperationType{whv1.Create, whv1.Update},
	Rule: whv1.Rule{
		APIGroups:   []string{"batch.volcano.sh"},
		APIVersions: []string{"v1alpha1"},
		Resources:   []string{"jobs"},
	},
}}

var (
	validating = &router.AdmissionService{
		Path: Path,
		Func: withoutContext(Admit),
		ValidatingConfig: &whv1.ValidatingWebhookConfiguration{
			Webhooks: []whv1.ValidatingWebhook{{Name: "validatepaddlejob.volcano.sh", Rules: jobRule}},
		},
	}
	mutating = &router.AdmissionService{
		Path: MutatePath,
		Func: withoutContext(Mutate),
		MutatingConfig: &whv1.MutatingWebhookConfiguration{
			Webhooks: []whv1.MutatingWebhook{{Name: "mutatepaddlejob.volcano.sh", Rules: jobRule}},
		},
	}
)

// withoutContext is admit as router.AdmissionService.Func, which takes no
// context. Volcano's router.Serve would call it; init serves the requests
// with our handler instead, which passes the request's context.
func withoutContext(admit admitFunc) router.AdmitFunc {
	return func(ar admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		return admit(context.Background(), ar)
	}
}

func init() {
	for _, s := range []struct {
		svc   *router.AdmissionService
		admit admitFunc
		pre   precheckFunc
	}{{validating, Admit, func(ar admissionv1.AdmissionReview) *admissionv1.AdmissionResponse { return precheck(ar, false) }},
		{mutating, Mutate, func(ar admissionv1.AdmissionReview) *admissionv1.AdmissionResponse { return precheck(ar, true) }}} {
		if err := router.RegisterAdmission(s.svc); err != nil {
			panic(err)
		}
		// RegisterAdmission installs Volcano's router.Serve, which reads
		// the whole body and gives the admission no context; ours bounds
		// the request and drops the work when its client leaves (serve.go).
		s.svc.Handler = router.AdmissionHandler(HandlerWithPrecheck(s.pre, s.admit))
	}
}

var jobGroupKind = schema.GroupKind{Group: batch.SchemeGroupVersion.Group, Kind: "Job"}

// decoded is a Paddle job of an admission request with its arguments.
type decoded struct {
	job  *batch.Job
	args *paddlejob.Args
	errs field.ErrorList // argument errors
}

// decode returns nil for a Job without the paddle plugin.
func decode(ar admissionv1.AdmissionReview) (*decoded, error) {
	job, err := vcschema.DecodeJob(ar.Request.Object, ar.Request.Resource)
	if err != nil {
		return nil, err
	}
	if job.Namespace == "" {
		job.Namespace = ar.Request.Namespace
	}
	s, uses := paddlejob.Read(job)
	if !uses {
		if errs := borrowedPaddleLabels(job); len(errs) > 0 {
			return &decoded{job: job, errs: errs}, nil
		}
		return nil, nil
	}
	return &decoded{job: job, args: s.Args, errs: s.Errs}, nil
}

// borrowedPaddleLabels refuses the job plugin's pod labels in the task
// templates of a job that does not use the plugin. The scheduler plugin
// takes a pod's mode and role labels as the job plugin's word (it orders
// such a gang as a Paddle job and lets its starvation guard reserve nodes
// for it), and the pod rule (pkg/webhooks/paddlepods) admits whatever the
// job controller creates from a template: so the template is where a plain
// job borrowing them is stopped. The labels of an elastic job's etcd store
// (paddlejob.BorrowedStoreLabels) are refused too: a pod carrying them
// would be selected as that store by its NetworkPolicy and taken for it by
// the paddleelastic controller. Paddle jobs get the same refusal from
// paddlejob.ValidateJob.
func borrowedPaddleLabels(job *batch.Job) field.ErrorList {
	var errs field.ErrorList
	for i := range job.Spec.Tasks {
		labels := job.Spec.Tasks[i].Template.Labels
		for _, key := range []string{paddleapi.ModeLabel, paddleapi.RoleLabel, paddleapi.IndexLabel} {
			if _, ok := labels[key]; ok {
				errs = append(errs, field.Forbidden(field.NewPath("spec", "tasks").Index(i).Child("template", "metadata", "labels").Key(key),
					fmt.Sprintf("the paddle job plugin sets this label on the pods of jobs it manages, and the paddle scheduler plugin trusts it; remove it, or add the plugin to the job (spec.plugins: {%s: []})", paddlejob.PluginName)))
			}
		}
	}
	return append(errs, paddlejob.BorrowedStoreLabels(job)...)
}

// Admit allows every Job without the paddle plugin, every update that
// leaves the spec alone, and Paddle jobs that pass ValidateJob and
// ValidateUpdate; it denies the others as Invalid with one cause per field.
func Admit(ctx context.Context, ar admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
	d, err := decode(ar)
	if err != nil {
		return util.ToAdmissionResponse(err)
	}
	if d == nil {
		return allowed()
	}
	var old *batch.Job
	if ar.Request.Operation == admissionv1.Update {
		if old, err = vcschema.DecodeJob(ar.Request.OldObject, ar.Request.Resource); err != nil {
			return util.ToAdmissionResponse(err)
		}
		if old.Namespace == "" {
			old.Namespace = ar.Request.Namespace
		}
		if paddlejob.SpecUnchanged(old, d.job) {
			return allowed() // labels, finalizers, deletion: never refused
		}
	}
	if len(d.errs) > 0 {
		return deny(d.job, d.errs)
	}
	if err := ctx.Err(); err != nil {
		return budgetExceeded(jobRef(d.job), err)
	}
	layout, errs := paddlejob.ValidateJobContext(ctx, d.job, d.args)
	if err := ctx.Err(); err != nil {
		return budgetExceeded(jobRef(d.job), err)
	}
	if len(errs) == 0 && old != nil {
		if err := ctx.Err(); err != nil {
			return budgetExceeded(jobRef(d.job), err)
		}
		errs = paddlejob.ValidateUpdate(old, d.job, d.args)
	}
	if len(errs) > 0 {
		return deny(d.job, errs)
	}
	resp := allowed()
	resp.Warnings = paddlejob.Warnings(d.job, layout)
	return resp
}

// Mutate applies paddle.Defaults to a valid Paddle job at creation, with a
// warning for each field it sets (kubectl prints the warnings of mutating
// admissions too). It never denies: what is wrong is the validating
// admission's to say.
func Mutate(ctx context.Context, ar admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
	if ar.Request.Operation != admissionv1.Create {
		return allowed()
	}
	d, err := decode(ar)
	if err != nil || d == nil || len(d.errs) > 0 || ctx.Err() != nil {
		return allowed()
	}
	layout, errs := paddlejob.ValidateJobContext(ctx, d.job, d.args)
	if len(errs) > 0 {
		return allowed()
	}
	defaults := paddlejob.Defaults(d.job, d.args, layout)
	if len(defaults) == 0 {
		return allowed()
	}
	ops := make([]paddlejob.PatchOperation, len(defaults))
	var warnings []string
	for i, df := range defaults {
		ops[i] = df.Patch
		if df.Warning != "" {
			warnings = append(warnings, df.Warning)
		}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return util.ToAdmissionResponse(err)
	}
	klog.V(3).InfoS("Defaulted Paddle job", "job", klog.KObj(d.job), "patch", string(patch))
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: &pt, Warnings: warnings}
}

// precheck runs the checks linear in the size of the request
// (paddle.CheckLimits) before the request waits for a slot, so that an
// oversized or malformed job is refused at once and never holds one. It
// returns nil when the full admission should run. The mutating admission
// never denies: a job precheck refuses is allowed unchanged there, and
// the validating admission refuses it.
func precheck(ar admissionv1.AdmissionReview, mutating bool) *admissionv1.AdmissionResponse {
	if mutating && ar.Request.Operation != admissionv1.Create {
		return allowed()
	}
	d, err := decode(ar)
	switch {
	case err != nil && mutating, d == nil && err == nil:
		return allowed()
	case err != nil:
		return util.ToAdmissionResponse(err)
	case len(d.errs) > 0 && mutating:
		return allowed()
	case len(d.errs) > 0 && ar.Request.Operation == admissionv1.Create:
		return deny(d.job, d.errs)
	}
	errs := paddlejob.CheckLimits(d.job, d.args)
	switch {
	case len(errs) == 0:
		return nil
	case mutating:
		return allowed()
	case ar.Request.Operation == admissionv1.Update:
		return nil // Admit decides: an update that leaves the spec alone is never refused
	}
	return deny(d.job, errs)
}

func allowed() *admissionv1.AdmissionResponse { return &admissionv1.AdmissionResponse{Allowed: true} }

// deny answers Invalid with one cause per field, like Kubernetes' own
// validation (apierrors.NewInvalid), and a message that names the job.
func deny(job *batch.Job, errs field.ErrorList) *admissionv1.AdmissionResponse {
	st := apierrors.NewInvalid(jobGroupKind, job.Name, errs).ErrStatus
	st.Message = paddlejob.NewInvalidJobError(job, errs).Error()
	klog.V(3).InfoS("Denied Paddle job", "job", klog.KObj(job), "reason", st.Message)
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &st}
}

// budgetExceeded denies what did not finish within its budget; with the
// bounds of paddle.validateLimits an honest job never gets here.
func budgetExceeded(what string, err error) *admissionv1.AdmissionResponse {
	klog.InfoS("Paddle admission ran out of its budget", "request", what, "err", err)
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Reason: metav1.StatusReasonTimeout, Code: 504,
		Message: fmt.Sprintf("paddle admission of %s did not finish within its time budget (%v); retry, and if it persists make the job smaller", what, err),
	}}
}

func jobRef(job *batch.Job) string { return "job " + job.Namespace + "/" + job.Name }
