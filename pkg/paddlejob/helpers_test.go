package paddlejob

import (
	"fmt"
	"strconv"

	v1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
)

// The builders of the job plugin's tests (pkg/controllers/job/plugins/paddle:
// helpers_test.go, elastic_test.go), for the tests of this package.

type taskSpec struct {
	name     string
	replicas int32
	gpus     int64
	env      []v1.EnvVar
}

var uidSeq int

// newJob builds a Volcano Job the way users write them (testbuilders);
// every call gets a fresh UID.
func newJob(ns, name string, args []string, tasks ...taskSpec) *batch.Job {
	uidSeq++
	w := testbuilders.MakeJob(ns, name).UID(fmt.Sprintf("uid-%d", uidSeq)).Plugin(PluginName, args...)
	for _, t := range tasks {
		w.Task(testbuilders.MakeTask(t.name, t.replicas).GPUs(t.gpus).Env(t.env...))
	}
	return w.Obj()
}

// elasticJob is collective job name in ml with a worker task of replicas
// pods, minAvailable lo and the plugin arguments --elastic-max=hi plus
// extra.
func elasticJob(name string, lo, replicas, hi int32, extra ...string) *batch.Job {
	args := append([]string{"--elastic-max=" + strconv.Itoa(int(hi))}, extra...)
	job := newJob("ml", name, args, taskSpec{name: "worker", replicas: replicas, gpus: 1})
	job.Spec.Tasks[0].MinAvailable = &lo
	job.Spec.MinAvailable = lo
	job.Spec.Queue = "default"
	return job
}
