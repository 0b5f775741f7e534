package paddle_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	"volcano.sh/volcano/pkg/controllers/job/plugins"
	pluginsinterface "volcano.sh/volcano/pkg/controllers/job/plugins/interface"

	"github.com/volcano-paddle/volcano-paddle/harness/admissiontest"
	jobplugin "github.com/volcano-paddle/volcano-paddle/pkg/controllers/job/plugins/paddle"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
	webhook "github.com/volcano-paddle/volcano-paddle/pkg/webhooks/paddle"
)

// fuzzSeeds are whole Job specs as users (and hostile users) write them.
var fuzzSeeds = []string{
	`{"metadata":{"name":"wd"},"spec":{"minAvailable":4,"plugins":{"paddle":["--gloo=1"]},"tasks":[
	  {"name":"ps","replicas":2,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"paddle","image":"paddle","command":["sh","-c","exec python train.py"]}]}}},
	  {"name":"worker","replicas":2,"policies":[{"event":"TaskCompleted","action":"CompleteJob"}],"template":{"spec":{"containers":[{"name":"paddle","image":"paddle"}]}}}]}}`,
	`{"metadata":{"name":"resnet"},"spec":{"minAvailable":2,"plugins":{"paddle":[]},"tasks":[
	  {"name":"trainer","replicas":2,"template":{"spec":{"containers":[{"name":"paddle","image":"paddle","resources":{"limits":{"nvidia.com/gpu":"8"},"requests":{"nvidia.com/gpu":"8"}}}]}}}]}}`,
	`{"metadata":{"name":"ctr"},"spec":{"plugins":{"paddle":["--port=30236"]},"tasks":[
	  {"name":"pserver","replicas":2,"template":{"spec":{"containers":[{"name":"p","image":"i","env":[{"name":"POD_IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}},{"name":"PADDLE_PORT","value":"30236"}]}]}}},
	  {"name":"trainer","replicas":2,"template":{"spec":{"containers":[{"name":"p","image":"i","env":[{"name":"PADDLE_TRAINERS_NUM","value":"2"}]}]}}}]}}`,
	`{"metadata":{"name":"heter"},"spec":{"plugins":{"paddle":["--heter-device=gpu","--barrier=false"]},"tasks":[
	  {"name":"ps","replicas":1,"template":{"spec":{"containers":[{"name":"p","image":"i"}]}}},
	  {"name":"worker","replicas":3,"template":{"spec":{"containers":[{"name":"p","image":"i"}]}}},
	  {"name":"heter","replicas":1,"template":{"spec":{"hostname":"h","containers":[{"name":"p","image":"i","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}]}}`,
	`{"metadata":{"name":"1paddle"},"spec":{"plugins":{"paddle":["--port=1","--port=2"]},"tasks":[{"name":"worker","replicas":2147483647,"template":{"spec":{"containers":[{"name":"p","image":"i","resources":{"limits":{"nvidia.com/gpu":"1e18"}}}]}}}]}}`,
	`{"metadata":{"name":"g"},"spec":{"plugins":{"paddle":["--mode=ps"]},"tasks":[{"name":"worker","replicas":-1,"template":{"spec":{"containers":[{"name":"p","image":"i","resources":{"requests":{"nvidia.com/gpu":"-3"}}}]}}},{"name":"ps","replicas":0}]}}`,
}

