package paddlejob

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// The store's address is the etcd pod's IP, ready exactly while the pod
// is Ready and not terminating; the ready condition is always set (CoreDNS
// takes an unset one as ready).
func TestEtcdEndpointSlice(t *testing.T) {
	job := elasticJob("el", 2, 3, 4)
	pod := func(phase v1.PodPhase, ip string, ready, deleting bool) *v1.Pod {
		st := v1.ConditionFalse
		if ready {
			st = v1.ConditionTrue
		}
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: EtcdName("el"), UID: "u1"},
			Status: v1.PodStatus{Phase: phase, PodIP: ip, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: st}}}}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		ip        string // "" = no endpoint
		ready     bool
		addrType  discoveryv1.AddressType
		terminate bool
	}{
		{"no pod", nil, "", false, discoveryv1.AddressTypeIPv4, false},
		{"no IP yet", pod(v1.PodPending, "", false, false), "", false, discoveryv1.AddressTypeIPv4, false},
		{"not ready", pod(v1.PodRunning, "10.0.0.7", false, false), "10.0.0.7", false, discoveryv1.AddressTypeIPv4, false},
		{"ready", pod(v1.PodRunning, "10.0.0.7", true, false), "10.0.0.7", true, discoveryv1.AddressTypeIPv4, false},
		{"ready but terminating", pod(v1.PodRunning, "10.0.0.7", true, true), "10.0.0.7", false, discoveryv1.AddressTypeIPv4, true},
		{"failed", pod(v1.PodFailed, "10.0.0.7", true, false), "10.0.0.7", false, discoveryv1.AddressTypeIPv4, false},
		{"IPv6", pod(v1.PodRunning, "fd00::7", true, false), "fd00::7", true, discoveryv1.AddressTypeIPv6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := EtcdEndpointSlice(job, tc.pod)
			if s.Name != EtcdName("el") || s.Labels[discoveryv1.LabelServiceName] != EtcdName("el") || s.Labels[discoveryv1.LabelManagedBy] != EtcdEndpointSliceManager ||
				!metav1.IsControlledBy(s, job) || s.AddressType != tc.addrType {
				t.Errorf("slice %+v", s)
			}
			svc := EtcdService(job)
			if len(svc.Spec.Selector) != 0 || len(s.Ports) != 1 || *s.Ports[0].Name != svc.Spec.Ports[0].Name || *s.Ports[0].Port != svc.Spec.Ports[0].Port {
				t.Errorf("Service %+v and slice ports %+v disagree, or the Service has a selector", svc.Spec, s.Ports)
			}
			if tc.ip == "" {
				if len(s.Endpoints) != 0 {
					t.Errorf("endpoints %+v, want none", s.Endpoints)
				}
				return
			}
			if len(s.Endpoints) != 1 {
				t.Fatalf("endpoints %+v", s.Endpoints)
			}
			e := s.Endpoints[0]
			if e.Addresses[0] != tc.ip || e.Conditions.Ready == nil || *e.Conditions.Ready != tc.ready ||
				e.Conditions.Terminating == nil || *e.Conditions.Terminating != tc.terminate || e.TargetRef == nil || e.TargetRef.UID != "u1" {
				t.Errorf("endpoint %+v, want %s ready=%v terminating=%v", e, tc.ip, tc.ready, tc.terminate)
			}
		})
	}
}

// The store pod's labels are refused in any task template, and the
// NetworkPolicy selects the store by exactly those labels.
func TestBorrowedStoreLabels(t *testing.T) {
	job := elasticJob("el", 2, 3, 4)
	if errs := BorrowedStoreLabels(job); len(errs) != 0 {
		t.Fatalf("a clean job refused: %v", errs)
	}
	for k, v := range etcdLabels(job) {
		j := job.DeepCopy()
		j.Spec.Tasks[0].Template.Labels = map[string]string{k: v}
		errs := BorrowedStoreLabels(j)
		if len(errs) != 1 || errs[0].Field != "spec.tasks[0].template.metadata.labels["+k+"]" {
			t.Errorf("label %s: %v", k, errs)
		}
		if _, errs := ValidateJob(j, mustArgs(t, j)); len(errs) == 0 {
			t.Errorf("label %s: ValidateJob accepted the job", k)
		}
	}
	l, errs := ValidateJob(job, mustArgs(t, job))
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	sel, _ := metav1.LabelSelectorAsMap(&EtcdNetworkPolicy(job, l).Spec.PodSelector)
	for k := range sel {
		found := false
		for _, key := range storeLabelKeys {
			found = found || key == k
		}
		if !found {
			t.Errorf("the NetworkPolicy selects the store by %s, which templates may carry", k)
		}
	}
}

func mustArgs(t *testing.T, job *batch.Job) *Args {
	t.Helper()
	s, _ := Read(job)
	if len(s.Errs) > 0 {
		t.Fatal(s.Errs)
	}
	return s.Args
}
