package quality

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
)

// Scenario is one placement-quality run.
type Scenario struct {
	Preset       Preset
	Racks        int
	NodesPerRack int
	Seed         int64
	PSShare      float64
	// Load is the jobs' GPUs as a share of the GPUs free after the
	// background (above 1 queues jobs, which shows blocking).
	Load float64
}

// Report of one scenario.
type Report struct {
	Scenario Scenario
	Workload string
	Metrics  []Metrics
	// SchedulerTook is the scheduling cycle of each configuration.
	SchedulerTook map[string]time.Duration
}

// Run generates the cluster and workload, places it with the random
// placer and with Volcano's real scheduler under each configuration (one
// allocate cycle each, on identical caches) and evaluates all of them.
func Run(s Scenario, dataDir string, configs ...*simsched.Config) (*Report, error) {
	trace, err := LoadPhilly(filepath.Join(dataDir, "philly.csv"))
	if err != nil {
		return nil, err
	}
	models, err := Models(dataDir)
	if err != nil {
		return nil, err
	}
	c := NewCluster(s.Preset, s.Racks, s.NodesPerRack, s.Seed)
	names := make([]string, 0, len(models))
	for n := range models {
		names = append(names, n)
	}
	jobs := Generate(trace, WorkloadOptions{
		Seed: s.Seed, TargetGPUs: int(s.Load * float64(c.FreeGPUs())), MaxJobGPUs: s.Preset.GPUsPerNode * s.NodesPerRack,
		PSShare: s.PSShare, NodeGPUs: s.Preset.GPUsPerNode, Models: names,
	})
	r := &Report{Scenario: s, Workload: Describe(jobs), SchedulerTook: map[string]time.Duration{}}
	placements := map[string][]Placement{"random": c.RandomPlacer(jobs, s.Seed)}
	sim := c.SimCluster(jobs)
	for _, cfg := range configs {
		cache := simsched.NewCache(sim)
		res := cache.Schedule(cfg.AllocateOnly())
		cache.Close()
		placements[cfg.Name] = FromScheduler(jobs, res.Placed)
		r.SchedulerTook[cfg.Name] = res.Took
	}
	r.Metrics = Evaluate(c, jobs, models, placements)
	return r, nil
}

// String is the report as a small table.
func (r *Report) String() string {
	s := fmt.Sprintf("%s, %d racks x %d nodes, seed %d: %s\n", r.Scenario.Preset.Name, r.Scenario.Racks, r.Scenario.NodesPerRack, r.Scenario.Seed, r.Workload)
	s += fmt.Sprintf("  %-8s %6s %8s %8s %6s %8s %8s %6s %8s\n", "placer", "placed", "slowdown", "p95", "Q", "one-node", "PS-NIC", "racks", "blocked*")
	for _, m := range r.Metrics {
		s += fmt.Sprintf("  %-8s %6d %8.3f %8.3f %6.2f %7.0f%% %7.0f%% %6.2f %4d/%-3d\n", m.Placer, m.Placed, m.MeanSlowdown, m.P95Slowdown, m.Q,
			100*m.OneNode, 100*m.PSCrossNIC, m.Racks, m.BlockedByFragmentation, m.Blocked)
	}
	return s
}
