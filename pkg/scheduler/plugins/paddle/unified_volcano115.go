//go:build volcano_v1_15

package paddle

import (
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"
	"volcano.sh/volcano/pkg/scheduler/plugins/util"
)

// This file exists in the Volcano v1.15.1 build only (build tag
// volcano_v1_15, which the Makefile sets with that release's module file):
// Volcano v1.14.1 has neither the hook nor its types.
//
// Volcano v1.15's gang-aware actions gangPreempt and gangReclaim filter
// their candidates by priority (never a victim of equal or higher
// priority) and queue, then ask only the UnifiedEvictableFns which may go
// (actions/gangpreempt/gangpreempt.go, actions/gangreclaim/gangreclaim.go;
// framework/session_plugins.go: UnifiedEvictable, the same tier walk and
// intersection as Preemptable). paddle answers as its PreemptableFn and
// ReclaimableFn do: it abstains unless one of its levers serves the
// preemptor, and then offers the pods those levers may take; the action
// sizes the eviction itself, bundle by bundle. keepElasticMinimum (run at
// session open) has already marked the pods an elastic job needs for its
// minimum as not preemptable, which both actions check first.

// unifiedEvictableHook: this build registers the hook (tested against
// the Volcano release a test binary links).
const unifiedEvictableHook = true

func (s *session) addUnifiedEvictableFn(ssn *framework.Session) {
	ssn.AddUnifiedEvictableFn(PluginName, s.unifiedEvictableFn)
}

func (s *session) unifiedEvictableFn(ctx *api.EvictionContext, candidates []*api.TaskInfo) ([]*api.TaskInfo, int) {
	if ctx == nil || ctx.Job == nil {
		return nil, util.Abstain
	}
	var otherQueue func(api.QueueID) bool
	switch ctx.Kind {
	case api.EvictionKindGangPreempt:
	case api.EvictionKindGangReclaim:
		otherQueue = s.overused
	default:
		// Task-level eviction goes through preemptableFn and reclaimableFn.
		return nil, util.Abstain
	}
	vp := s.levers(ctx.Job)
	if !vp.shrink && !vp.checkpoint {
		return nil, util.Abstain
	}
	vp.victimQueue = otherQueue
	out := vp.eligible(ctx.Job, candidates)
	if len(out) == 0 {
		// Nothing of paddle's: an empty answer would veto the plugins
		// beside it.
		return nil, util.Abstain
	}
	return out, util.Permit
}
