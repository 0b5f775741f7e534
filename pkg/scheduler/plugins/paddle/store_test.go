package paddle

import (
	"slices"
	"testing"
)

// A store belongs to the scheduler that built it: a gang's booking carries
// from one session to the next of that scheduler and never into another's,
// even for a job of the same name (the bench replays one window several
// times in one process). The cluster of TestReservationHoldsUntilPlaced:
// once n0 is as free as n2, a booked gang keeps n1 and n2, and a gang with
// no booking plans on the nodes with the most idle GPUs, n1 and n0.
func TestStoreBelongsToItsScheduler(t *testing.T) {
	build := starvingGangCluster
	tiers, cfgs := paddleTiers(t)
	first := newScheduler()
	allocateOnce(t, tiers, cfgs, build(filler("f0", "n0", "1", 8), filler("f1", "n1", "1", 2), filler("f2", "n2", "1", 4)), first)
	if got := bookedNodes(first, "ns/big"); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("first scheduler reserved %v, want [n1 n2]", got)
	}
	second := newScheduler()
	if got := bookedNodes(second, "ns/big"); got != nil {
		t.Fatalf("a new scheduler starts with the booking %v of another", got)
	}
	later := build(filler("f0", "n0", "1", 4), filler("f1", "n1", "1", 2), filler("f2", "n2", "1", 4))
	allocateOnce(t, tiers, cfgs, later, second)
	if got := bookedNodes(second, "ns/big"); !slices.Equal(got, []string{"n1", "n0"}) {
		t.Errorf("second scheduler reserved %v, want [n1 n0] (planned afresh)", got)
	}
	allocateOnce(t, tiers, cfgs, later, first)
	if got := bookedNodes(first, "ns/big"); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("first scheduler reserved %v, want its booking [n1 n2] kept", got)
	}
}
