package paddleapi

import (
	"strconv"
	"time"
)

// What a checkpointable job tells the scheduler plugin about the price of
// stopping it, written by the job plugin on every pod of a
// --checkpointable job (beside CheckpointableLabel) and read by the
// scheduler plugin before it offers the job as a victim.
const (
	// RestartCostAnnotation is the job's --restart-cost, a Go duration
	// ("10m"): the run time a preemption throws away (the steps since the
	// last checkpoint, loading it, re-forming the ring). The scheduler
	// plugin never stops a job that has run less than this since it
	// (re)started, and stops it only for a gang that has waited at least
	// this long.
	RestartCostAnnotation = "paddle.volcano.sh/restart-cost"
	// MaxRetryAnnotation is the job's spec.maxRetry. Volcano counts every
	// restart in status.retryCount and fails the job once a restart brings
	// it to maxRetry (controllers/job/state/restarting.go:
	// restartingUpdateStatus), so the scheduler plugin never stops a job
	// whose next restart would do that.
	MaxRetryAnnotation = "paddle.volcano.sh/max-retry"
	// RetryCountAnnotation is Volcano's own: its job controller writes the
	// job's status.retryCount on every pod it creates
	// (batch.JobRetryCountKey, controllers/job/job_controller_util.go:
	// createJobPod; a test of the scheduler plugin checks the two agree).
	RetryCountAnnotation = "volcano.sh/job-retry-count"
)

// DefaultRestartCost is the restart cost of a checkpointable job that does
// not declare one: a checkpoint every ten minutes loses five on average,
// plus the restart itself.
const DefaultRestartCost = 5 * time.Minute

// MaxRestartCost bounds --restart-cost: a job that loses more than a day
// of work per preemption should not be checkpointable.
const MaxRestartCost = 24 * time.Hour

// RestartCostOf reads a pod's RestartCostAnnotation; DefaultRestartCost
// when it is absent or not a duration within (0, MaxRestartCost].
func RestartCostOf(annotations map[string]string) time.Duration {
	d, err := time.ParseDuration(annotations[RestartCostAnnotation])
	if err != nil || d <= 0 || d > MaxRestartCost {
		return DefaultRestartCost
	}
	return d
}

// RetryCountOf is the job's restarts so far, from a pod's
// RetryCountAnnotation (0 when absent: a pod Volcano did not create).
func RetryCountOf(annotations map[string]string) int {
	n, err := strconv.Atoi(annotations[RetryCountAnnotation])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// RestartsLeft is how many more times a job may restart before Volcano
// fails it, read from a pod's annotations: maxRetry - retryCount - 1
// (the restart that reaches maxRetry fails the job). ok is false when the
// pod does not carry the job's maxRetry; a scheduler then knows no bound
// of the job's own.
func RestartsLeft(annotations map[string]string) (left int, ok bool) {
	maxRetry, err := strconv.Atoi(annotations[MaxRetryAnnotation])
	if err != nil || maxRetry < 0 {
		return 0, false
	}
	return max(0, maxRetry-RetryCountOf(annotations)-1), true
}
