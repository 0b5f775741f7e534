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
// takes a pod without it as preemptable); the checkpointable label only
// with --checkpointable.
func TestPreemptionOptIn(t *testing.T) {
	cases := []struct {
		name string
		job  func() *batch.Job
		// per task: volcano.sh/preemptable, checkpointable label.
		want map[string][2]string
	}{
		{name: "a job that opted in to nothing", job: func() *batch.Job {
			return newJob("ml", "plain", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 2, GPUs: 1})
		}, want: map[string][2]string{"worker": {"false", ""}}},
		{name: "a parameter-server job with --checkpointable: every pod", job: func() *batch.Job {
			return newJob("ml", "ps", []string{"--checkpointable"}, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 2, GPUs: 1})
		}, want: map[string][2]string{"ps": {"true", "true"}, "worker": {"true", "true"}}},
		{name: "an elastic job: its trainers", job: func() *batch.Job {
			return elasticJob("el", 1, 2, 4)
		}, want: map[string][2]string{"worker": {"true", ""}}},
		{name: "a checkpointable elastic job", job: func() *batch.Job {
			return elasticJob("elck", 1, 2, 4, "--checkpointable")
		}, want: map[string][2]string{"worker": {"true", "true"}}},
		{name: "a helper task of an elastic job is never taken", job: func() *batch.Job {
			j := elasticJob("elh", 1, 2, 4)
			j.Spec.Tasks = append(j.Spec.Tasks, *testbuilders.MakeTask("tensorboard", 1).Obj())
			return j
		}, want: map[string][2]string{"worker": {"true", ""}, "tensorboard": {"false", ""}}},
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
			}
			for task := range tc.want {
				if !seen[task] {
					t.Errorf("no pod of task %s", task)
				}
			}
		})
	}
}
