package paddle

import (
	"testing"

	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Every pod the plugin creates says whether the scheduler may take it:
// volcano.sh/preemptable "true" only on an elastic job's trainers and on
// every pod of a --checkpointable job, "false" everywhere else (Volcano
// takes a pod without it as preemptable); the checkpointable label, the
// restart cost and the job's maxRetry only with --checkpointable.
func TestPreemptionOptIn(t *testing.T) {
	cases := []struct {
		name string
		job  func() *batch.Job
		// per task: volcano.sh/preemptable, checkpointable label, restart
		// cost, maxRetry.
		want map[string][4]string
	}{
		{name: "a job that opted in to nothing", job: func() *batch.Job {
			return newJob("ml", "plain", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 2, GPUs: 1})
		}, want: map[string][4]string{"worker": {"false", ""}}},
		{name: "a parameter-server job with --checkpointable: every pod, the default restart cost", job: func() *batch.Job {
			j := newJob("ml", "ps", []string{"--checkpointable"}, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2, GPUs: 1})
			j.Spec.MaxRetry = 3
			return j
		}, want: map[string][4]string{"ps": {"true", "true", "5m0s", "3"}, "worker": {"true", "true", "5m0s", "3"}}},
		{name: "a collective job with its own --restart-cost", job: func() *batch.Job {
			j := newJob("ml", "rc", []string{"--checkpointable", "--restart-cost=20m"}, testbuilders.PaddleTask{Name: "worker", Replicas: 2, GPUs: 1})
			j.Spec.MaxRetry = 8
			return j
		}, want: map[string][4]string{"worker": {"true", "true", "20m0s", "8"}}},
		{name: "an elastic job: its trainers", job: func() *batch.Job {
			return elasticJob("el", 1, 2, 4)
		}, want: map[string][4]string{"worker": {"true", ""}}},
		{name: "a checkpointable elastic job", job: func() *batch.Job {
			return elasticJob("elck", 1, 2, 4, "--checkpointable")
		}, want: map[string][4]string{"worker": {"true", "true", "5m0s", "0"}}},
		{name: "a helper task of an elastic job is never taken", job: func() *batch.Job {
			j := elasticJob("elh", 1, 2, 4)
			j.Spec.Tasks = append(j.Spec.Tasks, *testbuilders.MakeTask("tensorboard", 1).Obj())
			return j
		}, want: map[string][4]string{"worker": {"true", ""}, "tensorboard": {"false", ""}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, pods := mustRun(t, tc.job())
			seen := map[string]bool{}
			for _, pod := range pods {
				task := pod.Annotations[batch.TaskSpecKey]
				want, ok := tc.want[task]
				if !ok {
					t.Fatalf("pod %s of unexpected task %q", pod.Name, task)
				}
				seen[task] = true
				if got := pod.Annotations[scheduling.PodPreemptable]; got != want[0] {
					t.Errorf("%s: %s=%q, want %q", pod.Name, scheduling.PodPreemptable, got, want[0])
				}
				if got := pod.Labels[paddleapi.CheckpointableLabel]; got != want[1] {
					t.Errorf("%s: %s=%q, want %q", pod.Name, paddleapi.CheckpointableLabel, got, want[1])
				}
				if got := pod.Annotations[paddleapi.RestartCostAnnotation]; got != want[2] {
					t.Errorf("%s: %s=%q, want %q", pod.Name, paddleapi.RestartCostAnnotation, got, want[2])
				}
				if got := pod.Annotations[paddleapi.MaxRetryAnnotation]; got != want[3] {
					t.Errorf("%s: %s=%q, want %q", pod.Name, paddleapi.MaxRetryAnnotation, got, want[3])
				}
			}
			for task := range tc.want {
				if !seen[task] {
					t.Errorf("no pod of task %s", task)
				}
			}
		})
	}
}
