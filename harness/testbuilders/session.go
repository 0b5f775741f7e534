package testbuilders

import (
	"time"

	v1 "k8s.io/api/core/v1"
	k8sscheduling "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	schedulingv1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
	"volcano.sh/volcano/pkg/scheduler/actions/allocate"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/uthelper"
	"volcano.sh/volcano/pkg/scheduler/util"

	// NVML link stubs: a test binary linking Volcano's scheduler (uthelper)
	// and pkg/gputopology needs them; see internal/nvmlbind.
	_ "github.com/volcano-paddle/volcano-paddle/internal/nvmlbind"
)

// PodGroupWrapper builds a Volcano PodGroup; Obj returns it.
type PodGroupWrapper struct{ schedulingv1.PodGroup }

// MakePodGroup starts an Inqueue PodGroup in queue "default".
func MakePodGroup() *PodGroupWrapper {
	return &PodGroupWrapper{schedulingv1.PodGroup{
		Spec:   schedulingv1.PodGroupSpec{Queue: "default"},
		Status: schedulingv1.PodGroupStatus{Phase: schedulingv1.PodGroupInqueue},
	}}
}

// Obj returns the PodGroup.
func (g *PodGroupWrapper) Obj() *schedulingv1.PodGroup { return &g.PodGroup }

func (g *PodGroupWrapper) Name(name string) *PodGroupWrapper    { g.SetName(name); return g }
func (g *PodGroupWrapper) Namespace(ns string) *PodGroupWrapper { g.SetNamespace(ns); return g }
func (g *PodGroupWrapper) Queue(q string) *PodGroupWrapper      { g.Spec.Queue = q; return g }
func (g *PodGroupWrapper) MinMember(n int32) *PodGroupWrapper   { g.Spec.MinMember = n; return g }

// Pending makes the gang one the enqueue action has not admitted: Pending,
// asking for gpus nvidia.com/gpu in all (Volcano's job controller sets
// minResources from its minMember pods), labelled (the labels its Job
// carried).
func (g *PodGroupWrapper) Pending(gpus int, labels map[string]string) *PodGroupWrapper {
	g.Status.Phase = schedulingv1.PodGroupPending
	g.Spec.MinResources = &v1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(gpus), resource.DecimalSI)}
	g.Labels = labels
	return g
}

// PriorityClass names the gang's PriorityClass (Volcano takes a job's
// priority from it; register the class with SessionWrapper.PriorityClass).
func (g *PodGroupWrapper) PriorityClass(name string) *PodGroupWrapper {
	g.Spec.PriorityClassName = name
	return g
}

// Created sets the creation time (the gang's age).
func (g *PodGroupWrapper) Created(t time.Time) *PodGroupWrapper {
	g.CreationTimestamp = metav1.NewTime(t)
	return g
}

// OwnedByJob makes the PodGroup one a Volcano Job of that name controls, as
// Volcano's job controller creates it.
func (g *PodGroupWrapper) OwnedByJob(name string) *PodGroupWrapper {
	controller := true
	g.OwnerReferences = append(g.OwnerReferences, metav1.OwnerReference{APIVersion: batch.SchemeGroupVersion.String(), Kind: "Job", Name: name, UID: types.UID("uid-" + name), Controller: &controller})
	return g
}

// Condition adds a status condition, as a scheduler wrote it in an earlier
// session.
func (g *PodGroupWrapper) Condition(c schedulingv1.PodGroupCondition) *PodGroupWrapper {
	g.Status.Conditions = append(g.Status.Conditions, c)
	return g
}

// SessionWrapper builds a scheduler session over Volcano's test helper
// (uthelper.TestCommonStruct: a fake cache fed with the objects, the real
// framework.OpenSession and actions).
type SessionWrapper struct {
	test uthelper.TestCommonStruct
	ssn  *framework.Session
}

// MakeSession starts a session named name (uthelper names its fake
// clients by it) with the queue "default" and no plugins.
func MakeSession(name string) *SessionWrapper {
	return &SessionWrapper{test: uthelper.TestCommonStruct{
		Name:    name,
		Plugins: map[string]framework.PluginBuilder{},
		Queues:  []*schedulingv1.Queue{util.BuildQueue("default", 1, nil)},
	}}
}

// Plugin registers the builder of a plugin the tiers name.
func (s *SessionWrapper) Plugin(name string, b framework.PluginBuilder) *SessionWrapper {
	s.test.Plugins[name] = b
	return s
}

func (s *SessionWrapper) Nodes(n ...*v1.Node) *SessionWrapper {
	s.test.Nodes = append(s.test.Nodes, n...)
	return s
}

func (s *SessionWrapper) Pods(p ...*v1.Pod) *SessionWrapper {
	s.test.Pods = append(s.test.Pods, p...)
	return s
}

func (s *SessionWrapper) PodGroups(g ...*schedulingv1.PodGroup) *SessionWrapper {
	s.test.PodGroups = append(s.test.PodGroups, g...)
	return s
}

// HyperNodes sets Volcano's HyperNodes: tier -> names, name -> member
// node names.
func (s *SessionWrapper) HyperNodes(byTier map[int]sets.Set[string], members map[string]sets.Set[string]) *SessionWrapper {
	s.test.HyperNodesSetByTier, s.test.HyperNodes = byTier, members
	return s
}

// Open opens the session with the tiers and configurations; Close ends it.
func (s *SessionWrapper) Open(tiers []conf.Tier, cfgs []conf.Configuration) *framework.Session {
	s.ssn = s.test.RegisterSession(tiers, cfgs)
	return s.ssn
}

// Allocate runs Volcano's allocate action on the open session.
func (s *SessionWrapper) Allocate() {
	s.test.Run([]framework.Action{allocate.New()})
}

// Run runs Volcano actions on the open session, in order (e.g.
// allocate.New(), preempt.New()).
func (s *SessionWrapper) Run(actions ...framework.Action) {
	s.test.Run(actions)
}

// Queue adds a queue of the given weight beside "default".
func (s *SessionWrapper) Queue(name string, weight int32) *SessionWrapper {
	s.test.Queues = append(s.test.Queues, util.BuildQueue(name, weight, nil))
	return s
}

// QueueAnnotation sets an annotation of a queue already there ("default"
// or one Queue added).
func (s *SessionWrapper) QueueAnnotation(queue, key, value string) *SessionWrapper {
	for _, q := range s.test.Queues {
		if q.Name == queue {
			if q.Annotations == nil {
				q.Annotations = map[string]string{}
			}
			q.Annotations[key] = value
			return s
		}
	}
	panic("testbuilders: no queue " + queue)
}

// PriorityClass adds a PriorityClass of the given value to the cluster.
func (s *SessionWrapper) PriorityClass(name string, value int32) *SessionWrapper {
	s.test.PriClass = append(s.test.PriClass, &k8sscheduling.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value})
	return s
}

// Close ends the session (plugins' OnSessionClose run).
func (s *SessionWrapper) Close() { s.test.Close() }
