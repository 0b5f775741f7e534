// Package paddle is the Volcano scheduler plugin for PaddlePaddle jobs:
// role-aware task order (pservers first, trainer 0 first), gang-aware job
// order with aging, pserver/trainer locality, collective packing into few
// nodes and racks, and GPU-topology scoring (NVLink islands) that keeps
// islands whole. Configure it in the scheduler ConfigMap tiers; see
// docs/scheduler-plugin.md.
package paddle

import (
	"sync"

	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"

	// NVML link stubs: the scheduler binary links this plugin and Volcano's
	// plugin loader, so it needs them; see internal/nvmlbind.
	_ "github.com/volcano-paddle/volcano-paddle/internal/nvmlbind"
)

// PluginName is the name in the scheduler ConfigMap.
const PluginName = "paddle"

type paddlePlugin struct {
	args Args

	// Per session (a plugin value is built for each session).
	ssn          *framework.Session
	state        *sessionState
	blockersOnce *sync.Once
	blockers     map[api.QueueID]*api.JobInfo
	reserveOnce  *sync.Once
	reserved     *sessionReservations
	victimsOnce  *sync.Once
	victimJobsOf *victimJobs
	waitersOnce  *sync.Once
	waiters      map[api.QueueID]*api.JobInfo
	headroomOnce *sync.Once
	headroom     clusterGPUs
}

// New builds the plugin from its ConfigMap arguments; bad values are logged
// and replaced by defaults, so a typo never stops the scheduler.
func New(arguments framework.Arguments) framework.Plugin {
	a, problems := ParseArgs(arguments)
	logProblems(problems)
	return &paddlePlugin{args: a}
}

func init() {
	framework.RegisterPluginBuilder(PluginName, New)
}

func (p *paddlePlugin) Name() string { return PluginName }

func (p *paddlePlugin) OnSessionOpen(ssn *framework.Session) {
	klog.V(5).InfoS("Enter paddle plugin", "args", p.args.String())
	p.ssn = ssn
	p.state = newSessionState(ssn, p.args)
	p.blockersOnce = &sync.Once{}
	p.reserveOnce = &sync.Once{}
	p.victimsOnce = &sync.Once{}
	p.waitersOnce = &sync.Once{}
	p.headroomOnce = &sync.Once{}

	ssn.AddTaskOrderFn(p.Name(), p.taskOrderFn)
	ssn.AddJobOrderFn(p.Name(), p.jobOrderFn)
	ssn.AddJobValidFn(p.Name(), p.jobValidFn)
	ssn.AddBatchNodeOrderFn(p.Name(), p.batchNodeOrderFn)
	ssn.AddPredicateFn(p.Name(), p.predicateFn)
	ssn.AddEventHandler(p.state.eventHandler())
	// Before any action asks: no plugin may take an elastic job below its
	// minimum (elastic.go).
	keepElasticMinimum(ssn)
	// The levers (preemption.go): which gangs may preempt and what they
	// may take. They act only where the preempt or reclaim action runs.
	ssn.AddJobStarvingFns(p.Name(), p.jobStarvingFn)
	ssn.AddPreemptableFn(p.Name(), p.preemptableFn)
	ssn.AddReclaimableFn(p.Name(), p.reclaimableFn)
	// The same for Volcano v1.15's gangPreempt and gangReclaim (the v1.15.1
	// build only: unified_volcano115.go).
	p.addUnifiedEvictableFn(ssn)
	// Plan reservations now, not at the first predicate call: in a full
	// cluster no task passes the allocate action's resource check, so no
	// predicate runs, and the book must still follow the gangs (re-plan,
	// forget gangs that stopped starving).
	p.reservations()
}

func (p *paddlePlugin) OnSessionClose(ssn *framework.Session) {
	p.ssn, p.state, p.blockers, p.reserved, p.victimJobsOf, p.waiters = nil, nil, nil, nil, nil, nil
}

// predicateFn keeps tasks off what the starvation guard reserved
// (reservation.go) and elastic growth off GPUs a gang waits for
// (elastic.go).
func (p *paddlePlugin) predicateFn(task *api.TaskInfo, node *api.NodeInfo) error {
	if err := p.reservationPredicate(task, node); err != nil {
		return err
	}
	return p.growthPredicate(task, node)
}
