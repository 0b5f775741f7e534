package jobhistory

import (
	"errors"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	tb "github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
)

// t0 is when the test jobs were created; at(s) is s seconds later.
var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// cond is one status condition: the phase the job entered at s.
type cond struct {
	phase batch.JobPhase
	s     int
}

// ended is job as Volcano leaves it: created at t0, in the last
// condition's phase (at its time), with those conditions.
func ended(job *batch.Job, conds ...cond) *batch.Job {
	job.CreationTimestamp = metav1.NewTime(t0)
	for _, c := range conds {
		tm := metav1.NewTime(at(c.s))
		job.Status.Conditions = append(job.Status.Conditions, batch.JobCondition{Status: c.phase, LastTransitionTime: &tm})
	}
	if n := len(conds); n > 0 {
		job.Status.State = batch.JobState{Phase: conds[n-1].phase, LastTransitionTime: metav1.NewTime(at(conds[n-1].s))}
	}
	return job
}

// completed is the path of a job that ran from 5 s to 60 s as Volcano
// v1.14 records it, a condition per status change.
var completed = []cond{{batch.Pending, 0}, {batch.Running, 5}, {batch.Running, 6}, {batch.Completed, 60}}

// completed115 is the same run as Volcano v1.15 records it, a condition
// per phase holding its latest change: Running's is the last update of
// the run (its pods' ends), no longer its start.
var completed115 = []cond{{batch.Pending, 1}, {batch.Running, 58}, {batch.Completed, 60}}

// podOf is replica i of the job's task as Volcano creates it: owned by
// the job, labelled and annotated with its name, task and version.
func podOf(job *batch.Job, task string, i int) *tb.PodWrapper {
	p := tb.MakePod().Name(job.Name+"-"+task+"-"+strconv.Itoa(i)).Namespace(job.Namespace).Task(task, i).
		Label(batch.JobNameKey, job.Name).Annotation(batch.JobVersion, strconv.Itoa(int(job.Status.Version)))
	p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batch.SchemeGroupVersion.WithKind("Job"))}
	return p
}

// ran ends the pod in phase with its container finished at s (after it
// started at from).
func ran(p *tb.PodWrapper, from, s int, phase corev1.PodPhase) *corev1.Pod {
	p.Started(at(from)).Phase(phase)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "paddle", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(at(from)), FinishedAt: metav1.NewTime(at(s))}}}}
	return p.Obj()
}

func paddleJob(name string, args []string, tasks ...*tb.TaskWrapper) *batch.Job {
	w := tb.MakeJob("ml", name).Queue("research").Plugin("paddle", args...)
	for _, t := range tasks {
		w.Task(t)
	}
	return w.Obj()
}

