package paddle

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"volcano.sh/volcano/pkg/scheduler/api"
	"volcano.sh/volcano/pkg/scheduler/framework"
)

// gangEstimate says whether the pods a gang still needs fit on the nodes'
// free resources right now, placed greedily. It looks at resources and node
// selectors only (not taints or affinities), so it is an estimate used to
// order gangs and to explain why one waits, never to reject a placement.
type gangEstimate struct {
	needed    int // pods the gang still needs to reach minAvailable
	placeable int // of those, how many fit on free resources now
	// missing are those pods, in allocation order (missingPods); gpus is
	// what they request.
	missing []*api.TaskInfo
	gpus    int
	// feasible: the gang would fit on the cluster's allocatable resources
	// if it were empty (a gang that can never fit must not hold others back).
	feasible bool
	// short describes, per task spec, what is missing.
	short []string
}

func (f *gangEstimate) fitsNow() bool { return f.placeable >= f.needed }

// estimateGang places the gang's missing pods, pservers first, on copies of
// the nodes' idle (and, for feasibility, allocatable) resources.
func estimateGang(ssn *framework.Session, job *api.JobInfo, nodes []*api.NodeInfo, fallback bool) *gangEstimate {
	f := &gangEstimate{needed: int(job.MinAvailable - job.ReadyTaskNum())}
	if f.needed <= 0 {
		f.feasible = true
		return f
	}
	pending := missingPods(job, fallback)
	f.missing = pending
	for _, t := range pending {
		f.gpus += gpusOf(t.InitResreq)
	}
	if len(pending) < f.needed {
		f.short = append(f.short, fmt.Sprintf("%d pods of the gang are not created or not schedulable yet", f.needed-len(pending)))
	}
	f.placeable = greedyPlace(pending, nodes, func(n *api.NodeInfo) *api.Resource { return n.Idle }, &f.short)
	var ignored []string
	f.feasible = greedyPlace(pending, nodes, func(n *api.NodeInfo) *api.Resource { return n.Allocatable }, &ignored) == len(pending)
	return f
}

// missingPods are the pending pods a gang still needs to reach
// minAvailable, in allocation order (pservers first).
func missingPods(job *api.JobInfo, fallback bool) []*api.TaskInfo {
	needed := int(job.MinAvailable - job.ReadyTaskNum())
	if needed <= 0 {
		return nil
	}
	pending := make([]*api.TaskInfo, 0, len(job.TaskStatusIndex[api.Pending]))
	for _, t := range job.TaskStatusIndex[api.Pending] {
		if !t.SchGated && !t.InitResreq.IsEmpty() {
			pending = append(pending, t)
		}
	}
	sort.Slice(pending, func(i, j int) bool { return taskLess(pending[i], pending[j], fallback) })
	if len(pending) > needed {
		pending = pending[:needed]
	}
	return pending
}

// greedyPlace fits tasks first-fit on copies of avail(node), remembering per
// task spec where the last one went (earlier nodes are full for that spec).
func greedyPlace(tasks []*api.TaskInfo, nodes []*api.NodeInfo, avail func(*api.NodeInfo) *api.Resource, short *[]string) int {
	left := map[string]*api.Resource{}
	cursor := map[string]int{}
	missing := map[string]int{}
	wanted := map[string]int{}
	req := map[string]*api.Resource{}
	placed := 0
	for _, t := range tasks {
		spec := t.TaskRole
		wanted[spec]++
		req[spec] = t.InitResreq
		ok := false
		for i := cursor[spec]; i < len(nodes); i++ {
			n := nodes[i]
			if !n.Ready() || !selectorMatches(t, n) {
				continue
			}
			r, seen := left[n.Name]
			if !seen {
				r = avail(n).Clone()
				left[n.Name] = r
			}
			if t.InitResreq.LessEqual(r, api.Zero) {
				r.Sub(t.InitResreq)
				cursor[spec] = i
				ok = true
				break
			}
		}
		if ok {
			placed++
		} else {
			missing[spec]++
			cursor[spec] = len(nodes)
		}
	}
	specs := make([]string, 0, len(missing))
	for s := range missing {
		specs = append(specs, s)
	}
	sort.Strings(specs)
	for _, s := range specs {
		*short = append(*short, fmt.Sprintf("%s: %d of %d pods of %s fit", s, wanted[s]-missing[s], wanted[s], describeRequest(req[s])))
	}
	return placed
}

func selectorMatches(t *api.TaskInfo, n *api.NodeInfo) bool {
	if t.Pod == nil || len(t.Pod.Spec.NodeSelector) == 0 {
		return true
	}
	if n.Node == nil {
		return false
	}
	return labels.SelectorFromSet(t.Pod.Spec.NodeSelector).Matches(labels.Set(n.Node.Labels))
}

func describeRequest(r *api.Resource) string {
	if r == nil {
		return "{}"
	}
	parts := []string{fmt.Sprintf("cpu %gm", r.MilliCPU), fmt.Sprintf("memory %.0fMi", r.Memory/(1<<20))}
	names := make([]string, 0, len(r.ScalarResources))
	for n := range r.ScalarResources {
		if n != v1.ResourcePods {
			names = append(names, string(n))
		}
	}
	sort.Strings(names)
	for _, n := range names {
		v := r.ScalarResources[v1.ResourceName(n)]
		if v1.ResourceName(n) == gpuResource {
			parts = append(parts, fmt.Sprintf("%s %d", n, int(v/1000)))
		} else if v > 0 {
			parts = append(parts, fmt.Sprintf("%s %g", n, v/1000))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
