package paddle

import (
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// Volcano builds a fresh plugin for every hook call, and OnPodCreate runs
// once per pod: resolving and validating the layout each time would cost
// O(replicas) per pod. The layout is a pure function of the job spec and the
// arguments, so it is cached per job UID and spec generation.
type layoutEntry struct {
	generation int64
	args       string
	layout     *paddlejob.Layout
	err        error
}

type layoutCache struct {
	mu      sync.Mutex
	entries map[types.UID]layoutEntry
}

// maxCachedLayouts bounds memory if OnJobDelete is missed (controller
// restarts): past it the cache starts over.
const maxCachedLayouts = 10000

var layouts = &layoutCache{entries: map[types.UID]layoutEntry{}}

func (c *layoutCache) get(job *batch.Job, args []string, compute func() (*paddlejob.Layout, error)) (*paddlejob.Layout, error) {
	if job.UID == "" {
		return compute()
	}
	key := strings.Join(args, "\x00")
	c.mu.Lock()
	e, ok := c.entries[job.UID]
	c.mu.Unlock()
	if ok && e.generation == job.Generation && e.args == key {
		return e.layout, e.err
	}
	l, err := compute()
	c.mu.Lock()
	if len(c.entries) >= maxCachedLayouts {
		c.entries = map[types.UID]layoutEntry{}
	}
	c.entries[job.UID] = layoutEntry{generation: job.Generation, args: key, layout: l, err: err}
	c.mu.Unlock()
	return l, err
}

func (c *layoutCache) forget(uid types.UID) {
	c.mu.Lock()
	delete(c.entries, uid)
	c.mu.Unlock()
}

// layoutCacheArgs extends the layout cache key (cache.go keys on UID,
// generation and arguments) with every task's replicas: while a resize is
// held, the controller resolves the recorded sizes under the same
// generation as the new spec, and the restart that applies the new sizes
// must not get the held layout back from the cache.
func layoutCacheArgs(raw []string, job *batch.Job) []string {
	var b strings.Builder
	b.WriteString("\x00replicas")
	for i := range job.Spec.Tasks {
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(int(job.Spec.Tasks[i].Replicas)))
	}
	return append(raw[:len(raw):len(raw)], b.String())
}
