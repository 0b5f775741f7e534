package paddle

import (
	"testing"

	"volcano.sh/volcano/pkg/scheduler/framework"
)

// A scheduler linked against a Volcano that has the gang-aware eviction
// actions (v1.15) must register their hook, or gangPreempt and gangReclaim
// would evict without asking paddle: a build of that release without the
// Makefile's tag volcano_v1_15 fails here. (The test binary registers
// Volcano's actions through the harness's blank import of its actions
// package, as the scheduler binary does.)
func TestUnifiedEvictableHookMatchesRelease(t *testing.T) {
	_, gangAware := framework.GetAction("gangpreempt")
	if unifiedEvictableHook != gangAware {
		t.Errorf("Volcano has the gangpreempt action: %t; paddle registers UnifiedEvictableFn: %t (build the v1.15.1 module file with -tags=volcano_v1_15, as the Makefile does)",
			gangAware, unifiedEvictableHook)
	}
}
