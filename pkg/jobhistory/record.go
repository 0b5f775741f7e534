// Package jobhistory is a cluster's history of finished jobs: Record, one
// finished job as it ran, its CSV format (csv.go: Write, Read; Read also
// takes Microsoft's Philly trace), and FromJob (fromjob.go), the mapping
// from a finished Volcano Job and its pods to a Record that
// `paddle-replay export` applies to every job of a cluster.
//
// It is pure: API types only, no client. The listing lives with the
// command (internal/historyexport); docs/paddle-replay.md is the user's
// description of the format and of which jobs are exported.
package jobhistory

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Mode is how a job trains, as the replay needs it.
type Mode string

const (
	// ModeUnknown: a plain Volcano job (no paddle plugin), or a trace
	// that does not say.
	ModeUnknown Mode = ""
	// ModeCollective: trainers only (paddleapi.ModeCollective).
	ModeCollective Mode = "collective"
	// ModePS: parameter servers and trainers (paddleapi.ModePS).
	ModePS Mode = "ps"
)

// TimesFrom says where a record's start and end came from.
type TimesFrom string

const (
	// TimesFromPods: the trainer pods' start and their containers'
	// finish, second-precise as the kubelet wrote them.
	TimesFromPods TimesFrom = "pods"
	// TimesFromStatus: the Volcano Job's status conditions (its pods were
	// gone): the job's entry into Running and its leaving it.
	TimesFromStatus TimesFrom = "status"
	// TimesFromMixed: the start from the pods, the end from the status
	// (pods deleted before they ended, as Volcano deletes running pods
	// when it fails or terminates a job).
	TimesFromMixed TimesFrom = "mixed"
)

// Record is one finished job as it ran.
type Record struct {
	// SubmitTime is when the job was created (its creationTimestamp).
	SubmitTime time.Time
	// Duration is how long it ran: from its first trainer pod's start to
	// its end (fromjob.go says which times exactly).
	Duration time.Duration
	// Pods and GPUsPerPod are the shape of its trainers: the task that
	// requests GPUs (the trainer task of a Paddle job, also of a PS job).
	// Both are 0 in a record whose shape is unknown (a Philly row: GPUs
	// holds its size, and the replay draws the shape).
	Pods, GPUsPerPod int
	// GPUs is the job's GPUs when its shape is unknown (Pods is 0), 0
	// otherwise; TotalGPUs answers for both.
	GPUs int
	// Queue is the Volcano queue; Namespace the job's namespace ("" when
	// unknown). Philly rows carry their virtual cluster in both.
	Queue, Namespace string
	Mode             Mode
	// MinPods and MaxPods are the elastic range of the trainers; both
	// equal Pods for a job that is not elastic (0 for unknown shapes).
	MinPods, MaxPods int
	// Checkpointable: the job resumes from its checkpoints (the paddle
	// plugin's --checkpointable), so a scheduler may stop it.
	Checkpointable bool

	// The columns after the ten the replay needs.

	// PServers is the number of parameter servers of a ps job, else 0.
	PServers int
	// Start is when its first trainer pod started (zero when unknown);
	// Start+Duration is its end, Start-SubmitTime the wait it had.
	Start time.Time
	// Phase is the Volcano phase it ended in: Completed, Failed or
	// Terminated ("" when unknown).
	Phase string
	// Restarts is how often Volcano restarted it (status.retryCount); the
	// record is of its last run.
	Restarts int
	// TimesFrom says where Start and the end were read.
	TimesFrom TimesFrom
	// Name is the job's name ("" when left out).
	Name string
}

// Shaped says the record knows its pod shape (Pods and GPUsPerPod).
func (r Record) Shaped() bool { return r.Pods > 0 }

// TotalGPUs is the GPUs the job's trainers held.
func (r Record) TotalGPUs() int {
	if r.Shaped() {
		return r.Pods * r.GPUsPerPod
	}
	return r.GPUs
}

// End is when the job ended; zero when its start is unknown.
func (r Record) End() time.Time {
	if r.Start.IsZero() {
		return time.Time{}
	}
	return r.Start.Add(r.Duration)
}

// Bounds of the numbers a record may hold: far above any cluster, low
// enough that Pods*GPUsPerPod and a duration in nanoseconds never overflow.
const (
	maxPods        = 1_000_000
	maxGPUsPerPod  = 10_000
	maxPServers    = 1_000_000
	maxRestarts    = 1_000_000_000
	maxDurationSec = 100 * 365 * 24 * 3600 // a century; time.Duration holds 292 years
)

// FieldError is a value a record cannot hold: the column it is written
// in, the value, what is wrong and how to fix it.
type FieldError struct {
	Column  string
	Value   string
	Problem string
	Fix     string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("column %s: %q %s; %s", e.Column, e.Value, e.Problem, e.Fix)
}

