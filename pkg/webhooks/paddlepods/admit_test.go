package paddlepods

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

const ns = "ml"

func testRule() *Rule {
	jobs := map[string]*batch.Job{
		"gone":  {ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone", UID: "uid-gone", DeletionTimestamp: &metav1.Time{}}, Spec: batch.JobSpec{Plugins: map[string][]string{"paddle": nil}}},
		"wd":    {ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wd", UID: "uid-wd"}, Spec: batch.JobSpec{Plugins: map[string][]string{"paddle": nil, "svc": nil}}},
		"plain": {ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain", UID: "uid-plain"}, Spec: batch.JobSpec{Plugins: map[string][]string{"svc": nil}}},
	}
	return &Rule{
		Users: map[string]bool{DefaultJobControllerUser: true},
		Job: func(_ context.Context, namespace, name string) (*batch.Job, error) {
			if name == "unreadable" {
				return nil, errors.New("connection refused")
			}
			if j, ok := jobs[name]; ok && namespace == ns {
				return j, nil
			}
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "batch.volcano.sh", Resource: "jobs"}, name)
		},
	}
}

func pod(mod func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "p", Labels: map[string]string{"app": "x"}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}
	if mod != nil {
		mod(p)
	}
	return p
}

func ownedBy(job string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: job, UID: "uid-" + "wd", Controller: &yes}}
	}
}

func labelled(k, v string) func(*v1.Pod) { return func(p *v1.Pod) { p.Labels[k] = v } }

func annotated(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func all(mods ...func(*v1.Pod)) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for _, m := range mods {
			m(p)
		}
	}
}

// forged is what Volcano's controller writes on a pod of job wd: the
// forgery of issue 28.
var forged = all(ownedBy("wd"), labelled(batch.JobNameKey, "wd"), labelled(batch.JobNamespaceKey, ns),
	annotated(batch.JobNameKey, "wd"), annotated(batch.JobVersion, "99"), annotated(batch.TaskSpecKey, "worker"))

func review(op admissionv1.Operation, user string, obj, old *v1.Pod) admissionv1.AdmissionReview {
	raw := func(p *v1.Pod) runtime.RawExtension {
		if p == nil {
			return runtime.RawExtension{}
		}
		b, _ := json.Marshal(p)
		return runtime.RawExtension{Raw: b}
	}
	return admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{
		UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: ns, Operation: op,
		UserInfo: authenticationv1.UserInfo{Username: user}, Object: raw(obj), OldObject: raw(old),
	}}
}

func TestAdmit(t *testing.T) {
	const user = "mallory"
	tests := []struct {
		name    string
		review  admissionv1.AdmissionReview
		wantErr string // "" allowed
	}{
		{"a pod of no job", review(admissionv1.Create, user, pod(nil), nil), ""},
		{"the forged pod of issue 28", review(admissionv1.Create, user, pod(forged), nil), `names Paddle job "wd"`},
		{"the same pod from the job controller", review(admissionv1.Create, DefaultJobControllerUser, pod(forged), nil), ""},
		{"annotations and owner only, no label", review(admissionv1.Create, user, pod(all(ownedBy("wd"), annotated(batch.JobNameKey, "wd"), annotated(batch.JobVersion, "0"))), nil), `names Paddle job "wd"`},
		{"owner reference only", review(admissionv1.Create, user, pod(ownedBy("wd")), nil), `names Paddle job "wd"`},
		{"job label only (a second DNS record)", review(admissionv1.Create, user, pod(labelled(batch.JobNameKey, "wd")), nil), `names Paddle job "wd"`},
		{"a paddle role label", review(admissionv1.Create, user, pod(labelled("paddle.volcano.sh/role", "trainer")), nil), "carries the Paddle job plugin's label paddle.volcano.sh/role"},
		{"a job that does not exist yet", review(admissionv1.Create, user, pod(labelled(batch.JobNameKey, "later")), nil), `names Volcano job "later", which does not exist`},
		{"a job that cannot be read", review(admissionv1.Create, user, pod(labelled(batch.JobNameKey, "unreadable")), nil), "could not be read"},
		{"a Volcano job without paddle", review(admissionv1.Create, user, pod(all(ownedBy("plain"), labelled(batch.JobNameKey, "plain"))), nil), ""},
		{"update that keeps the claim", review(admissionv1.Update, user, pod(all(forged, labelled("team", "a"))), pod(forged)), ""},
		{"update that raises the version", review(admissionv1.Update, user, pod(all(forged, annotated(batch.JobVersion, "100"))), pod(forged)), `names Paddle job "wd"`},
		{"update that adds the claim", review(admissionv1.Update, user, pod(labelled(batch.JobNameKey, "wd")), pod(nil)), `names Paddle job "wd"`},
		{"update that drops the claim", review(admissionv1.Update, user, pod(nil), pod(labelled(batch.JobNameKey, "wd"))), `names Paddle job "wd"`},
		{"orphaning the pods of a job being deleted", review(admissionv1.Update, "system:serviceaccount:kube-system:generic-garbage-collector", pod(labelled(batch.JobNameKey, "gone")), pod(all(ownedBy("gone"), labelled(batch.JobNameKey, "gone")))), ""},
		{"orphaning the pods of a live job", review(admissionv1.Update, user, pod(labelled(batch.JobNameKey, "wd")), pod(all(ownedBy("wd"), labelled(batch.JobNameKey, "wd")))), `names Paddle job "wd"`},
		{"moving a pod of a job being deleted to a live one", review(admissionv1.Update, user, pod(labelled(batch.JobNameKey, "wd")), pod(labelled(batch.JobNameKey, "gone"))), `names Paddle job "wd"`},
		{"update by the job controller", review(admissionv1.Update, DefaultJobControllerUser, pod(all(forged, annotated(batch.JobVersion, "100"))), pod(forged)), ""},
		{"delete", review(admissionv1.Delete, user, nil, pod(forged)), ""},
		{"an undecodable pod", admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{Kind: metav1.GroupVersionKind{Kind: "Pod"}, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte("{")}}}, "decoding the pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := testRule().Admit(context.Background(), tt.review)
			switch {
			case tt.wantErr == "" && !resp.Allowed:
				t.Fatalf("refused: %s", resp.Result.Message)
			case tt.wantErr != "" && resp.Allowed:
				t.Fatalf("allowed; want a refusal saying %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(resp.Result.Message, tt.wantErr):
				t.Fatalf("refusal %q does not say %q", resp.Result.Message, tt.wantErr)
			}
		})
	}
}

func TestRegistered(t *testing.T) {
	if service.Handler == nil || service.Func == nil || service.ValidatingConfig == nil || service.Config == nil {
		t.Fatalf("admission %s not fully registered: %+v", Path, service)
	}
	if got := ruleFromFlags().Users; !got[DefaultJobControllerUser] || len(got) != 1 {
		t.Fatalf("default users %v, want only %s", got, DefaultJobControllerUser)
	}
}
