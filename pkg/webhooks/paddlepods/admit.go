// Package paddlepods is the admission rule that keeps users from creating
// or changing pods that claim a Paddle job.
//
// Volcano's job controller decides what a job does from what its pods say
// about themselves: addPod and updatePod (volcano.sh/volcano
// pkg/controllers/job/job_controller_handler.go) take the job from the
// pod's controller ownerReference and its volcano.sh/job-name annotation,
// the incarnation from volcano.sh/job-version and the task from
// volcano.sh/task-spec; a pod that fails, or that Volcano deletes, then
// drives the job's policies (PodFailed, PodEvicted -> RestartJob). The
// headless Service of a Paddle job selects pods by the job's labels. None
// of that is a secret (an ownerReference UID can be read by anyone who can
// read the job), and a pod object does not record who created it: only
// admission sees the requesting user. So a pod that claims a Paddle job is
// admitted only from the Volcano job controller's identity.
//
// The API server calls this rule only for pods that carry a Volcano job
// label or annotation, a paddle.volcano.sh/ key or a controller reference
// to a Volcano Job, and never for requests of the job controller itself
// (matchConditions in deploy/paddle/admission-paddle.yaml); the rule
// checks the user again here, so a configuration without those conditions
// is still safe.
package paddlepods

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"
	admissionv1 "k8s.io/api/admission/v1"
	whv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/volcano/pkg/webhooks/router"
	vcschema "volcano.sh/volcano/pkg/webhooks/schema"
)

// Path is the admission's path on vc-webhook-manager-paddle (add it to
// --enabled-admission).
const Path = "/pods/paddle/validate"

// DefaultJobControllerUser is the identity Volcano's release manifest and
// Helm chart run vc-controller-manager as (ServiceAccount
// volcano-controllers in volcano-system).
const DefaultJobControllerUser = "system:serviceaccount:volcano-system:volcano-controllers"

// paddleKeyPrefix: the job plugin's own pod labels (pkg/paddleapi:
// RoleLabel, IndexLabel, ModeLabel) and any other key of ours.
const paddleKeyPrefix = "paddle.volcano.sh/"

// pluginName is the job plugin's key in Job.Spec.Plugins. It is not
// imported from the job plugin so that the webhook manager's pod rule does
// not depend on the plugin's code.
const pluginName = "paddle"

// maxRequestBytes bounds an AdmissionReview body: an update carries two
// pods, each at most the API server's 3 MiB object limit.
const maxRequestBytes = 8 << 20

// lookupTimeout bounds the one read of the claimed Job.
const lookupTimeout = 5 * time.Second

var jobControllerUsers = pflag.StringSlice("paddle-job-controller-users", []string{DefaultJobControllerUser},
	"User names allowed to create and change pods that claim a Paddle job (the Volcano job controller's identity); "+
		"keep the matchConditions of deploy/paddle/admission-paddle.yaml in step")

var jobGroup = batch.SchemeGroupVersion.Group

// claimKeys are the label and annotation keys through which a pod names a
// Volcano job, its incarnation and its place in it.
var claimKeys = []string{batch.JobNameKey, batch.JobNamespaceKey, batch.JobVersion, batch.TaskSpecKey, batch.TaskIndex}

// Rule decides on pod admissions.
type Rule struct {
	// Users may create and change pods that claim a Paddle job.
	Users map[string]bool
	// Job reads a Volcano Job; nil result and a NotFound error when it
	// does not exist.
	Job func(ctx context.Context, namespace, name string) (*batch.Job, error)
}

// claim is what a pod says about the Volcano job it belongs to.
type claim struct {
	jobs   []string // job names from labels, annotations and owner references
	paddle []string // paddle.volcano.sh/ keys
	// parts are the claim fields, one string each; fingerprint joins
	// them, to tell an update that changes the claim from one that does
	// not.
	parts       []string
	fingerprint string
}

func (c claim) empty() bool { return c.fingerprint == "" }

