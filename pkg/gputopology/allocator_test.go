package gputopology

import (
	"reflect"
	"testing"
	"time"

	"github.com/NVIDIA/go-gpuallocator/gpuallocator"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology/gputopologytest"
)

// The prediction, made from the published annotation, agrees with what
// NVIDIA's device plugin computes on the machine itself: go-gpuallocator's
// NewDevices on the machine's NVML and NewBestEffortPolicy().Allocate, for
// every free set and every size, on each of the five machines.
func TestPredictAgreesWithAllocate(t *testing.T) {
	for _, m := range gputopologytest.Machines() {
		t.Run(m.Name, func(t *testing.T) {
			model, err := ModelFor(machineTopology(t, m).Encode())
			if err != nil {
				t.Fatal(err)
			}
			// The device plugin's side (k8s-device-plugin
			// internal/rm/nvml_manager.go alignedAlloc).
			devices, err := gpuallocator.NewDevices(gpuallocator.WithNvmlLib(m.NVML()))
			if err != nil {
				t.Fatal(err)
			}
			policy := gpuallocator.NewBestEffortPolicy()
			checked, noAnswer := 0, 0
			for free := Set(0); free <= All(m.N()); free++ {
				var avail []*gpuallocator.Device
				for _, p := range free.Positions() {
					avail = append(avail, devices[p])
				}
				for size := 1; size <= free.Count(); size++ {
					got, own := model.Predict(free, size)
					var want Set
					wantOwn := true
					for _, d := range policy.Allocate(avail, nil, size) {
						if d == nil {
							wantOwn = false
							continue
						}
						want |= 1 << d.Index
					}
					checked++
					if !wantOwn {
						noAnswer++
						if own {
							t.Errorf("free %v size %d: the allocator returns padding, the model claims its own pick %v", model.Indices(free), size, model.Indices(got))
						}
						continue
					}
					if got != want || !own {
						t.Errorf("free %v size %d: predicted %v, Allocate gives %v", model.Indices(free), size, model.Indices(got), model.Indices(want))
					}
				}
			}
			t.Logf("%d free sets x sizes checked; %d where Allocate returns its padding", checked, noAnswer)
		})
	}
}

// What NVIDIA's allocator does, in the cases the scheduler cares about.
func TestPredictExamples(t *testing.T) {
	machines := map[string]gputopologytest.Machine{}
	for _, m := range gputopologytest.Machines() {
		machines[m.Name] = m
	}
	model := func(name string) *Model {
		mod, err := NewModel(machineTopology(t, machines[name]))
		if err != nil {
			t.Fatal(err)
		}
		return mod
	}
	set := func(idx ...int) Set {
		var s Set
		for _, i := range idx {
			s |= 1 << i
		}
		return s
	}
	cases := []struct {
		machine string
		free    Set
		size    int
		want    []int
	}{
		// A quad of the cube-mesh, not GPUs of both quads.
		{"dgx1-v100", All(8), 4, []int{0, 1, 2, 3}},
		// Two of the quad's GPUs with the double link.
		{"dgx1-v100", set(0, 1, 2, 3), 2, []int{0, 3}},
		// NVSwitch: NVLinks are invisible to the allocator; one socket.
		{"hgx-h100", All(8), 4, []int{0, 1, 2, 3}},
		// A100: the pair behind one PCIe switch.
		{"dgx-a100", set(1, 2, 3, 5), 2, []int{2, 3}},
		// Bridged pairs.
		{"pcie-nvlink-pairs", set(0, 2, 3), 2, []int{2, 3}},
	}
	for _, c := range cases {
		mod := model(c.machine)
		got, own := mod.Predict(c.free, c.size)
		if !own || !reflect.DeepEqual(mod.Indices(got), c.want) {
			t.Errorf("%s free %v size %d: %v (own pick %v), want %v", c.machine, mod.Indices(c.free), c.size, mod.Indices(got), own, c.want)
		}
	}
}

func TestOccupy(t *testing.T) {
	mod, err := NewModel(Uniform(FabricNVLink, 8, 4))
	if err != nil {
		t.Fatal(err)
	}
	pods := []PodRequest{{Key: "ns/a", GPUs: 2}, {Key: "ns/b", GPUs: 4}, {Key: "ns/c", GPUs: 1}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		asg    *Assignments
		source Source
		want   map[string][]int
	}{
		{"predicted", nil, SourcePredicted, map[string][]int{"ns/a": {0, 1}, "ns/b": {4, 5, 6, 7}, "ns/c": {2}}},
		{"agent", &Assignments{Observed: now, Pods: map[string][]int{"ns/a": {6, 7}, "ns/b": {0, 1, 2, 3}, "ns/c": {5}}},
			SourceAgent, map[string][]int{"ns/a": {6, 7}, "ns/b": {0, 1, 2, 3}, "ns/c": {5}}},
		// c came after the agent's last look: predicted on what is left.
		{"mixed", &Assignments{Observed: now, Pods: map[string][]int{"ns/a": {6, 7}, "ns/b": {0, 1, 2, 3}, "ns/gone": {4}}},
			SourceMixed, map[string][]int{"ns/a": {6, 7}, "ns/b": {0, 1, 2, 3}, "ns/c": {4}}},
	}
	for _, c := range cases {
		o := mod.Occupy(pods, c.asg)
		if o.Source != c.source {
			t.Errorf("%s: source %s, want %s", c.name, o.Source, c.source)
		}
		used := Set(0)
		for key, want := range c.want {
			if got := mod.Indices(o.Pods[key]); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s has %v, want %v", c.name, key, got, want)
			}
			used |= o.Pods[key]
		}
		if o.Free != All(8)&^used {
			t.Errorf("%s: free %v, want the rest of %v", c.name, mod.Indices(o.Free), mod.Indices(used))
		}
	}
}

// Pods are replayed in the order the kubelet admitted them: creation time.
func TestOccupyCreationOrder(t *testing.T) {
	mod, err := NewModel(Uniform(FabricNVLink, 8, 4))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pods := []PodRequest{{Key: "ns/late", GPUs: 4, Created: t0.Add(time.Minute)}, {Key: "ns/early", GPUs: 2, Created: t0}}
	o := mod.Occupy(pods, nil)
	if got := mod.Indices(o.Pods["ns/early"]); !reflect.DeepEqual(got, []int{0, 1}) {
		t.Errorf("the earlier pod got %v, want [0 1]", got)
	}
	if got := mod.Indices(o.Pods["ns/late"]); !reflect.DeepEqual(got, []int{4, 5, 6, 7}) {
		t.Errorf("the later pod got %v, want [4 5 6 7]", got)
	}
}

func TestAssignmentsRoundTrip(t *testing.T) {
	a := &Assignments{Observed: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Pods: map[string][]int{"ns/a": {0, 1}}}
	b, err := ParseAssignments(a.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if !b.SamePods(a) || !b.Observed.Equal(a.Observed) {
		t.Errorf("round trip: %+v, want %+v", b, a)
	}
	if _, err := ParseAssignments(`{"pods":{}}`); err == nil {
		t.Error("assignments without observed time parsed")
	}
}

// Scoring asks for the same free sets again and again: after the first
// call a prediction is a map lookup.
func BenchmarkPredict(b *testing.B) {
	mod, err := NewModel(Uniform(FabricNVLink, 8, 4))
	if err != nil {
		b.Fatal(err)
	}
	free := All(8) &^ 0b11
	b.Run("first", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			mod.memo.Delete(memoKey{free, 4})
			mod.Predict(free, 4)
		}
	})
	b.Run("memoised", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			mod.Predict(free, 4)
		}
	})
}