func TestFromJob(t *testing.T) {
	collective := ended(paddleJob("resnet", nil, tb.MakeTask("trainer", 2).GPUs(1)), completed...)
	ps := ended(paddleJob("ctr", nil, tb.MakeTask("ps", 2), tb.MakeTask("worker", 3).GPUs(1)), completed...)
	elastic := ended(tb.ElasticPaddleJob("el", 2, 3, 6, "--checkpointable"), completed...)
	plain := ended(tb.MakeJob("ml", "plain").
		Task(tb.MakeTask("master", 1).GPUs(2)).Task(tb.MakeTask("worker", 3).GPUs(2)).Task(tb.MakeTask("tensorboard", 1)).Obj(), completed...)
	invalidPaddle := ended(paddleJob("bad", []string{"--mode=mpi"}, tb.MakeTask("trainer", 2).GPUs(8)), completed...)
	restarted := ended(paddleJob("re", nil, tb.MakeTask("trainer", 2).GPUs(1)),
		cond{batch.Pending, 0}, cond{batch.Running, 5}, cond{batch.Restarting, 20}, cond{batch.Pending, 21}, cond{batch.Running, 30}, cond{batch.Completed, 90})
	// Two kills raised its version: the restart (to 1) and the completion.
	restarted.Status.Version, restarted.Status.RetryCount = 2, 1
	v115 := ended(paddleJob("v115", nil, tb.MakeTask("trainer", 2).GPUs(1)), completed115...)
	v115.Status.Version = 1
	failed := ended(paddleJob("failed", nil, tb.MakeTask("trainer", 2).GPUs(4)),
		cond{batch.Pending, 0}, cond{batch.Running, 5}, cond{batch.Terminating, 40}, cond{batch.Terminated, 70})

	// Another job of the same name (deleted and created again) and one of
	// another namespace: their pods are not this job's.
	other := ended(paddleJob("resnet", nil, tb.MakeTask("trainer", 2).GPUs(1)), completed...)
	other.UID = "uid-of-an-older-job"

	for _, tc := range []struct {
		name string
		job  *batch.Job
		pods []*corev1.Pod
		want Record
	}{
		{
			name: "paddle collective: the trainers' first start to their last finish",
			job:  collective,
			pods: []*corev1.Pod{
				ran(podOf(collective, "trainer", 0), 7, 50, corev1.PodSucceeded),
				ran(podOf(collective, "trainer", 1), 6, 52, corev1.PodSucceeded),
				ran(podOf(other, "trainer", 0), 1, 100, corev1.PodSucceeded),
				ran(podOf(collective, "trainer", 1).Namespace("elsewhere"), 1, 100, corev1.PodSucceeded),
			},
			want: Record{Pods: 2, GPUsPerPod: 1, MinPods: 2, MaxPods: 2, Mode: ModeCollective, Queue: "research", Namespace: "ml",
				Start: at(6), Duration: 46 * time.Second, Phase: "Completed", TimesFrom: TimesFromPods, Name: "resnet"},
		},
		{
			name: "paddle ps: trainers' times and shape, pservers counted apart",
			job:  ps,
			pods: []*corev1.Pod{
				ran(podOf(ps, "ps", 0), 5, 58, corev1.PodFailed), // stopped by CompleteJob
				ran(podOf(ps, "worker", 0), 6, 40, corev1.PodSucceeded),
				ran(podOf(ps, "worker", 1), 6, 42, corev1.PodSucceeded),
				ran(podOf(ps, "worker", 2), 7, 41, corev1.PodSucceeded),
			},
			want: Record{Pods: 3, GPUsPerPod: 1, MinPods: 3, MaxPods: 3, Mode: ModePS, PServers: 2, Queue: "research", Namespace: "ml",
				Start: at(6), Duration: 36 * time.Second, Phase: "Completed", TimesFrom: TimesFromPods, Name: "ctr"},
		},
		{
			name: "elastic and checkpointable, pods gone: the status' run",
			job:  elastic,
			want: Record{Pods: 3, GPUsPerPod: 1, MinPods: 2, MaxPods: 6, Mode: ModeCollective, Checkpointable: true, Queue: "default", Namespace: "ml",
				Start: at(5), Duration: 55 * time.Second, Phase: "Completed", TimesFrom: TimesFromStatus, Name: "el"},
		},
		{
			name: "plain job: its GPU tasks of one shape add up, no queue is Volcano's default",
			job:  plain,
			pods: []*corev1.Pod{
				ran(podOf(plain, "master", 0), 8, 30, corev1.PodSucceeded),
				ran(podOf(plain, "worker", 0), 8, 30, corev1.PodSucceeded),
				ran(podOf(plain, "worker", 1), 9, 31, corev1.PodSucceeded),
				ran(podOf(plain, "worker", 2), 9, 33, corev1.PodSucceeded),
				ran(podOf(plain, "tensorboard", 0), 2, 59, corev1.PodSucceeded),
			},
			want: Record{Pods: 4, GPUsPerPod: 2, MinPods: 4, MaxPods: 4, Queue: "default", Namespace: "ml",
				Start: at(8), Duration: 25 * time.Second, Phase: "Completed", TimesFrom: TimesFromPods, Name: "plain"},
		},
		{
			name: "a paddle spec the plugin refuses is read as a plain job",
			job:  invalidPaddle,
			want: Record{Pods: 2, GPUsPerPod: 8, MinPods: 2, MaxPods: 2, Queue: "research", Namespace: "ml",
				Start: at(5), Duration: 55 * time.Second, Phase: "Completed", TimesFrom: TimesFromStatus, Name: "bad"},
		},
		{
			name: "restarted: the last run, the old run's pod ignored",
			job:  restarted,
			pods: []*corev1.Pod{
				ran(podOf(restarted, "trainer", 0).Annotation(batch.JobVersion, "0"), 6, 20, corev1.PodFailed),
				ran(podOf(restarted, "trainer", 0).Annotation(batch.JobVersion, "1"), 31, 85, corev1.PodSucceeded),
				ran(podOf(restarted, "trainer", 1).Annotation(batch.JobVersion, "1"), 32, 86, corev1.PodSucceeded),
			},
			want: Record{Pods: 2, GPUsPerPod: 1, MinPods: 2, MaxPods: 2, Mode: ModeCollective, Queue: "research", Namespace: "ml",
				Start: at(31), Duration: 55 * time.Second, Phase: "Completed", Restarts: 1, TimesFrom: TimesFromPods, Name: "re"},
		},
		{
			name: "Volcano v1.15 conditions, pods there: the pods' times, of the version before the completion's kill",
			job:  v115,
			pods: []*corev1.Pod{
				ran(podOf(v115, "trainer", 0).Annotation(batch.JobVersion, "0"), 4, 57, corev1.PodSucceeded),
				ran(podOf(v115, "trainer", 1).Annotation(batch.JobVersion, "0"), 4, 58, corev1.PodSucceeded),
			},
			want: Record{Pods: 2, GPUsPerPod: 1, MinPods: 2, MaxPods: 2, Mode: ModeCollective, Queue: "research", Namespace: "ml",
				Start: at(4), Duration: 54 * time.Second, Phase: "Completed", TimesFrom: TimesFromPods, Name: "v115"},
		},
		{
			name: "restarted, pods gone: Running after the last Restarting",
			job:  restarted,
			want: Record{Pods: 2, GPUsPerPod: 1, MinPods: 2, MaxPods: 2, Mode: ModeCollective, Queue: "research", Namespace: "ml",
				Start: at(30), Duration: 60 * time.Second, Phase: "Completed", Restarts: 1, TimesFrom: TimesFromStatus, Name: "re"},
		},
		{
			name: "terminated, a running trainer deleted: start from the pods, end when it left Running",
			job:  failed,
			pods: []*corev1.Pod{ran(podOf(failed, "trainer", 0), 7, 39, corev1.PodFailed)},
			want: Record{Pods: 2, GPUsPerPod: 4, MinPods: 2, MaxPods: 2, Mode: ModeCollective, Queue: "research", Namespace: "ml",
				Start: at(7), Duration: 33 * time.Second, Phase: "Terminated", TimesFrom: TimesFromMixed, Name: "failed"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromJob(tc.job, tc.pods)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.SubmitTime = t0
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("the record cannot be written: %v", err)
			}
		})
	}
}