func claimOf(pod *v1.Pod) claim {
	var c claim
	var parts []string
	names := map[string]bool{}
	for kind, m := range map[string]map[string]string{"label": pod.Labels, "annotation": pod.Annotations} {
		for _, k := range claimKeys {
			if v, ok := m[k]; ok {
				parts = append(parts, kind+" "+k+"="+v)
				if k == batch.JobNameKey {
					names[v] = true
				}
			}
		}
		for k, v := range m {
			if strings.HasPrefix(k, paddleKeyPrefix) {
				parts = append(parts, kind+" "+k+"="+v)
				c.paddle = append(c.paddle, kind+" "+k)
			}
		}
	}
	for _, ref := range pod.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != jobGroup || ref.Kind != "Job" {
			continue
		}
		parts = append(parts, fmt.Sprintf("owner %s %s %s %v", ref.APIVersion, ref.Name, ref.UID, ref.Controller != nil && *ref.Controller))
		names[ref.Name] = true
	}
	for n := range names {
		c.jobs = append(c.jobs, n)
	}
	sort.Strings(c.jobs)
	sort.Strings(c.paddle)
	sort.Strings(parts)
	c.parts = parts
	c.fingerprint = strings.Join(parts, "\n")
	return c
}

// Admit refuses a pod CREATE or UPDATE that claims a Paddle job unless it
// comes from the job controller. An UPDATE that leaves every claim field
// as it was (status-like changes, other labels, finalizers) is allowed.
func (r *Rule) Admit(ctx context.Context, ar admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
	req := ar.Request
	if req == nil {
		return deny("no request in the AdmissionReview", metav1.StatusReasonBadRequest)
	}
	if req.Kind.Kind != "Pod" || req.SubResource != "" {
		return allow()
	}
	if r.Users[req.UserInfo.Username] || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return allow()
	}
	var pod, old v1.Pod
	if err := decode(req.Object.Raw, &pod); err != nil {
		return deny(fmt.Sprintf("decoding the pod: %v", err), metav1.StatusReasonBadRequest)
	}
	jobs := r.jobsOnce(req.Namespace)
	now := claimOf(&pod)
	was := claim{}
	if req.Operation == admissionv1.Update {
		if err := decode(req.OldObject.Raw, &old); err != nil {
			return deny(fmt.Sprintf("decoding the old pod: %v", err), metav1.StatusReasonBadRequest)
		}
		was = claimOf(&old)
		if was.fingerprint == now.fingerprint {
			return allow()
		}
		if removesOnly(was, now) && jobsGone(ctx, jobs, was) {
			// The garbage collector orphaning the pods of a Job deleted
			// with --cascade=orphan: that job can no longer be moved.
			return allow()
		}
	}
	for _, c := range []claim{now, was} {
		if why := claimsPaddleJob(ctx, jobs, c); why != "" {
			klog.InfoS("Refused a pod that claims a Paddle job", "pod", klog.KRef(req.Namespace, podName(&pod, req)),
				"user", req.UserInfo.Username, "operation", req.Operation, "reason", why)
			return deny(fmt.Sprintf("pod %s/%s %s; only the Volcano job controller (%s) may create pods of a Paddle job or change how a pod names its job: create a Volcano Job instead",
				req.Namespace, podName(&pod, req), why, strings.Join(sortedUsers(r.Users), ", ")), metav1.StatusReasonForbidden)
		}
	}
	return allow()
}

// claimsPaddleJob says how a claim names a Paddle job, or "" when it does
// not. A job name that does not exist counts: a Paddle job created later
// under that name would select the pod (its Service selects by label).
func claimsPaddleJob(ctx context.Context, jobs jobLookup, c claim) string {
	if c.empty() {
		return ""
	}
	if len(c.paddle) > 0 {
		return "carries the Paddle job plugin's " + strings.Join(c.paddle, ", ")
	}
	for r := range c.readJobs(ctx, jobs) {
		switch {
		case apierrors.IsNotFound(r.err):
			return fmt.Sprintf("names Volcano job %q, which does not exist (a Paddle job created under that name would take the pod in)", r.name)
		case r.err != nil:
			// Fail closed: the rule cannot tell, and the API server
			// retries nothing; the user can.
			return fmt.Sprintf("names Volcano job %q, which could not be read (%v); try again", r.name, r.err)
		}
		if _, ok := r.job.Spec.Plugins[pluginName]; ok {
			return fmt.Sprintf("names Paddle job %q", r.name)
		}
	}
	return ""
}

