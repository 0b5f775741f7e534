package paddlejob

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	scheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// This file is a job's preemption opt-in on its pods: which pods the
// scheduler may take back, written where both Volcano and paddle's
// scheduler plugin read it.
//
// Volcano's preempt and reclaim actions consider a pod only when it is
// preemptable (actions/preempt: Execute, actions/reclaim: reclaimForTask,
// TaskInfo.Preemptable), and Volcano takes a pod without the
// volcano.sh/preemptable annotation or label as preemptable
// (api.GetPodPreemptable). So every pod the plugin creates gets the
// annotation: "true" on the trainers of an elastic job (those above its
// minimum may be taken back; the scheduler plugin never goes below it) and
// on every pod of a job with --checkpointable (it is stopped whole and
// resumes from its checkpoint), "false" on everything else. A job that did
// not opt in is then out of reach of any plugin's victims, paddle's or
// Volcano's own.
//
// A checkpointable job's pods also carry what stopping it costs, for the
// scheduler plugin's guards: its --restart-cost and its spec.maxRetry
// (paddleapi.RestartCostAnnotation, MaxRetryAnnotation); Volcano writes
// the retry count beside them.

// markPreemption writes the pod's opt-in: r is its role task, nil for a
// helper task.
func (l *Layout) markPreemption(pod *v1.Pod, r *RoleTask, job *batch.Job) {
	elasticTrainer := l.Elastic != nil && r != nil && r.Role == paddleapi.RoleTrainer
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[scheduling.PodPreemptable] = strconv.FormatBool(l.Args.Checkpointable || elasticTrainer)
	if l.Args.Checkpointable {
		pod.Labels[paddleapi.CheckpointableLabel] = "true"
		pod.Annotations[paddleapi.RestartCostAnnotation] = l.Args.restartCost().String()
		pod.Annotations[paddleapi.MaxRetryAnnotation] = strconv.Itoa(int(job.Spec.MaxRetry))
	}
}
