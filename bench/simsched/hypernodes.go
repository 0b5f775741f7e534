package simsched

import (
	"sort"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	topologyv1alpha1 "volcano.sh/apis/pkg/apis/topology/v1alpha1"
	"volcano.sh/volcano/pkg/scheduler/api"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// Tiers of the HyperNodes built from rack labels: a rack of nodes, and one
// root above all racks (a spine every rack reaches).
const (
	RackTier = 1
	RootTier = 2
	rootName = "spine"
)

// hyperNodesFromRacks describes the cluster's racks (paddleapi.DefaultRackLabel)
// as Volcano HyperNodes, tier 1 per rack and tier 2 above them, in the form
// Volcano's scheduler cache keeps them. It mirrors how Volcano's own test
// helper installs HyperNodes (volcano pkg/scheduler/uthelper/helper.go,
// TestCommonStruct.createSchedulerCache): the informer-driven path needs a
// HyperNode lister the mock cache does not have.
func hyperNodesFromRacks(nodes []*v1.Node) *api.HyperNodesInfo {
	byRack := map[string][]string{}
	for _, n := range nodes {
		if r := n.Labels[paddleapi.DefaultRackLabel]; r != "" {
			byRack[r] = append(byRack[r], n.Name)
		}
	}
	racks := make([]string, 0, len(byRack))
	for r := range byRack {
		racks = append(racks, r)
	}
	sort.Strings(racks)
	infos := map[string]*api.HyperNodeInfo{}
	byTier := map[int]sets.Set[string]{RackTier: sets.New[string](), RootTier: sets.New[string](rootName)}
	real := map[string]sets.Set[string]{rootName: sets.New[string]()}
	root := &topologyv1alpha1.HyperNode{ObjectMeta: metav1.ObjectMeta{Name: rootName}, Spec: topologyv1alpha1.HyperNodeSpec{Tier: RootTier}}
	for _, r := range racks {
		hn := &topologyv1alpha1.HyperNode{ObjectMeta: metav1.ObjectMeta{Name: r}, Spec: topologyv1alpha1.HyperNodeSpec{Tier: RackTier}}
		for _, n := range byRack[r] {
			hn.Spec.Members = append(hn.Spec.Members, member(topologyv1alpha1.MemberTypeNode, n))
		}
		root.Spec.Members = append(root.Spec.Members, member(topologyv1alpha1.MemberTypeHyperNode, r))
		info := api.NewHyperNodeInfo(hn)
		info.Parent = rootName
		infos[r] = info
		byTier[RackTier].Insert(r)
		real[r] = sets.New(byRack[r]...)
		real[rootName].Insert(byRack[r]...)
	}
	rootInfo := api.NewHyperNodeInfo(root)
	rootInfo.Children.Insert(racks...)
	infos[rootName] = rootInfo
	ready := new(atomic.Bool)
	ready.Store(true)
	return api.NewHyperNodesInfoWithCache(infos, byTier, real, ready)
}

func member(t topologyv1alpha1.MemberType, name string) topologyv1alpha1.MemberSpec {
	return topologyv1alpha1.MemberSpec{Type: t, Selector: topologyv1alpha1.MemberSelector{ExactMatch: &topologyv1alpha1.ExactMatch{Name: name}}}
}
