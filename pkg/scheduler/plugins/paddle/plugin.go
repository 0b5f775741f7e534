// Package paddle is the Volcano scheduler plugin for PaddlePaddle jobs:
// role-aware task order (pservers first, trainer 0 first), gang-aware job
// order with aging, pserver/trainer locality, collective packing into few
// nodes and racks, and GPU-topology scoring (NVLink islands) that keeps
// islands whole. Configure it in the scheduler ConfigMap tiers; see
// docs/scheduler-plugin.md.
package paddle

import (
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/framework"

	// NVML link stubs: the scheduler binary links this plugin and Volcano's
	// plugin loader, so it needs them; see internal/nvmlbind.
	_ "github.com/volcano-paddle/volcano-paddle/internal/nvmlbind"
)

// paddlePlugin is the plugin for one session: Volcano calls the builder at
// every session open. What the session's callbacks share is its session
// value; what outlives the session is in the store.
type paddlePlugin struct {
	args  Args
	store *Store
	// session is the open session's state; nil before OnSessionOpen and
	// after OnSessionClose.
	session *session
}

// Builder is the plugin's builder to register under PluginName
// (framework.RegisterPluginBuilder): every plugin it builds keeps what
// outlives its session in store.
func Builder(store *Store) framework.PluginBuilder {
	return func(arguments framework.Arguments) framework.Plugin { return newPlugin(arguments, store) }
}

// newPlugin builds the plugin from its ConfigMap arguments; bad values are
// logged (once per configuration and store) and replaced by defaults, so
// a typo never stops the scheduler.
func newPlugin(arguments framework.Arguments, store *Store) *paddlePlugin {
	a, problems := ParseArgs(arguments)
	store.logProblems(problems)
	return &paddlePlugin{args: a, store: store}
}

func (p *paddlePlugin) Name() string { return PluginName }

func (p *paddlePlugin) OnSessionOpen(ssn *framework.Session) {
	klog.V(5).InfoS("Enter paddle plugin", "args", p.args.String())
	s := newSession(ssn, p.args, p.store)
	p.session = s

	ssn.AddTaskOrderFn(PluginName, s.taskOrderFn)
	ssn.AddJobOrderFn(PluginName, s.jobOrderFn)
	ssn.AddJobValidFn(PluginName, s.jobValidFn)
	ssn.AddBatchNodeOrderFn(PluginName, s.batchNodeOrderFn)
	ssn.AddPredicateFn(PluginName, s.predicateFn)
	ssn.AddEventHandler(s.eventHandler())
	// Before any action asks: no plugin may take an elastic job below its
	// minimum (elastic.go).
	keepElasticMinimum(ssn)
	// Nor stop a checkpointable job its own guards protect (stopping.go).
	s.keepStopGuards()
	// The levers (preemption.go): which gangs may preempt and what they
	// may take. They act only where the preempt or reclaim action runs.
	ssn.AddJobStarvingFns(PluginName, s.jobStarvingFn)
	ssn.AddPreemptableFn(PluginName, s.preemptableFn)
	ssn.AddReclaimableFn(PluginName, s.reclaimableFn)
	// The same for Volcano v1.15's gangPreempt and gangReclaim (the v1.15.1
	// build only: unified_volcano115.go).
	s.addUnifiedEvictableFn(ssn)
	// Plan reservations now, not at the first predicate call: in a full
	// cluster no task passes the allocate action's resource check, so no
	// predicate runs, and the book must still follow the gangs (re-plan,
	// forget gangs that stopped starving). After keepElasticMinimum: what
	// elastic jobs could give back decides which gangs reserve.
	s.reserved = s.reserve()
}

func (p *paddlePlugin) OnSessionClose(*framework.Session) {
	if p.session != nil {
		p.session.explainHolds()
	}
	p.session = nil
}

var _ framework.Plugin = &paddlePlugin{}