func TestFromJobSkips(t *testing.T) {
	running := ended(paddleJob("running", nil, tb.MakeTask("trainer", 2).GPUs(1)), cond{batch.Pending, 0}, cond{batch.Running, 5})
	short := ended(paddleJob("short", nil, tb.MakeTask("trainer", 1).GPUs(1)), completed...)
	for _, tc := range []struct {
		name string
		job  *batch.Job
		pods []*corev1.Pod
		want SkipReason
	}{
		{"running", running, []*corev1.Pod{podOf(running, "trainer", 0).Started(at(6)).Obj()}, SkipUnfinished},
		{"no phase yet", tb.MakeJob("ml", "new").Task(tb.MakeTask("w", 1).GPUs(1)).Obj(), nil, SkipUnfinished},
		{"completing", ended(paddleJob("c", nil, tb.MakeTask("trainer", 1).GPUs(1)), cond{batch.Running, 5}, cond{batch.Completing, 9}), nil, SkipUnfinished},
		{"suspended", ended(paddleJob("s", nil, tb.MakeTask("trainer", 1).GPUs(1)), cond{batch.Running, 5}, cond{batch.Aborting, 9}, cond{batch.Aborted, 10}), nil, SkipAborted},
		{"CPU only", ended(tb.MakeJob("ml", "cpu").Task(tb.MakeTask("w", 4)).Obj(), completed...), nil, SkipNoGPUs},
		{"paddle ps with CPU trainers", ended(paddleJob("ctr", nil, tb.MakeTask("ps", 1), tb.MakeTask("worker", 4)), completed...), nil, SkipNoGPUs},
		{"GPU tasks of two shapes", ended(tb.MakeJob("ml", "mixed").Task(tb.MakeTask("a", 1).GPUs(1)).Task(tb.MakeTask("b", 2).GPUs(8)).Obj(), completed...), nil, SkipMixedGPUTasks},
		{"heter-ps", ended(paddleJob("h", nil, tb.MakeTask("ps", 1), tb.MakeTask("worker", 2), tb.MakeTask("heter", 2).GPUs(1)), completed...), nil, SkipHeterPS},
		{"terminated while pending", ended(paddleJob("p", nil, tb.MakeTask("trainer", 1).GPUs(1)), cond{batch.Pending, 0}, cond{batch.Terminating, 9}, cond{batch.Terminated, 10}), nil, SkipNeverStarted},
		{"v1.15 conditions, pods gone", ended(paddleJob("v115", nil, tb.MakeTask("trainer", 1).GPUs(1)), completed115...), nil, SkipStartUnknown},
		{"more GPUs per pod than a record holds", ended(tb.MakeJob("ml", "huge").Task(tb.MakeTask("w", 1).GPUs(20000)).Obj(), completed...), nil, SkipOutOfRange},
		{"ran under a second", short, []*corev1.Pod{ran(podOf(short, "trainer", 0), 5, 5, corev1.PodSucceeded)}, SkipNoRunTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := FromJob(tc.job, tc.pods)
			var s *Skip
			if !errors.As(err, &s) || s.Reason != tc.want {
				t.Fatalf("FromJob = %+v, %v; want a skip for %s", rec, err, tc.want)
			}
			if s.Detail == "" {
				t.Error("a skip without detail")
			}
		})
	}
}

