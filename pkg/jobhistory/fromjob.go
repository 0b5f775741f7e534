package jobhistory

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// SkipReason says why FromJob leaves a job out of a history.
type SkipReason string

const (
	// SkipUnfinished: the job is pending, running, or on its way to an
	// end (Completing, Terminating, Aborting, Restarting).
	SkipUnfinished SkipReason = "unfinished"
	// SkipAborted: the job was suspended (Aborted); it may be resumed, so
	// it has not finished.
	SkipAborted SkipReason = "aborted"
	// SkipNoGPUs: no task of the job requests GPUs (for a Paddle job: its
	// trainer task requests none).
	SkipNoGPUs SkipReason = "no-gpus"
	// SkipMixedGPUTasks: a plain Volcano job with several GPU tasks of
	// different GPUs per pod, which one pod shape cannot describe.
	SkipMixedGPUTasks SkipReason = "mixed-gpu-tasks"
	// SkipHeterPS: a Paddle heter-ps job (CPU trainers and GPU heter
	// trainers), which the replay does not model.
	SkipHeterPS SkipReason = "heter-ps"
	// SkipNeverStarted: no trainer pod start and no Running condition: the
	// job ended before it ran.
	SkipNeverStarted SkipReason = "never-started"
	// SkipStartUnknown: the job ran, but its trainer pods are gone and its
	// conditions keep only each phase's latest change (Volcano v1.15), so
	// when it started is lost.
	SkipStartUnknown SkipReason = "start-unknown"
	// SkipNoRunTime: the job's end is not after its start: it ran under a
	// second (the API's times are whole seconds), or its times disagree.
	SkipNoRunTime SkipReason = "no-run-time"
	// SkipOutOfRange: a value beyond what a record holds (Validate), such
	// as more than 10,000 GPUs per pod: one odd job does not stop an
	// export.
	SkipOutOfRange SkipReason = "out-of-range"
)

// Skip is FromJob's answer for a job that has no place in a history.
type Skip struct {
	Reason SkipReason
	Detail string
}

func (s *Skip) Error() string { return string(s.Reason) + ": " + s.Detail }

