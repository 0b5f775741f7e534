package paddle

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	"github.com/volcano-paddle/volcano-paddle/test/contract"
)

// FuzzJobPlugin drives the plugin with arbitrary arguments and job shapes.
// It must never panic; an accepted job must satisfy every Paddle rule, and
// a rejected one must leave nothing behind. Run longer with
//
//	go test ./pkg/controllers/job/plugins/paddle -run '^$' -fuzz FuzzJobPlugin -fuzztime 2m
func FuzzJobPlugin(f *testing.F) {
	f.Add("", "ps worker", []byte{2, 2, 0, 0})
	f.Add("--gloo=1", "ps worker", []byte{2, 2, 0, 0})
	f.Add("--mode=collective", "trainer", []byte{4, 8, 0, 0})
	f.Add("--port=30236 --ports-per-pod=2 --gloo=2", "pserver trainer", []byte{1, 3, 1, 0})
	f.Add("", "ps worker heter", []byte{1, 2, 1, 1})
	f.Add("--trainer-task=x --ps-task=x", "x", []byte{1})
	f.Add("--barrier=false --host-network", "worker tb", []byte{2, 1, 255, 7})
	f.Add("--mode=heter-ps --heter-device=xpu", "ps worker heter", []byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, args string, tasks string, shape []byte) {
		argv := strings.Fields(args)
		names := strings.Fields(tasks)
		if len(names) > 5 {
			names = names[:5]
		}
		byteAt := func(i int) byte {
			if i < len(shape) {
				return shape[i]
			}
			return 0
		}
		var specs []testbuilders.PaddleTask
		for i, n := range names {
			specs = append(specs, testbuilders.PaddleTask{Name: n, Replicas: int32(byteAt(i) % 6), GPUs: int64(byteAt(i+5) % 9)})
		}
		job := newJob("fz", "job", argv, specs...)
		for i := range job.Spec.Tasks {
			b := byteAt(i + 10)
			spec := &job.Spec.Tasks[i].Template.Spec
			spec.HostNetwork = b&1 != 0
			if b&2 != 0 {
				spec.Hostname = "h" + names[i]
			}
			if b&4 != 0 {
				spec.Containers[0].Env = append(spec.Containers[0].Env, v1.EnvVar{Name: "POD_IP", Value: "x"})
			}
			if b&8 != 0 {
				spec.Containers = nil
			}
		}
		client := fake.NewSimpleClientset()
		pods, err := runJob(t, client, job)
		svcs, _ := client.CoreV1().Services("fz").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			if _, ok := err.(*paddlejob.InvalidJobError); !ok {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			if len(svcs.Items) != 0 {
				t.Fatalf("rejected job left a Service: %v", err)
			}
			return
		}
		if len(svcs.Items) != 1 {
			t.Fatalf("accepted job has %d Services", len(svcs.Items))
		}
		for _, v := range contract.Check(pods, &svcs.Items[0], rememberConfigMaps(t, client, "fz")...) {
			t.Errorf("accepted job breaks a Paddle rule: %s (args %q, tasks %q, shape %v)", v, args, tasks, shape)
		}
	})
}
