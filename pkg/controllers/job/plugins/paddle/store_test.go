package paddle

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// Issue 37, isolation: an object someone else made under an elastic job's
// store name (or an EndpointSlice that claims the store's Service) is
// never used, adopted, changed or deleted; OnJobAdd fails (Volcano then
// creates no PodGroup and no pod, as for a foreign headless Service) and
// the job gets a PaddleEtcdConflict Warning event naming the object, its
// kind and the fix.
func TestStoreConflicts(t *testing.T) {
	name := paddlejob.EtcdName("el")
	meta := metav1.ObjectMeta{Namespace: "ml", Name: name}
	victimOwner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "squatter", UID: "uid-squatter", Controller: ptrTo(true)}}
	cases := []struct {
		name    string
		obj     runtime.Object
		kind    string
		objName string
	}{
		{"foreign Service pointing elsewhere", &v1.Service{ObjectMeta: meta, Spec: v1.ServiceSpec{ExternalName: "evil.example.com", Type: v1.ServiceTypeExternalName}}, "Service", name},
		{"foreign Service of another owner", &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, OwnerReferences: victimOwner}, Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone}}, "Service", name},
		{"foreign NetworkPolicy selecting nothing", &networkingv1.NetworkPolicy{ObjectMeta: meta, Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"nothing": "here"}}}}, "NetworkPolicy", name},
		{"foreign pod", &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, Labels: map[string]string{"app": "impostor"}}, Status: v1.PodStatus{PodIP: "10.9.9.9"}}, "Pod", name},
		{"foreign EndpointSlice under the store's name", &discoveryv1.EndpointSlice{ObjectMeta: meta, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.9.9.9"}}}}, "EndpointSlice", name},
		{"foreign EndpointSlice claiming the store's Service", &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "impostor-abcde",
			Labels: map[string]string{discoveryv1.LabelServiceName: name}}, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.9.9.9"}}}}, "EndpointSlice", "impostor-abcde"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			job := elasticJob("el", 2, 3, 4)
			client := fake.NewSimpleClientset(tc.obj)
			before := tc.obj.DeepCopyObject()
			_, err := runJob(t, client, job)
			if err == nil {
				t.Fatal("OnJobAdd accepted a store over a foreign object")
			}
			fix := "delete or rename the " + tc.kind
			if tc.objName != name {
				fix = "delete the EndpointSlice or remove that label"
			}
			for _, want := range []string{tc.kind + " ml/" + tc.objName, "not to elastic Paddle job ml/el", fix} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			// Not adopted, not changed.
			if got := getObject(t, client, tc.obj); !equalIgnoringRV(got, before) {
				t.Errorf("the foreign %s was changed:\n%+v\nwas\n%+v", tc.kind, got, before)
			}
			// Nothing runs: the names are checked before the etcd pod is
			// created.
			if tc.kind != "Pod" {
				if _, err := client.CoreV1().Pods("ml").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("etcd pod created over a foreign %s: %v", tc.kind, err)
				}
			}
			if e := waitEvent(t, client, paddlejob.StoreConflictReason, tc.kind+" ml/"+tc.objName); !strings.Contains(e.Message, fix) {
				t.Errorf("event %q does not say the fix", e.Message)
			}
			// Deleting the job leaves it alone.
			if err := plugin(t, client, job).OnJobDelete(job); err != nil {
				t.Fatal(err)
			}
			if got := getObject(t, client, tc.obj); got == nil {
				t.Errorf("OnJobDelete deleted the foreign %s", tc.kind)
			}
		})
	}
}

// The job's own store objects from an earlier version of the plugin are
// brought to this one: a Service with a selector is replaced by a
// selector-less one, the NetworkPolicy updated.
func TestStoreObjectsOfAnEarlierVersion(t *testing.T) {
	ctx := context.Background()
	job := elasticJob("el", 2, 3, 4)
	l, err := paddlejob.Spec{Args: mustArgs(t, job)}.Validate(job)
	if err != nil {
		t.Fatal(err)
	}
	old := paddlejob.EtcdService(job)
	old.Spec.Selector = map[string]string{paddlejob.EtcdOfLabel: "el"}
	np := paddlejob.EtcdNetworkPolicy(job, l)
	np.Spec.Ingress[0].From = np.Spec.Ingress[0].From[1:]
	client := fake.NewSimpleClientset(old, np)
	if _, err := runJob(t, client, job); err != nil {
		t.Fatal(err)
	}
	svc, err := client.CoreV1().Services("ml").Get(ctx, old.Name, metav1.GetOptions{})
	if err != nil || len(svc.Spec.Selector) != 0 {
		t.Errorf("etcd Service %v, %v: want it selector-less", svc, err)
	}
	got, err := client.NetworkingV1().NetworkPolicies("ml").Get(ctx, np.Name, metav1.GetOptions{})
	if err != nil || len(got.Spec.Ingress[0].From) != 2 {
		t.Errorf("etcd NetworkPolicy %v, %v: not updated", got, err)
	}
}

func ptrTo[T any](v T) *T { return &v }

func mustArgs(t *testing.T, job *batch.Job) *paddlejob.Args {
	t.Helper()
	s, _ := paddlejob.Read(job)
	if len(s.Errs) > 0 {
		t.Fatal(s.Errs)
	}
	return s.Args
}

func getObject(t *testing.T, client *fake.Clientset, obj runtime.Object) runtime.Object {
	t.Helper()
	ctx := context.Background()
	m := obj.(metav1.Object)
	var got runtime.Object
	var err error
	switch obj.(type) {
	case *v1.Service:
		got, err = client.CoreV1().Services(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	case *v1.Pod:
		got, err = client.CoreV1().Pods(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	case *networkingv1.NetworkPolicy:
		got, err = client.NetworkingV1().NetworkPolicies(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	case *discoveryv1.EndpointSlice:
		got, err = client.DiscoveryV1().EndpointSlices(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func equalIgnoringRV(a, b runtime.Object) bool {
	if a == nil || b == nil {
		return a == b
	}
	a, b = a.DeepCopyObject(), b.DeepCopyObject()
	a.(metav1.Object).SetResourceVersion("")
	b.(metav1.Object).SetResourceVersion("")
	return equality.Semantic.DeepEqual(a, b)
}