// fixes say how to write each column right; errors of Read and Write end
// with them.
var fixes = map[string]string{
	colSubmitTime:     "write an RFC 3339 time such as 2024-05-01T12:00:00Z",
	colDuration:       "write the run time in seconds, above 0, such as 3600 or 1.5",
	colPods:           "write the number of trainer pods, at least 1",
	colGPUsPerPod:     "write the GPUs each trainer pod requests, at least 1 (jobs without GPUs are not part of a history)",
	colQueue:          "write the Volcano queue the job ran in (default for Volcano's default queue)",
	colMode:           "write collective, ps, or leave it empty when unknown",
	colMinPods:        "leave min_pods and max_pods empty for a job that is not elastic, or write 1 <= min_pods <= pods <= max_pods",
	colMaxPods:        "leave min_pods and max_pods empty for a job that is not elastic, or write 1 <= min_pods <= pods <= max_pods",
	colCheckpointable: "write true or false (empty: false)",
	colPServers:       "write the parameter servers of a ps job (0 or empty for other modes)",
	colStartTime:      "write an RFC 3339 time such as 2024-05-01T12:00:00Z, or leave it empty when unknown",
	colRestarts:       "write how often the job was restarted, 0 or more (empty: 0)",
	colTimesFrom:      "write pods, status, mixed, or leave it empty",
}

func fieldErr(col, value, problem string) *FieldError {
	return &FieldError{Column: col, Value: value, Problem: problem, Fix: fixes[col]}
}

// Validate checks that a record can be written in the history format: the
// same checks Read makes of every row, so that what Write writes Read
// reads. A record of unknown shape (a Philly row) is refused.
func (r Record) Validate() error {
	if r.SubmitTime.IsZero() {
		return fieldErr(colSubmitTime, "", "is missing")
	}
	if s := r.Duration.Seconds(); r.Duration <= 0 || s > maxDurationSec {
		return fieldErr(colDuration, formatSeconds(r.Duration), fmt.Sprintf("is not in (0, %d]", maxDurationSec))
	}
	if r.Pods < 1 || r.Pods > maxPods {
		e := fieldErr(colPods, fmt.Sprint(r.Pods), fmt.Sprintf("is not in [1, %d]", maxPods))
		if r.Pods == 0 && r.GPUs > 0 {
			e.Fix = "a record of unknown pod shape (a Philly row) has no place in this format: give it pods and gpus_per_pod"
		}
		return e
	}
	if r.GPUsPerPod < 1 || r.GPUsPerPod > maxGPUsPerPod {
		return fieldErr(colGPUsPerPod, fmt.Sprint(r.GPUsPerPod), fmt.Sprintf("is not in [1, %d]", maxGPUsPerPod))
	}
	if r.GPUs != 0 {
		return &FieldError{Column: colGPUsPerPod, Value: fmt.Sprint(r.GPUs), Problem: "is a total of GPUs beside a pod shape",
			Fix: "leave GPUs 0 in a record with Pods and GPUsPerPod (TotalGPUs is their product)"}
	}
	if r.Queue == "" {
		return fieldErr(colQueue, "", "is empty")
	}
	switch r.Mode {
	case ModeUnknown, ModeCollective, ModePS:
	default:
		return fieldErr(colMode, string(r.Mode), "is not a mode")
	}
	if r.MinPods < 1 || r.MinPods > r.Pods {
		return fieldErr(colMinPods, fmt.Sprint(r.MinPods), fmt.Sprintf("is not in [1, pods=%d]", r.Pods))
	}
	if r.MaxPods < r.Pods || r.MaxPods > maxPods {
		return fieldErr(colMaxPods, fmt.Sprint(r.MaxPods), fmt.Sprintf("is not in [pods=%d, %d]", r.Pods, maxPods))
	}
	if r.PServers < 0 || r.PServers > maxPServers {
		return fieldErr(colPServers, fmt.Sprint(r.PServers), fmt.Sprintf("is not in [0, %d]", maxPServers))
	}
	if r.PServers > 0 && r.Mode != ModePS {
		return fieldErr(colPServers, fmt.Sprint(r.PServers), fmt.Sprintf("is set for mode %q", r.Mode))
	}
	if r.Restarts < 0 || r.Restarts > maxRestarts {
		return fieldErr(colRestarts, fmt.Sprint(r.Restarts), fmt.Sprintf("is not in [0, %d]", maxRestarts))
	}
	switch r.TimesFrom {
	case "", TimesFromPods, TimesFromStatus, TimesFromMixed:
	default:
		return fieldErr(colTimesFrom, string(r.TimesFrom), "is not a source of times")
	}
	return nil
}

// formatSeconds writes d in seconds, exact to the nanosecond (a float's
// 53 bits hold nanoseconds for only 104 days), without trailing zeros.
func formatSeconds(d time.Duration) string {
	if d < 0 {
		return fmtFloat(d.Seconds()) // only ever shown in an error
	}
	s := strconv.FormatInt(int64(d/time.Second), 10)
	if ns := int64(d % time.Second); ns != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%09d", ns), "0")
	}
	return s
}

// secondsToDuration is s seconds to the nanosecond; s is finite and in
// range (checked by the caller).
func secondsToDuration(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}