// FuzzAdmission drives the admission and the controller's plugin with
// whole Job specs (names, arguments, replicas, resources, env, policies).
// Nothing may panic, the webhook and the controller must agree on every
// job, the mutating patch must apply, and a resize reaching the controller
// must never fail its sync. `make test` runs the seeds; run longer with
//
//	go test ./pkg/controllers/job/plugins/paddle -run '^$' -fuzz FuzzAdmission -fuzztime 10m
//
// It lives beside the plugin, the one package allowed to import it besides
// the cmd/ mains; review and applyPatch are the webhook tests' own
// (pkg/webhooks/paddle/admit_test.go).
func FuzzAdmission(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add([]byte(s), byte(i))
	}
	f.Fuzz(func(t *testing.T, spec []byte, resize byte) {
		var job batch.Job
		if json.Unmarshal(spec, &job) != nil {
			return
		}
		job.TypeMeta = metav1.TypeMeta{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job"}
		job.Namespace = "ml"
		create := admissiontest.JobReview(admissionv1.Create, &job, nil)
		resp := webhook.Admit(context.Background(), create)
		if resp == nil {
			t.Fatal("nil admission response")
		}
		if !resp.Allowed && resp.Result != nil && resp.Result.Code == 422 && (resp.Result.Details == nil || len(resp.Result.Details.Causes) == 0) {
			t.Fatalf("Invalid without causes: %+v", resp.Result)
		}

		mresp := webhook.Mutate(context.Background(), create)
		if !mresp.Allowed {
			t.Fatalf("mutating admission denied: %+v", mresp.Result)
		}
		if mresp.Patch != nil {
			patched := admissiontest.ApplyPatch(t, &job, mresp.Patch)
			if r := webhook.Admit(context.Background(), admissiontest.JobReview(admissionv1.Create, patched, nil)); r.Allowed != resp.Allowed {
				t.Fatalf("the default changed the verdict: %v -> %v", resp.Allowed, r.Allowed)
			}
		}

		if _, uses := job.Spec.Plugins[paddlejob.PluginName]; !uses {
			return
		}
		// The controller's view of the same job.
		job.UID = types.UID(fmt.Sprintf("uid-%x", spec))
		job.Generation = 1
		job.Status.ControlledResources = map[string]string{}
		client := fake.NewSimpleClientset()
		pb, _ := plugins.GetPluginBuilder(paddlejob.PluginName)
		plugin := func() pluginsinterface.PluginInterface {
			return pb(pluginsinterface.PluginClientset{KubeClients: client}, job.Spec.Plugins[paddlejob.PluginName])
		}
		err := plugin().OnJobAdd(&job)
		var pe *jobplugin.PanicError
		if errors.As(err, &pe) {
			t.Fatalf("a hook panicked: %v", err)
		}
		if resp.Allowed != (err == nil) {
			t.Fatalf("webhook allowed=%v but controller OnJobAdd: %v", resp.Allowed, err)
		}
		if err != nil {
			return
		}
		for ti := range job.Spec.Tasks {
			ts := &job.Spec.Tasks[ti]
			for _, idx := range []int32{0, ts.Replicas - 1} {
				if idx < 0 {
					continue
				}
				pod := podOf(&job, ti, int(idx))
				if err := plugin().OnPodCreate(pod, &job); err != nil {
					t.Fatalf("OnPodCreate %s of an accepted job: %v", pod.Name, err)
				}
			}
		}
		// A resize of a Paddle role reaching the controller is held, never
		// refused.
		s, _ := paddlejob.Read(&job)
		args := s.Args
		layout, _ := paddlejob.ValidateJob(&job, args)
		edited := job.DeepCopy()
		edited.Generation++
		for _, r := range []*paddlejob.RoleTask{layout.PServer, layout.Trainer, layout.Heter} {
			if r != nil {
				edited.Spec.Tasks[r.TaskIndex].Replicas += int32(resize%5) - 2
			}
		}
		if err := plugin().OnJobUpdate(edited); err != nil {
			t.Fatalf("OnJobUpdate after a resize: %v", err)
		}
		for _, e := range paddlejob.ValidateUpdate(&job, edited, args) {
			if e.Type == field.ErrorTypeForbidden {
				t.Fatalf("the held job still differs from its running size: %v", e)
			}
		}
	})
}

// podOf builds a pod of a task as Volcano's createJobPod does.
func podOf(job *batch.Job, ti, index int) *v1.Pod {
	ts := job.Spec.Tasks[ti]
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%s-%d", job.Name, ts.Name, index),
			Namespace: job.Namespace,
			Labels:    map[string]string{batch.JobNameKey: job.Name, batch.TaskSpecKey: ts.Name},
			Annotations: map[string]string{
				batch.TaskSpecKey: ts.Name, batch.TaskIndex: strconv.Itoa(index), batch.JobNameKey: job.Name,
				batch.JobVersion: strconv.Itoa(int(job.Status.Version)),
			},
		},
		Spec: *ts.Template.Spec.DeepCopy(),
	}
}
