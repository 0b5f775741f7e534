package testbuilders

import (
	"fmt"
	"strconv"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// PaddleTask is a task of a Paddle job as the job plugin's tests write it.
type PaddleTask struct {
	Name     string
	Replicas int32
	GPUs     int64
	Env      []v1.EnvVar
}

var paddleJobs atomic.Int64

// PaddleJob builds a Volcano Job with the paddle job plugin and its
// arguments, the way users write them; every call gets a fresh UID (the job
// plugin caches layouts per UID and generation).
func PaddleJob(ns, name string, args []string, tasks ...PaddleTask) *batch.Job {
	w := MakeJob(ns, name).UID(fmt.Sprintf("uid-%d", paddleJobs.Add(1))).Plugin(paddleapi.PluginName, args...)
	for _, t := range tasks {
		w.Task(MakeTask(t.Name, t.Replicas).GPUs(t.GPUs).Env(t.Env...))
	}
	return w.Obj()
}

// ElasticPaddleJob is collective job name in namespace ml with a worker task
// of replicas pods of one GPU, minAvailable lo, queue default and the
// plugin arguments --elastic-max=hi plus extra.
func ElasticPaddleJob(name string, lo, replicas, hi int32, extra ...string) *batch.Job {
	args := append([]string{"--elastic-max=" + strconv.Itoa(int(hi))}, extra...)
	job := PaddleJob("ml", name, args, PaddleTask{Name: "worker", Replicas: replicas, GPUs: 1})
	job.Spec.Tasks[0].MinAvailable = &lo
	job.Spec.MinAvailable = lo
	job.Spec.Queue = "default"
	return job
}