// jobRead is one job a claim names, as read.
type jobRead struct {
	name string
	job  *batch.Job
	err  error
}

// readJobs reads the jobs c names, in order, one as the caller's range
// asks for it, all within one lookupTimeout; a range that stops early reads
// no more.
func (c claim) readJobs(ctx context.Context, jobs jobLookup) iter.Seq[jobRead] {
	return func(yield func(jobRead) bool) {
		ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		defer cancel()
		for _, name := range c.jobs {
			job, err := jobs(ctx, name)
			if !yield(jobRead{name: name, job: job, err: err}) {
				return
			}
		}
	}
}

// jobLookup reads a Volcano Job of the request's namespace.
type jobLookup func(ctx context.Context, name string) (*batch.Job, error)

// jobsOnce reads each job at most once per request: an update's old and
// new claims often name the same job, and each read is an API call.
func (r *Rule) jobsOnce(ns string) jobLookup {
	type result struct {
		job *batch.Job
		err error
	}
	seen := map[string]result{}
	return func(ctx context.Context, name string) (*batch.Job, error) {
		if res, ok := seen[name]; ok {
			return res.job, res.err
		}
		job, err := r.Job(ctx, ns, name)
		seen[name] = result{job, err}
		return job, err
	}
}

// removesOnly reports whether now keeps a subset of was's claim fields.
func removesOnly(was, now claim) bool {
	have := make(map[string]bool, len(was.parts))
	for _, p := range was.parts {
		have[p] = true
	}
	for _, p := range now.parts {
		if !have[p] {
			return false
		}
	}
	return true
}

// jobsGone reports whether every job a claim names is gone or being
// deleted.
func jobsGone(ctx context.Context, jobs jobLookup, c claim) bool {
	for r := range c.readJobs(ctx, jobs) {
		switch {
		case apierrors.IsNotFound(r.err):
		case r.err != nil || r.job.DeletionTimestamp == nil:
			return false
		}
	}
	return true
}

func podName(pod *v1.Pod, req *admissionv1.AdmissionRequest) string {
	if req.Name != "" {
		return req.Name
	}
	if pod.Name != "" {
		return pod.Name
	}
	return pod.GenerateName + "*"
}

func sortedUsers(users map[string]bool) []string {
	out := make([]string, 0, len(users))
	for u := range users {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

func decode(raw []byte, pod *v1.Pod) error {
	if len(raw) == 0 {
		return fmt.Errorf("empty object")
	}
	_, _, err := vcschema.Codecs.UniversalDeserializer().Decode(raw, nil, pod)
	return err
}

func allow() *admissionv1.AdmissionResponse { return &admissionv1.AdmissionResponse{Allowed: true} }

func deny(msg string, reason metav1.StatusReason) *admissionv1.AdmissionResponse {
	code := int32(http.StatusForbidden)
	if reason == metav1.StatusReasonBadRequest {
		code = http.StatusBadRequest
	}
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Status: metav1.StatusFailure, Message: msg, Reason: reason, Code: code}}
}

// service is registered with Volcano's webhook router; the webhook manager
// fills in its Config (clients) before it serves.
var service = &router.AdmissionService{
	Path:   Path,
	Config: &router.AdmissionServiceConfig{},
	ValidatingConfig: &whv1.ValidatingWebhookConfiguration{
		Webhooks: []whv1.ValidatingWebhook{{Name: "validatepaddlepod.volcano.sh"}},
	},
}

func init() {
	service.Func = func(ar admissionv1.AdmissionReview) *admissionv1.AdmissionResponse {
		return ruleFromFlags().Admit(context.Background(), ar)
	}
	if err := router.RegisterAdmission(service); err != nil {
		panic(err)
	}
	// Volcano's router.Serve reads the whole body; a pod review is small,
	// so a larger one is refused before it is read.
	serve := service.Handler
	service.Handler = func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
		serve(w, r)
	}
}

func ruleFromFlags() *Rule {
	users := map[string]bool{}
	for _, u := range *jobControllerUsers {
		if u = strings.TrimSpace(u); u != "" {
			users[u] = true
		}
	}
	return &Rule{
		Users: users,
		Job: func(ctx context.Context, ns, name string) (*batch.Job, error) {
			return service.Config.VolcanoClient.BatchV1alpha1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		},
	}
}
