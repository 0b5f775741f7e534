package quality

import (
	"math"
	"path/filepath"
	"reflect"
	"testing"
)

func TestGenerateMatchesTrace(t *testing.T) {
	trace, err := LoadPhilly(filepath.Join(polluxDir, "philly.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(trace) < 80000 {
		t.Fatalf("%d trace jobs", len(trace))
	}
	o := WorkloadOptions{Seed: 7, TargetGPUs: 4000, MaxJobGPUs: 64, NodeGPUs: 8, Models: []string{"imagenet", "bert"}}
	a, b := Generate(trace, o), Generate(trace, o)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different workloads")
	}
	var multi, all, ps float64
	for _, j := range a {
		all += float64(j.GPUs)
		if j.GPUs > 1 {
			multi += float64(j.GPUs)
		}
		if j.PS {
			ps++
		}
		if j.Pods*j.PodGPUs != j.GPUs || j.PodGPUs > 8 {
			t.Fatalf("job %+v: pods do not add up", j)
		}
	}
	// The share of GPUs held by multi-GPU jobs in the snapshot is their
	// share of GPU time in the (filtered) trace.
	var tm, ta float64
	for _, j := range trace {
		if j.GPUs <= 64 && j.GPUs&(j.GPUs-1) == 0 {
			ta += float64(j.GPUs) * j.Duration
			if j.GPUs > 1 {
				tm += float64(j.GPUs) * j.Duration
			}
		}
	}
	if share, want := multi/all, tm/ta; math.Abs(share-want) > 0.1 {
		t.Errorf("multi-GPU share of the snapshot's GPUs %.2f, trace's share of GPU time %.2f", share, want)
	}
	if f := ps / float64(len(a)); math.Abs(f-0.3) > 0.1 {
		t.Errorf("PS share %.2f, want about 0.3", f)
	}
}

func TestClusterBackground(t *testing.T) {
	c := NewCluster(PCIeNVLinkPairs, 4, 8, 3)
	if n := len(c.Background); n < 8 || n > 24 {
		t.Errorf("%d of 32 nodes pre-occupied, want about half", n)
	}
	for node, gs := range c.Background {
		if len(gs) < 1 || len(gs) >= 8 {
			t.Errorf("%s: %d background GPUs", node, len(gs))
		}
	}
}

// The best placement scores Q=1 and slowdown 1; random scores Q=0.
func TestEvaluateReferences(t *testing.T) {
	models, err := Models(polluxDir)
	if err != nil {
		t.Fatal(err)
	}
	c := Cluster{Preset: PCIeNVLinkPairs, Racks: 2, NodesPerRack: 4, Background: map[string][]int{}}
	jobs := []Job{
		{Name: "a", GPUs: 4, PodGPUs: 1, Pods: 4, Model: "bert", Duration: 100},
		{Name: "b", GPUs: 8, PodGPUs: 2, Pods: 4, Model: "imagenet", Duration: 50},
		{Name: "c", GPUs: 2, PodGPUs: 1, Pods: 2, PS: true, PServers: 1, Model: "bert", Duration: 10},
	}
	var best []Placement
	// Best placements side by side on distinct nodes: a on n0, b on n1, c on n2.
	for i, j := range jobs {
		_, p := c.BestPlacement(j)
		for k := range p.Nodes {
			p.Nodes[k] = NodeName(i)
		}
		best = append(best, p)
	}
	ms := Evaluate(c, jobs, models, map[string][]Placement{"best": best, "random": c.RandomPlacer(jobs, 1)})
	for _, m := range ms {
		switch m.Placer {
		case "best":
			if math.Abs(m.MeanSlowdown-1) > 1e-9 || m.OneNode != 1 || m.PSCrossNIC != 0 || m.Blocked != 0 {
				t.Errorf("best: %+v", m)
			}
			if m.Q != 1 && !math.IsNaN(m.Q) {
				t.Errorf("best Q = %v", m.Q)
			}
		case "random":
			if m.Q != 0 && m.MeanSlowdown > 1 {
				t.Errorf("random Q = %v", m.Q)
			}
		}
	}
}
