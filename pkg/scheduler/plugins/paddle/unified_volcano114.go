//go:build !volcano_v1_15

package paddle

import "volcano.sh/volcano/pkg/scheduler/framework"

// Volcano v1.14.1 has no gang-aware eviction actions and no
// UnifiedEvictableFn hook: nothing to register (unified_volcano115.go is
// the v1.15.1 build's).
const unifiedEvictableHook = false

func (s *session) addUnifiedEvictableFn(*framework.Session) {}
