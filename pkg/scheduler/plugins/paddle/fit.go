package paddle

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"volcano.sh/volcano/pkg/scheduler/api"
)

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
