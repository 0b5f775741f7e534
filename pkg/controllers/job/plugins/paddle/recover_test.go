package paddle

import (
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	pluginsinterface "volcano.sh/volcano/pkg/controllers/job/plugins/interface"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// panicking panics in every hook, like a bug on one job's input would.
type panicking struct{}

func (panicking) Name() string                          { return paddlejob.PluginName }
func (panicking) OnPodCreate(*v1.Pod, *batch.Job) error { var s []int; _ = s[3]; return nil }
func (panicking) OnJobAdd(*batch.Job) error             { panic("boom") }
func (panicking) OnJobDelete(*batch.Job) error          { panic(errors.New("boom")) }
func (panicking) OnJobUpdate(job *batch.Job) error {
	n := int(job.Spec.MinAvailable) - 1<<40 // makeslice: len out of range
	_ = make([]string, n)
	return nil
}

// A panic in a hook is recovered for that job alone: the hook returns an
// error (so Volcano creates nothing for the job and retries it), the job
// gets a Warning event, and the calling goroutine, Volcano's worker, lives.
func TestRecoveringHooks(t *testing.T) {
	client := fake.NewSimpleClientset()
	job := newJob("ml", "wd", nil, testbuilders.PaddleTask{Name: "worker", Replicas: 1})
	build := Recovering(func(pluginsinterface.PluginClientset, []string) pluginsinterface.PluginInterface { return panicking{} })
	p := build(pluginsinterface.PluginClientset{KubeClients: client}, nil)
	hooks := map[string]func() error{
		"OnPodCreate": func() error { return p.OnPodCreate(newPod(job, 0, 0), job) },
		"OnJobAdd":    func() error { return p.OnJobAdd(job) },
		"OnJobDelete": func() error { return p.OnJobDelete(job) },
		"OnJobUpdate": func() error { return p.OnJobUpdate(job) },
	}
	for name, call := range hooks {
		err := call()
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Hook != name || pe.Job != "ml/wd" {
			t.Errorf("%s: err = %v, want a PanicError for ml/wd", name, err)
			continue
		}
		if !strings.Contains(err.Error(), "other jobs are not affected") {
			t.Errorf("%s: message %q", name, err)
		}
	}
	waitEvent(t, client, PanicReason, "internal error in OnJobAdd for job ml/wd (boom)")

	// A builder that panics gives a plugin whose hooks report it.
	p = Recovering(func(pluginsinterface.PluginClientset, []string) pluginsinterface.PluginInterface { panic("bad args") })(
		pluginsinterface.PluginClientset{KubeClients: client}, nil)
	if err := p.OnJobAdd(job); err == nil || !strings.Contains(err.Error(), "bad args") {
		t.Errorf("panicking builder: %v", err)
	}
	// nil job: no event, no second panic.
	if err := p.OnJobUpdate(nil); err == nil {
		t.Error("nil job: no error")
	}
}

// The registered builder is the recovering one, and errors of the plugin
// pass through it unchanged.
func TestRegisteredPluginRecovers(t *testing.T) {
	job := newJob("ml", "wd", []string{"--gloo=9"}, testbuilders.PaddleTask{Name: "ps", Replicas: 1}, testbuilders.PaddleTask{Name: "worker", Replicas: 1})
	p := plugin(t, fake.NewSimpleClientset(), job)
	if _, ok := p.(*recoveringPlugin); !ok {
		t.Fatalf("registered plugin is %T, want the recovering wrapper", p)
	}
	var inv *paddlejob.InvalidJobError
	if err := p.OnJobAdd(job); !errors.As(err, &inv) {
		t.Errorf("OnJobAdd = %v, want the paddlejob.InvalidJobError", err)
	}
}
