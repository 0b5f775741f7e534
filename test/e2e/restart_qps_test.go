package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batchv1alpha1 "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/pkg/controllers/paddleobjects"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// restartOnce fails one pod of a running job and waits until every pod is
// replaced and the job runs again; it returns how long that took, or an
// error naming the phase the job stayed in.
func restartOnce(t *testing.T, c *localcluster.Cluster, ns, name string, timeout time.Duration) (time.Duration, error) {
	t.Helper()
	ctx := context.Background()
	framework.WaitJobPhase(t, c, ns, name, batchv1alpha1.Running, 60*time.Second)
	pods := framework.JobPods(t, c, ns, name)
	uids := podUIDs(pods)
	start := time.Now()
	framework.FailPod(t, c, ns, pods[len(pods)-1].Name)
	var phase batchv1alpha1.JobPhase
	err := framework.Poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		j, done, err := restartedAnew(ctx, c, ns, name, uids, len(uids))
		if j != nil {
			phase = j.Status.State.Phase
		}
		return done, err
	})
	if err != nil {
		return 0, fmt.Errorf("job %s stayed %s: %w", name, phase, err)
	}
	return time.Since(start), nil
}

// Issue 28, item 4: with the controller manager's client at 5 QPS, a
// RestartJob of a Paddle job completes as often as one of the same job
// without the plugin (Volcano's svc plugin in its place, which also
// deletes and re-creates a Service per restart).
func TestRestartAtLowQPS(t *testing.T) {
	c := framework.StartCluster(t, localcluster.Options{Topology: tinyTopology(), ExtraArgs: map[string][]string{
		localcluster.ControllerManager: {"--kube-api-qps=5", "--kube-api-burst=10"},
	}})
	ns := framework.Namespace(t, c)
	const rounds = 6
	variants := []struct {
		name    string
		plugins map[string][]string
	}{
		{"svc", map[string][]string{"svc": {}}},
		{"paddle", map[string][]string{"paddle": {}}},
	}
	completed := map[string]int{}
	for _, v := range variants {
		for i := 0; i < rounds; i++ {
			name := fmt.Sprintf("%s-%d", v.name, i)
			job := framework.NewJob(ns, name, 8, framework.Task{Name: "ps", Replicas: 2, CPU: "500m"}, framework.Task{Name: "worker", Replicas: 6, CPU: "500m"})
			job.Spec.Plugins = v.plugins
			framework.CreateJob(t, c, job)
			took, err := restartOnce(t, c, ns, name, 90*time.Second)
			if err != nil {
				t.Logf("%s: restart %d did not complete: %v\n%s", v.name, i, err, framework.DescribePods(c, ns))
			} else {
				completed[v.name]++
				t.Logf("%s: restart %d took %s", v.name, i, took.Round(100*time.Millisecond))
			}
			if err := c.Volcano.BatchV1alpha1().Jobs(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	events, err := c.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=" + paddleobjects.ResumedReason})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restarts completed at 5 QPS: svc %d/%d, paddle %d/%d (%d resumed by paddle-objects-controller)",
		completed["svc"], rounds, completed["paddle"], rounds, len(events.Items))
	if completed["svc"] < rounds {
		t.Logf("Volcano's own race (docs/security.md): %d of %d restarts of the job without paddle stalled in Restarting", rounds-completed["svc"], rounds)
	}
	if completed["paddle"] < completed["svc"] {
		t.Errorf("paddle completed fewer restarts (%d) than the same job without it (%d)", completed["paddle"], completed["svc"])
	}
	if completed["paddle"] < rounds {
		t.Errorf("paddle: %d of %d restarts stalled", rounds-completed["paddle"], rounds)
	}
}