func skip(r SkipReason, format string, args ...any) *Skip {
	return &Skip{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// Finished says the job has ended for good: the phases Volcano's garbage
// collector treats as finished (volcano.sh/volcano
// pkg/controllers/garbagecollector/garbagecollector.go: isJobFinished).
// Aborted is not among them: `vcctl job resume` restarts such a job.
func Finished(job *batch.Job) bool {
	switch job.Status.State.Phase {
	case batch.Completed, batch.Failed, batch.Terminated:
		return true
	}
	return false
}

// FromJob is the record of a finished Volcano Job, from the job and its
// pods (those that still exist; any order, others' pods are ignored). A
// job it leaves out gets a *Skip error, with the reason.
//
// The trainers: for a Paddle job (spec.plugins.paddle), the trainer task
// of its layout as the paddle plugin resolves it (paddlejob), also for a
// ps job, whose pserver task gives PServers; for any other job, the tasks
// that request nvidia.com/gpu (when they request the same per pod, their
// replicas add up). A Paddle job whose spec the plugin would now refuse is
// read as a plain job.
//
// Times, of the job's last run (Volcano deletes a restarted job's pods,
// and creates the new ones with the next job version):
//   - start: the earliest StartTime of its trainer pods; without any, the
//     job's first Running condition after its last Restarting one, where
//     its conditions are a history (conditionTimes);
//   - end: the latest container finish of its trainer pods, when all of
//     them are there and ended; else the job's first condition after that
//     run that heads for an end (Completing, Completed, Failed, Aborting,
//     Terminating, ...), else its last transition.
func FromJob(job *batch.Job, pods []*corev1.Pod) (Record, error) {
	switch {
	case Finished(job):
	case job.Status.State.Phase == batch.Aborted:
		return Record{}, skip(SkipAborted, "phase Aborted: suspended, not finished")
	default:
		return Record{}, skip(SkipUnfinished, "phase %q", job.Status.State.Phase)
	}
	sh, err := shapeOf(job)
	if err != nil {
		return Record{}, err
	}
	rec := Record{
		SubmitTime:     job.CreationTimestamp.UTC(),
		Pods:           sh.pods,
		GPUsPerPod:     sh.gpusPerPod,
		Queue:          QueueOf(job),
		Namespace:      job.Namespace,
		Mode:           sh.mode,
		MinPods:        sh.minPods,
		MaxPods:        sh.maxPods,
		Checkpointable: sh.checkpointable,
		PServers:       sh.pservers,
		Phase:          string(job.Status.State.Phase),
		Restarts:       int(job.Status.RetryCount),
		Name:           job.Name,
	}
	start, end, from, err := runTimes(job, trainerPods(job, pods, sh.tasks), sh.pods)
	if err != nil {
		return Record{}, err
	}
	rec.Start, rec.Duration, rec.TimesFrom = start.UTC(), end.Sub(start), from
	if err := rec.Validate(); err != nil {
		return Record{}, skip(SkipOutOfRange, "%v", err)
	}
	return rec, nil
}

// shape is what FromJob learns from the job's spec.
type shape struct {
	mode             Mode
	tasks            map[string]bool // the trainer tasks
	pods, gpusPerPod int
	minPods, maxPods int
	pservers         int
	checkpointable   bool
}

func shapeOf(job *batch.Job) (shape, error) {
	if spec, ok := paddlejob.Read(job); ok {
		if l, err := spec.Validate(job); err == nil {
			return paddleShape(job, spec, l)
		}
	}
	return plainShape(job)
}

// paddleShape is the shape of a Paddle job from its layout.
func paddleShape(job *batch.Job, spec paddlejob.Spec, l *paddlejob.Layout) (shape, error) {
	var sh shape
	switch l.Mode {
	case paddleapi.ModeCollective:
		sh.mode = ModeCollective
	case paddleapi.ModePS:
		sh.mode = ModePS
		sh.pservers = l.PServer.Replicas
	default:
		return sh, skip(SkipHeterPS, "mode %s", l.Mode)
	}
	t := l.Trainer
	sh.gpusPerPod = podGPUs(&job.Spec.Tasks[t.TaskIndex].Template.Spec)
	if sh.gpusPerPod == 0 {
		return sh, skip(SkipNoGPUs, "trainer task %q requests no %s", t.TaskName, gputopology.ResourceName)
	}
	sh.tasks = map[string]bool{t.TaskName: true}
	sh.pods, sh.minPods, sh.maxPods = t.Replicas, t.Replicas, t.Replicas
	if l.Elastic != nil {
		sh.minPods, sh.maxPods = l.Elastic.Min, l.Elastic.Max
	}
	sh.checkpointable = spec.Args.Checkpointable
	return sh, nil
}

// plainShape is the shape of any other job: its GPU tasks.
func plainShape(job *batch.Job) (shape, error) {
	sh := shape{tasks: map[string]bool{}}
	var shapes []string
	for i := range job.Spec.Tasks {
		t := &job.Spec.Tasks[i]
		g := podGPUs(&t.Template.Spec)
		if g == 0 || t.Replicas < 1 {
			continue
		}
		shapes = append(shapes, fmt.Sprintf("%s: %d x %d", t.Name, t.Replicas, g))
		if sh.gpusPerPod != 0 && g != sh.gpusPerPod {
			return sh, skip(SkipMixedGPUTasks, "tasks of different GPUs per pod (%s)", strings.Join(shapes, ", "))
		}
		sh.gpusPerPod = g
		sh.pods += int(t.Replicas)
		sh.tasks[t.Name] = true
	}
	if sh.pods == 0 {
		return sh, skip(SkipNoGPUs, "no task requests %s", gputopology.ResourceName)
	}
	sh.minPods, sh.maxPods = sh.pods, sh.pods
	return sh, nil
}

// podGPUs is the GPUs a pod of the template requests, as the scheduler
// counts a pod's request (k8s.io/component-helpers/resource/helpers.go:
// PodRequests): the sum of its containers and restartable (sidecar) init
// containers, or a plain init container with the sidecars started before
// it, whichever is more. Limits stand for requests, which for an extended
// resource must equal them.
func podGPUs(spec *corev1.PodSpec) int {
	sum := 0
	for i := range spec.Containers {
		sum += containerGPUs(&spec.Containers[i])
	}
	sidecars, initPeak := 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars += containerGPUs(c)
			continue
		}
		initPeak = max(initPeak, sidecars+containerGPUs(c))
	}
	return max(sum+sidecars, initPeak)
}

func containerGPUs(c *corev1.Container) int {
	const gpu corev1.ResourceName = gputopology.ResourceName
	if q, ok := c.Resources.Limits[gpu]; ok {
		return int(q.Value())
	}
	if q, ok := c.Resources.Requests[gpu]; ok {
		return int(q.Value())
	}
	return 0
}

// trainerPods are the pods of the job's last run in its trainer tasks:
// controlled by the job (a job deleted and re-created under its name has
// a new UID), in a trainer task (the volcano.sh/task-spec annotation), of
// the highest job version among them. Volcano writes the version on each
// pod (volcano.sh/job-version, createJobPod) and raises the job's own on
// every kill of the whole job, restarts and also the completion's
// (pkg/controllers/job/job_controller_actions.go: killJob), so a finished
// job's status.version is past its last pods'.
func trainerPods(job *batch.Job, pods []*corev1.Pod, tasks map[string]bool) []*corev1.Pod {
	var out []*corev1.Pod
	last := -1
	for _, p := range pods {
		if p == nil || p.Namespace != job.Namespace || !tasks[p.Annotations[batch.TaskSpecKey]] {
			continue
		}
		if ref := metav1.GetControllerOf(p); ref != nil {
			if ref.UID != job.UID {
				continue
			}
		} else if p.Labels[batch.JobNameKey] != job.Name {
			continue
		}
		out = append(out, p)
		last = max(last, podVersion(p))
	}
	kept := out[:0]
	for _, p := range out {
		if v := podVersion(p); v < 0 || v == last {
			kept = append(kept, p)
		}
	}
	return kept
}

