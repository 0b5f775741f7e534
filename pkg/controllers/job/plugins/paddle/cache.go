package paddle

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// Volcano builds a fresh plugin for every hook call, and OnPodCreate runs
// once per pod: resolving and validating the layout each time would cost
// O(replicas) per pod. The layout is a pure function of the job spec and the
// arguments, so it is cached per job UID and spec generation.
type layoutEntry struct {
	generation int64
	args       string
	layout     *Layout
	errs       field.ErrorList
}

type layoutCache struct {
	mu      sync.Mutex
	entries map[types.UID]layoutEntry
}

// maxCachedLayouts bounds memory if OnJobDelete is missed (controller
// restarts): past it the cache starts over.
const maxCachedLayouts = 10000

var layouts = &layoutCache{entries: map[types.UID]layoutEntry{}}

func (c *layoutCache) get(job *batch.Job, args []string, compute func() (*Layout, field.ErrorList)) (*Layout, field.ErrorList) {
	if job.UID == "" {
		return compute()
	}
	key := strings.Join(args, "\x00")
	c.mu.Lock()
	e, ok := c.entries[job.UID]
	c.mu.Unlock()
	if ok && e.generation == job.Generation && e.args == key {
		return e.layout, e.errs
	}
	l, errs := compute()
	c.mu.Lock()
	if len(c.entries) >= maxCachedLayouts {
		c.entries = map[types.UID]layoutEntry{}
	}
	c.entries[job.UID] = layoutEntry{generation: job.Generation, args: key, layout: l, errs: errs}
	c.mu.Unlock()
	return l, errs
}

func (c *layoutCache) forget(uid types.UID) {
	c.mu.Lock()
	delete(c.entries, uid)
	c.mu.Unlock()
}
