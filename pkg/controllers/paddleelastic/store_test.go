package paddleelastic

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// etcdPodOf is the job's etcd pod as paddlejob builds it, with a status.
func etcdPodOf(t *testing.T, job *batch.Job, uid, ip string, ready bool) *v1.Pod {
	t.Helper()
	s, _ := paddlejob.Read(job)
	l, err := s.Validate(job)
	if err != nil {
		t.Fatal(err)
	}
	pod := paddlejob.EtcdPod(job, l)
	pod.UID = types.UID(uid)
	pod.Spec.NodeName = "node-1"
	cond := v1.ConditionFalse
	if ready {
		cond = v1.ConditionTrue
	}
	pod.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: ip, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: cond}}}
	return pod
}

// waitLister waits until the controller's pod lister sees pod as it is
// (or sees it gone, for a nil pod).
func (f *fixture) waitLister(t *testing.T, ns, name string, want *v1.Pod) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		p, err := f.c.pods.Pods(ns).Get(name)
		if want == nil {
			return apierrors.IsNotFound(err), nil
		}
		return err == nil && p.UID == want.UID && equality.Semantic.DeepEqual(p.Status, want.Status), nil
	})
	if err != nil {
		t.Fatalf("pod lister never saw %s/%s as wanted", ns, name)
	}
}

func (f *fixture) slice(t *testing.T, name string) *discoveryv1.EndpointSlice {
	t.Helper()
	s, err := f.kube.DiscoveryV1().EndpointSlices("ml").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("etcd EndpointSlice: %v", err)
	}
	return s
}

// The store's address follows its pod: no endpoint before it has an IP,
// its IP not ready until etcd answers, ready after, the new IP after the
// pod is re-created, no endpoint while it is gone.
func TestEtcdAddressFollowsThePod(t *testing.T) {
	job := elasticJob("")
	f := newFixture(t, job)
	ctx := context.Background()
	name := paddlejob.EtcdName("el")
	pods := f.kube.CoreV1().Pods("ml")
	type want struct {
		ip    string // "" = no endpoint
		ready bool
	}
	steps := []struct {
		name string
		pod  *v1.Pod // nil: deleted
		want want
	}{
		{"created, no IP yet", etcdPodOf(t, job, "etcd-1", "", false), want{}},
		{"IP, etcd not answering", etcdPodOf(t, job, "etcd-1", "10.0.0.7", false), want{"10.0.0.7", false}},
		{"ready", etcdPodOf(t, job, "etcd-1", "10.0.0.7", true), want{"10.0.0.7", true}},
		{"gone", nil, want{}},
		{"re-created elsewhere, not ready", etcdPodOf(t, job, "etcd-2", "10.0.3.9", false), want{"10.0.3.9", false}},
		{"re-created elsewhere, ready", etcdPodOf(t, job, "etcd-2", "10.0.3.9", true), want{"10.0.3.9", true}},
		{"IPv6", etcdPodOf(t, job, "etcd-2", "fd00::7", true), want{"fd00::7", true}},
	}
	var last *v1.Pod
	for _, st := range steps {
		switch {
		case st.pod == nil:
			if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		case last == nil || last.UID != st.pod.UID:
			if _, err := pods.Create(ctx, st.pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		default:
			if _, err := pods.UpdateStatus(ctx, st.pod, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		f.waitLister(t, "ml", name, st.pod)
		obs := st.pod
		if obs == nil {
			obs = last
		}
		f.c.observe(obs, st.pod == nil)
		for f.c.queue.Len() > 0 {
			w, _ := f.c.queue.Get()
			if w.kind == etcdAddress { // etcdGone would re-create the pod: TestEtcdRecreated
				if err := f.c.syncEtcdAddress(ctx, w); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
			}
			f.c.queue.Done(w)
		}
		s := f.slice(t, name)
		if !metav1.IsControlledBy(s, job) || s.Labels[discoveryv1.LabelServiceName] != name || s.Labels[discoveryv1.LabelManagedBy] != paddlejob.EtcdEndpointSliceManager {
			t.Errorf("%s: slice meta %+v", st.name, s.ObjectMeta)
		}
		if len(s.Ports) != 1 || *s.Ports[0].Port != paddlejob.EtcdClientPort || *s.Ports[0].Name != "etcd-client" {
			t.Errorf("%s: ports %+v", st.name, s.Ports)
		}
		if st.want.ip == "" {
			if len(s.Endpoints) != 0 {
				t.Errorf("%s: endpoints %+v, want none", st.name, s.Endpoints)
			}
		} else if len(s.Endpoints) != 1 || s.Endpoints[0].Addresses[0] != st.want.ip || s.Endpoints[0].Conditions.Ready == nil ||
			*s.Endpoints[0].Conditions.Ready != st.want.ready || s.Endpoints[0].TargetRef == nil || s.Endpoints[0].TargetRef.UID != st.pod.UID {
			t.Errorf("%s: endpoints %+v, want %s ready=%v", st.name, s.Endpoints, st.want.ip, st.want.ready)
		}
		if st.want.ip == "fd00::7" && s.AddressType != discoveryv1.AddressTypeIPv6 {
			t.Errorf("%s: address type %s", st.name, s.AddressType)
		}
		if st.pod != nil {
			last = st.pod
		}
	}
}

// In the controller's repair path too, an object someone else made under
// the store's name is left alone and reported (PaddleEtcdConflict), and a
// pod under the store's name that is not the job's is neither deleted nor
// published.
func TestEtcdRepairConflicts(t *testing.T) {
	name := paddlejob.EtcdName("el")
	meta := metav1.ObjectMeta{Namespace: "ml", Name: name}
	failed := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: "impostor",
		Labels: map[string]string{paddleapi.ElasticLabel: paddleapi.ElasticEtcd}},
		Status: v1.PodStatus{Phase: v1.PodFailed, PodIP: "10.9.9.9"}}
	running := failed.DeepCopy()
	running.Status = v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.9.9.9", Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
	cases := []struct {
		name string
		obj  runtime.Object
		kind string
	}{
		{"foreign Service", &v1.Service{ObjectMeta: meta, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.9"}}, "Service"},
		{"foreign NetworkPolicy", &networkingv1.NetworkPolicy{ObjectMeta: meta}, "NetworkPolicy"},
		{"foreign EndpointSlice under the store's name", &discoveryv1.EndpointSlice{ObjectMeta: meta, AddressType: discoveryv1.AddressTypeIPv4}, "EndpointSlice"},
		{"foreign EndpointSlice claiming the store's Service", &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "x",
			Labels: map[string]string{discoveryv1.LabelServiceName: name}}, AddressType: discoveryv1.AddressTypeIPv4}, "EndpointSlice"},
		{"foreign failed pod", failed, "Pod"},
		{"foreign running pod", running, "Pod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			job := elasticJob("")
			var pods []*v1.Pod
			if p, ok := tc.obj.(*v1.Pod); ok {
				pods = append(pods, p)
			}
			f := newFixture(t, job, pods...)
			if len(pods) == 0 {
				if err := f.kube.Tracker().Add(tc.obj); err != nil {
					t.Fatal(err)
				}
			}
			before := tc.obj.DeepCopyObject()
			var pod *v1.Pod
			if len(pods) > 0 {
				pod = pods[0]
				f.waitLister(t, "ml", name, pod)
				f.c.observe(pod, false)
				f.drain(t)
			} else {
				// The etcd pod is gone while the job runs.
				f.c.observe(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, UID: "etcd-1",
					Labels: map[string]string{paddleapi.ElasticLabel: paddleapi.ElasticEtcd}}}, true)
				f.drain(t)
				f.c.resyncEtcd()
			}
			m := tc.obj.(metav1.Object)
			got, err := f.get(t, tc.obj)
			if err != nil {
				t.Fatalf("the foreign %s is gone: %v", tc.kind, err)
			}
			got.(metav1.Object).SetResourceVersion("")
			before.(metav1.Object).SetResourceVersion("")
			if !equality.Semantic.DeepEqual(got, before) {
				t.Errorf("the foreign %s was changed:\n%+v\nwas\n%+v", tc.kind, got, before)
			}
			if tc.kind != "Pod" {
				if _, err := f.kube.CoreV1().Pods("ml").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("etcd pod re-created over a foreign %s: %v", tc.kind, err)
				}
			}
			if s, err := f.kube.DiscoveryV1().EndpointSlices("ml").Get(ctx, name, metav1.GetOptions{}); err == nil && metav1.IsControlledBy(s, job) && len(s.Endpoints) > 0 {
				t.Errorf("the store publishes %+v", s.Endpoints)
			}
			var events []string
			found := false
			for len(f.rec.Events) > 0 {
				e := <-f.rec.Events
				events = append(events, e)
				found = found || (strings.HasPrefix(e, v1.EventTypeWarning+" "+paddlejob.StoreConflictReason) &&
					strings.Contains(e, tc.kind+" ml/"+m.GetName()) && (strings.Contains(e, "delete or rename the "+tc.kind) || strings.Contains(e, "delete the EndpointSlice or remove that label")))
			}
			if !found {
				t.Errorf("no %s Warning event naming %s ml/%s and the fix; events %q", paddlejob.StoreConflictReason, tc.kind, m.GetName(), events)
			}
		})
	}
}