// podVersion is the job version a pod was created for, -1 when unknown.
func podVersion(p *corev1.Pod) int {
	v, err := strconv.Atoi(p.Annotations[batch.JobVersion])
	if err != nil || v < 0 {
		return -1
	}
	return v
}

// runTimes are the start and end of the job's last run (FromJob).
func runTimes(job *batch.Job, trainers []*corev1.Pod, replicas int) (start, end time.Time, from TimesFrom, err error) {
	podStart, podEnd := podTimes(trainers, replicas)
	condStart, condEnd := conditionTimes(job)
	switch {
	case !podStart.IsZero():
		start = podStart
	case !condStart.IsZero():
		start = condStart
	case ranPerStatus(job):
		return start, end, from, skip(SkipStartUnknown, "its trainer pods are gone and its conditions keep only the latest change of each phase")
	default:
		return start, end, from, skip(SkipNeverStarted, "no trainer pod started and the job has no Running condition (phase %s)", job.Status.State.Phase)
	}
	end = podEnd
	if end.IsZero() {
		end = condEnd
	}
	switch {
	case !podStart.IsZero() && !podEnd.IsZero():
		from = TimesFromPods
	case !podStart.IsZero():
		from = TimesFromMixed
	default:
		from = TimesFromStatus
	}
	if !end.After(start) {
		return start, end, from, skip(SkipNoRunTime, "ended at %s, started at %s (%s times)", end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339), from)
	}
	return start, end, from, nil
}

// podTimes is the earliest start of the trainer pods, and the latest
// finish of their containers when every one of the replicas is there and
// has ended (zero otherwise: one deleted while it ran took its end along).
func podTimes(trainers []*corev1.Pod, replicas int) (start, end time.Time) {
	ended := 0
	for _, p := range trainers {
		if t := p.Status.StartTime; t != nil && (start.IsZero() || t.Time.Before(start)) {
			start = t.Time
		}
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			continue
		}
		var fin time.Time
		for _, cs := range p.Status.ContainerStatuses {
			if tm := cs.State.Terminated; tm != nil && tm.FinishedAt.Time.After(fin) {
				fin = tm.FinishedAt.Time
			}
		}
		if fin.IsZero() {
			continue
		}
		ended++
		if fin.After(end) {
			end = fin
		}
	}
	if ended < replicas {
		end = time.Time{}
	}
	return start, end
}

// endward are the phases a run leaves Running for on its way to an end
// (pkg/controllers/job/state: running.go moves to these, or to Restarting
// and Pending, which a run comes back from).
var endward = map[batch.JobPhase]bool{
	batch.Completing: true, batch.Completed: true, batch.Failed: true,
	batch.Aborting: true, batch.Aborted: true,
	batch.Terminating: true, batch.Terminated: true,
}

// conditionTimes are the start and end of the last run read from the
// job's conditions: its first Running after the last Restarting, and the
// first endward condition after that start; the end falls back to the
// last transition.
//
// The start is read only from a history: Volcano v1.14 appends a condition
// for every status change (job_controller_actions.go: syncJob, killJob
// append newCondition), so the first Running one is when the run began.
// Volcano v1.15 keeps one condition per phase, replaced by each later
// change in that phase (appendJobCondition), so its Running condition is
// the run's last change, often at its very end. A list where some phase
// appears twice is a history; one without may be either, and gives no
// start. The end is right in both: the first endward condition is the
// run's leaving Running, and a finished job's status no longer changes
// (state/finished.go kills with no status update).
func conditionTimes(job *batch.Job) (start, end time.Time) {
	conds := job.Status.Conditions
	history := false
	seen := map[batch.JobPhase]bool{}
	from := 0
	for i, c := range conds {
		history = history || seen[c.Status]
		seen[c.Status] = true
		if c.Status == batch.Restarting {
			from = i + 1
		}
	}
	i := from
	for ; i < len(conds); i++ {
		if conds[i].Status == batch.Running && !condTime(conds[i]).IsZero() {
			if history {
				start = condTime(conds[i])
			}
			break
		}
	}
	if i == len(conds) {
		i = from
	}
	for ; i < len(conds); i++ {
		if endward[conds[i].Status] && !condTime(conds[i]).IsZero() {
			return start, condTime(conds[i])
		}
	}
	return start, job.Status.State.LastTransitionTime.Time
}

// ranPerStatus says the job's conditions show it running.
func ranPerStatus(job *batch.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Status == batch.Running {
			return true
		}
	}
	return false
}

func condTime(c batch.JobCondition) time.Time {
	if c.LastTransitionTime == nil {
		return time.Time{}
	}
	return c.LastTransitionTime.Time
}

// QueueOf is the queue a job's record goes to: its spec.queue, or
// "default" where it has none. Volcano's admission sets it
// (pkg/webhooks/admission/jobs/mutate/mutate_job.go: patchDefaultQueue),
// so only a job created without the webhook lacks one.
func QueueOf(job *batch.Job) string {
	if job.Spec.Queue == "" {
		return "default"
	}
	return job.Spec.Queue
}