func TestPodGPUs(t *testing.T) {
	gpus := func(n int64) corev1.ResourceRequirements {
		q := corev1.ResourceList{gputopology.ResourceName: *resource.NewQuantity(n, resource.DecimalSI)}
		return corev1.ResourceRequirements{Limits: q}
	}
	requested := func(n int64) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{gputopology.ResourceName: *resource.NewQuantity(n, resource.DecimalSI)}}
	}
	always := corev1.ContainerRestartPolicyAlways
	sidecar := &always
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want int
	}{
		{"none", corev1.PodSpec{Containers: []corev1.Container{{}}}, 0},
		{"containers add up, requests count without limits", corev1.PodSpec{Containers: []corev1.Container{{Resources: gpus(2)}, {Resources: requested(1)}}}, 3},
		{"an init container asking more sets the pod's request", corev1.PodSpec{
			InitContainers: []corev1.Container{{Resources: gpus(4)}}, Containers: []corev1.Container{{Resources: gpus(2)}}}, 4},
		{"a sidecar adds to the containers and to later init containers", corev1.PodSpec{
			InitContainers: []corev1.Container{{Resources: gpus(1), RestartPolicy: sidecar}, {Resources: gpus(4)}},
			Containers:     []corev1.Container{{Resources: gpus(2)}}}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podGPUs(&tc.spec); got != tc.want {
				t.Fatalf("podGPUs = %d, want %d", got, tc.want)
			}
		})
	}
}