// get reads obj's current version through the clientset.
func (f *fixture) get(t *testing.T, obj runtime.Object) (runtime.Object, error) {
	t.Helper()
	ctx := context.Background()
	m := obj.(metav1.Object)
	switch obj.(type) {
	case *v1.Service:
		return f.kube.CoreV1().Services(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	case *v1.Pod:
		return f.kube.CoreV1().Pods(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	case *networkingv1.NetworkPolicy:
		return f.kube.NetworkingV1().NetworkPolicies(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	case *discoveryv1.EndpointSlice:
		return f.kube.DiscoveryV1().EndpointSlices(m.GetNamespace()).Get(ctx, m.GetName(), metav1.GetOptions{})
	}
	t.Fatalf("no getter for %T", obj)
	return nil, nil
}

// A restarting or finished job's store was removed by OnJobDelete, with its
// EndpointSlice: the etcd pod's last events (terminating, gone) do not
// bring the slice back.
func TestEtcdAddressNotWrittenAfterTheStore(t *testing.T) {
	for _, phase := range []batch.JobPhase{batch.Restarting, batch.Completed, batch.Failed} {
		t.Run(string(phase), func(t *testing.T) {
			job := elasticJob("")
			job.Status.State.Phase = phase
			pod := etcdPodOf(t, job, "etcd-1", "10.0.0.7", true)
			now := metav1.Now()
			pod.DeletionTimestamp = &now
			pod.Finalizers = []string{"test/hold"}
			f := newFixture(t, job, pod)
			f.waitLister(t, "ml", pod.Name, pod)
			f.c.observe(pod, false)
			f.drain(t)
			if _, err := f.kube.DiscoveryV1().EndpointSlices("ml").Get(context.Background(), pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("EndpointSlice written for a %s job: %v", phase, err)
			}
		})
	}
}
