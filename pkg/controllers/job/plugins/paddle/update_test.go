package paddle

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// A resize that reaches the controller (no webhook) never fails the sync:
// Volcano would terminate the job after its retry limit. The gang keeps
// its size with a Warning event, and the next whole-gang start uses the new
// size with consistent env.
func TestResizeHeldByController(t *testing.T) {
	for _, newSize := range []int32{4, 1, 1 << 30} {
		job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2})
		client := fake.NewSimpleClientset()
		if _, err := runJob(t, client, job); err != nil {
			t.Fatal(err)
		}
		if err := plugin(t, client, job).OnJobUpdate(job); err != nil {
			t.Fatalf("unchanged job: %v", err)
		}
		edited := job.DeepCopy()
		edited.Spec.Tasks[1].Replicas = newSize
		edited.Spec.MinAvailable = 1 + newSize
		edited.Generation++

		synced := edited.DeepCopy() // what Volcano's syncJob passes and then uses
		if err := plugin(t, client, synced).OnJobUpdate(synced); err != nil {
			t.Fatalf("resize to %d refused by the controller: %v", newSize, err)
		}
		if got := synced.Spec.Tasks[1].Replicas; got != 2 {
			t.Errorf("resize to %d: the synced copy has %d workers, want the running 2", newSize, got)
		}
		if synced.Spec.MinAvailable > 3 {
			t.Errorf("minAvailable %d above the held gang of 3", synced.Spec.MinAvailable)
		}
		if got := synced.Status.ControlledResources[paddlejob.LayoutKey]; got != "ps=1,worker=2" {
			t.Errorf("recorded sizes = %q", got)
		}
		waitEvent(t, client, paddlejob.ResizeHeldReason, "ps=1,worker=2")
		pod := newPod(synced, 1, 1)
		if err := plugin(t, client, synced).OnPodCreate(pod, synced); err != nil {
			t.Fatalf("re-creating worker 1 of the held gang: %v", err)
		}
		if got := envOf(&pod.Spec.Containers[0])[paddlejob.EnvTrainersNum]; got != "2" {
			t.Errorf("re-created worker has %s=%s, want the running size 2", paddlejob.EnvTrainersNum, got)
		}
		if newSize > paddlejob.MaxRoleReplicas {
			continue
		}

		// A whole-gang restart: killJob runs OnJobDelete, then the job
		// starts again from its spec, same generation.
		if err := plugin(t, client, synced).OnJobDelete(synced); err != nil {
			t.Fatal(err)
		}
		restarted := edited.DeepCopy()
		restarted.Status.ControlledResources = synced.Status.ControlledResources
		pods, err := runJob(t, client, restarted)
		if err != nil {
			t.Fatalf("restart at the new size: %v", err)
		}
		if len(pods) != int(1+newSize) {
			t.Fatalf("restart made %d pods, want %d", len(pods), 1+newSize)
		}
		for _, p := range pods {
			if got := envOf(&p.Spec.Containers[0])[paddlejob.EnvTrainersNum]; got != strconv.Itoa(int(newSize)) {
				t.Errorf("pod %s after restart has %s=%s, want %d", p.Name, paddlejob.EnvTrainersNum, got, newSize)
			}
		}
	}
}

// waitEvent polls the fake clientset for an event the plugin's recorder
// sends asynchronously.
func waitEvent(t *testing.T, client kubernetes.Interface, reason, contains string) *v1.Event {
	t.Helper()
	var found *v1.Event
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i, e := range evs.Items {
			if e.Reason == reason && e.Type == v1.EventTypeWarning && strings.Contains(e.Message, contains) {
				found = &evs.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no Warning event %s mentioning %q: %v", reason, contains, err)
	}
	return found
}
