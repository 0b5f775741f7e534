package testbuilders

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

func TestMakeJob(t *testing.T) {
	tests := []struct {
		name      string
		job       *batch.Job
		minAvail  int32
		tasks     int
		gpus      int64 // of the last task's first container
		argsNil   bool
		taskPolic int // policies of task 0
	}{
		{
			name:     "whole gang by default",
			job:      MakeJob("ml", "ctr").Plugin("paddle").Task(MakeTask("pserver", 2)).Task(MakeTask("trainer", 4).GPUs(8)).Obj(),
			minAvail: 6, tasks: 2, gpus: 8, argsNil: true,
		},
		{
			name:     "minAvailable given before the tasks wins",
			job:      MakeJob("ml", "ctr").MinAvailable(1).Plugin("paddle", "--port=1").Task(MakeTask("trainer", 4)).Obj(),
			minAvail: 1, tasks: 1,
		},
		{
			name:     "policies and no GPUs",
			job:      MakeJob("ml", "ctr").Task(MakeTask("trainer", 3).GPUs(2).GPUs(0).Policy(bus.TaskCompletedEvent, bus.CompleteJobAction)).Obj(),
			minAvail: 3, tasks: 1, taskPolic: 1, argsNil: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := tc.job
			if j.Spec.MinAvailable != tc.minAvail || len(j.Spec.Tasks) != tc.tasks {
				t.Fatalf("minAvailable %d, %d tasks; want %d, %d", j.Spec.MinAvailable, len(j.Spec.Tasks), tc.minAvail, tc.tasks)
			}
			if (j.Spec.Plugins["paddle"] == nil) != tc.argsNil {
				t.Errorf("paddle args %q", j.Spec.Plugins["paddle"])
			}
			last := j.Spec.Tasks[len(j.Spec.Tasks)-1].Template.Spec.Containers[0]
			q := last.Resources.Limits[gputopology.ResourceName]
			r := last.Resources.Requests[gputopology.ResourceName]
			if q.Value() != tc.gpus || r.Value() != tc.gpus {
				t.Errorf("GPUs limits %s requests %s, want %d", q.String(), r.String(), tc.gpus)
			}
			if len(j.Spec.Tasks[0].Policies) != tc.taskPolic {
				t.Errorf("task policies %v", j.Spec.Tasks[0].Policies)
			}
			if j.UID == "" || j.Generation != 1 || j.Spec.SchedulerName != "volcano" {
				t.Errorf("defaults: uid %q generation %d scheduler %q", j.UID, j.Generation, j.Spec.SchedulerName)
			}
		})
	}
}

// Obj returns copies: changing one object changes neither the wrapper nor
// the next object.
func TestObjIsACopy(t *testing.T) {
	w := MakeJob("ml", "a").Task(MakeTask("trainer", 1).Env(v1.EnvVar{Name: "A", Value: "1"}))
	a := w.Obj()
	a.Spec.Tasks[0].Template.Spec.Containers[0].Env[0].Value = "changed"
	if b := w.Obj(); b.Spec.Tasks[0].Template.Spec.Containers[0].Env[0].Value != "1" {
		t.Errorf("a change to one object reached the next: %q", b.Spec.Tasks[0].Template.Spec.Containers[0].Env[0].Value)
	}
}

func TestTaskPod(t *testing.T) {
	job := MakeJob("ml", "ctr").Queue("q").Version(3).
		Task(MakeTask("trainer", 4).Port("metrics", 9100).Hostname("")).Obj()
	job.Spec.Tasks[0].Template.Labels = map[string]string{"app": "x"}
	pod := TaskPod(job, "trainer", 2)
	if pod.Name != "ctr-trainer-2" || pod.Namespace != "ml" {
		t.Errorf("name %s/%s", pod.Namespace, pod.Name)
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != job.UID || pod.OwnerReferences[0].Controller == nil || !*pod.OwnerReferences[0].Controller {
		t.Errorf("owner %+v", pod.OwnerReferences)
	}
	for k, want := range map[string]string{batch.TaskSpecKey: "trainer", batch.TaskIndex: "2", batch.JobNameKey: "ctr", batch.JobVersion: "3", batch.QueueNameKey: "q"} {
		if got := pod.Annotations[k]; got != want {
			t.Errorf("annotation %s = %q, want %q", k, got, want)
		}
	}
	for k, want := range map[string]string{batch.TaskSpecKey: "trainer", batch.TaskIndex: "2", batch.JobNameKey: "ctr", batch.JobNamespaceKey: "ml", "app": "x"} {
		if got := pod.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if p := pod.Spec.Containers[0].Ports; len(p) != 1 || p[0].ContainerPort != 9100 {
		t.Errorf("ports %+v", p)
	}
	defer func() {
		if recover() == nil {
			t.Error("TaskPod of a missing task did not panic")
		}
	}()
	TaskPod(job, "nope", 0)
}
