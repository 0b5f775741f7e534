package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/clusterbench"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
)

type report struct {
	mode     string
	root     string
	started  time.Time
	took     time.Duration
	allocCmd string
	alloc    []allocResult
	quality  []qualityResult
	cluster  []clusterbench.Measurement
	// clusterFailures are sizes that could not be measured, with why.
	clusterFailures []string
}

func (r *report) write(path string) error {
	dir := filepath.Dir(path)
	var b strings.Builder
	w := func(f string, a ...interface{}) { fmt.Fprintf(&b, f, a...) }
	w("# Benchmarks\n\n")
	w("Every figure compares Volcano's **stock** scheduler configuration (the Helm chart's default tiers,\n")
	w("read from the Volcano module: `installer/helm/chart/volcano/config/volcano-scheduler.conf`) with\n")
	w("**paddle** (`deploy/paddle/volcano-scheduler.conf`: the same tiers plus the `paddle` plugin), measured\n")
	w("in the same run on the same machine. Benchmarks report; they never fail a build on a number.\n\n")
	w("Reproduce: `make bench` (quick, under 15 minutes on 2 cores) or `make bench-full` (prints its\n")
	w("expected duration first). Last run: %s mode, %s, took %s, on %s.\n\n",
		r.mode, r.started.UTC().Format("2006-01-02 15:04 UTC"), r.took.Round(time.Second), machine())
	if len(r.alloc) > 0 {
		r.writeAlloc(&b, dir)
	}
	if len(r.quality) > 0 {
		r.writeQuality(&b, dir)
	}
	if len(r.cluster) > 0 || len(r.clusterFailures) > 0 {
		r.writeCluster(&b, dir)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func (r *report) writeAlloc(b *strings.Builder, dir string) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	w("## 1. Allocate speed, in process\n\n")
	w("One scheduling cycle (open session, Volcano's real `allocate` action, close session) on Volcano's\n")
	w("scheduler cache with fake clients, nodes of 8 GPUs (2 NVLink islands) in racks of 32, and pending\n")
	w("Paddle gangs (30%% of the pods in PS jobs, the rest collective gangs of 2 to 32 pods of 1 to 8 GPUs).\n")
	w("`stock-no-nodeorder` is stock without Volcano's `nodeorder` plugin: what `nodeorder`, a stock\n")
	w("scoring plugin, costs is the yardstick for what `paddle` costs. Building the cache is not timed.\n\n")
	w("Command: `%s`\n\n", r.allocCmd)
	w("| nodes | pending pods | config | time/cycle | vs stock | allocs/cycle | MB/cycle | pods placed | GPUs placed |\n|---|---|---|---|---|---|---|---|---|\n")
	byKey := map[string]allocResult{}
	for _, a := range r.alloc {
		byKey[fmt.Sprintf("%d/%d/%s", a.nodes, a.pods, a.config)] = a
	}
	var groups []string
	var seen = map[string]bool{}
	for _, a := range r.alloc {
		stock := byKey[fmt.Sprintf("%d/%d/stock", a.nodes, a.pods)]
		ratio := "-"
		if stock.nsPerOp > 0 {
			ratio = fmt.Sprintf("%.2fx", a.nsPerOp/stock.nsPerOp)
		}
		w("| %d | %d | %s | %s | %s | %.2fM | %.0f | %.0f | %.0f |\n", a.nodes, a.pods, a.config,
			time.Duration(a.nsPerOp).Round(time.Millisecond), ratio, a.allocs/1e6, a.bytes/1e6, a.placed, a.gpus)
		g := fmt.Sprintf("%d nodes / %d pods", a.nodes, a.pods)
		if !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	w("\n")
	// Overheads and growth.
	var lines []string
	for _, a := range r.alloc {
		if a.config != "paddle" {
			continue
		}
		s := byKey[fmt.Sprintf("%d/%d/stock", a.nodes, a.pods)]
		n := byKey[fmt.Sprintf("%d/%d/stock-no-nodeorder", a.nodes, a.pods)]
		if s.nsPerOp == 0 || n.nsPerOp == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("- %d nodes, %d pods: a paddle cycle takes %.2fx a stock cycle (%+v), placing %.0f GPUs to stock's %.0f; nodeorder makes a cycle %.1fx longer than without it (%+v).",
			a.nodes, a.pods, a.nsPerOp/s.nsPerOp, time.Duration(a.nsPerOp-s.nsPerOp).Round(time.Millisecond), a.gpus, s.gpus,
			s.nsPerOp/n.nsPerOp, time.Duration(s.nsPerOp-n.nsPerOp).Round(time.Millisecond)))
	}
	if len(lines) > 0 {
		w("Overheads:\n\n%s\n\n", strings.Join(lines, "\n"))
	}
	growth := func(cfg string, n1, p1, n2, p2 int) string {
		a, c := byKey[fmt.Sprintf("%d/%d/%s", n1, p1, cfg)], byKey[fmt.Sprintf("%d/%d/%s", n2, p2, cfg)]
		if a.nsPerOp == 0 || c.nsPerOp == 0 {
			return ""
		}
		return fmt.Sprintf("%.1fx", c.nsPerOp/a.nsPerOp)
	}
	w("Growth (time per cycle):\n\n| config | 100 -> 1000 nodes (400 pods) | 1000 -> 5000 nodes (400 pods) | 400 -> 2000 pods (100 nodes) | 400 -> 2000 pods (1000 nodes) |\n|---|---|---|---|---|\n")
	for _, cfg := range []string{"stock-no-nodeorder", "stock", "paddle"} {
		w("| %s | %s | %s | %s | %s |\n", cfg, orDash(growth(cfg, 100, 400, 1000, 400)), orDash(growth(cfg, 1000, 400, 5000, 400)),
			orDash(growth(cfg, 100, 400, 100, 2000)), orDash(growth(cfg, 1000, 400, 1000, 2000)))
	}
	w("\nEach task the allocate action tries is scored against every feasible node, so a cycle grows with\n")
	w("nodes x tasks tried. The configurations do not do the same work: gangs that fit are placed whole and\n")
	w("the others rolled back, and paddle tries gangs that fit first, so the pods and GPUs placed are listed\n")
	w("next to the time. The machine has 2 cores, and runs vary by about 10-20%%; compare ratios within a run.\n\n")
	chart := barChart{Title: "Allocate cycle time", YLabel: "ms per cycle", Groups: groups,
		Series: []string{"stock-no-nodeorder", "stock", "paddle"}, Format: "%.0f"}
	for _, g := range groups {
		var row []float64
		for _, cfg := range chart.Series {
			var np, pp int
			fmt.Sscanf(g, "%d nodes / %d pods", &np, &pp)
			row = append(row, byKey[fmt.Sprintf("%d/%d/%s", np, pp, cfg)].nsPerOp/1e6)
		}
		chart.Values = append(chart.Values, row)
	}
	_ = os.WriteFile(filepath.Join(dir, "bench-allocate.svg"), []byte(chart.SVG()), 0o644)
	w("![allocate cycle time](bench-allocate.svg)\n\n")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (r *report) writeQuality(b *strings.Builder, dir string) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	w("## 2. Placement quality\n\n")
	w("The same clusters and workloads placed by Volcano's real scheduler (one allocate cycle, stock\n")
	w("tiers and ours), by a random placer (each pod on a random node with room, whole gangs only) and\n")
	w("judged against the best placement of each job (alone on an empty cluster). Workloads are\n")
	w("snapshots drawn from the Philly trace (jobs picked with probability proportional to duration, so\n")
	w("multi-GPU jobs hold their share of GPU time; 30%% PS jobs; pods of 1, 2, 4 or 8 GPUs), on %d racks\n", r.quality[0].reports[0].Scenario.Racks)
	w("x %d nodes with about half the nodes already running single-GPU jobs; load 0.9 of the free GPUs.\n", r.quality[0].reports[0].Scenario.NodesPerRack)
	w("Figures are means over %d seeds. Step times come from the cost model in `bench/quality`\n", len(r.quality[0].reports))
	w("(below); slowdown is step time over the best placement's, GPU-time weighted over the jobs every\n")
	w("placer placed; Q = (random - placer)/(random - best) on the mean slowdown.\n\n")
	w("| preset | placer | mean slowdown | p95 slowdown | Q | multi-GPU jobs on one node* | PS bytes crossing a NIC | racks per job | blocked (by fragmentation) |\n|---|---|---|---|---|---|---|---|---|\n")
	var groups []string
	chart := barChart{Title: "Placement quality Q (1 = best placement, 0 = random)", YLabel: "Q", Series: []string{"stock", "paddle"}, Format: "%.2f"}
	for _, q := range r.quality {
		for _, placer := range []string{"random", "stock", "paddle"} {
			m := func(f func(quality.Metrics) float64) float64 { return q.mean(placer, f) }
			w("| %s | %s | %.3f | %.3f | %.2f | %.0f%% | %.0f%% | %.2f | %.1f (%.1f) |\n", q.preset.Name, placer,
				m(func(x quality.Metrics) float64 { return x.MeanSlowdown }), m(func(x quality.Metrics) float64 { return x.P95Slowdown }),
				m(func(x quality.Metrics) float64 { return x.Q }), 100*m(func(x quality.Metrics) float64 { return x.OneNode }),
				100*m(func(x quality.Metrics) float64 { return x.PSCrossNIC }), m(func(x quality.Metrics) float64 { return x.Racks }),
				m(func(x quality.Metrics) float64 { return float64(x.Blocked) }), m(func(x quality.Metrics) float64 { return float64(x.BlockedByFragmentation) }))
		}
		groups = append(groups, q.preset.Name)
		chart.Values = append(chart.Values, []float64{q.mean("stock", func(x quality.Metrics) float64 { return x.Q }), q.mean("paddle", func(x quality.Metrics) float64 { return x.Q })})
	}
	chart.Groups = groups
	_ = os.WriteFile(filepath.Join(dir, "bench-quality.svg"), []byte(chart.SVG()), 0o644)
	w("\n\\* of the multi-GPU jobs that fit in one node. Workload of the first seed per preset: ")
	for i, q := range r.quality {
		if i > 0 {
			w("; ")
		}
		w("%s: %s", q.preset.Name, q.reports[0].Workload)
	}
	w(".\n\n![placement quality](bench-quality.svg)\n\n")
	w("### The cost model\n\n")
	w("- Collective jobs: a ring all-reduce of the gradients (4 bytes per parameter) over all GPUs,\n")
	w("  2(n-1)/n x bytes / bandwidth of the slowest link used: the island's bus bandwidth inside one NVLink\n")
	w("  island, the cross-island bandwidth when a node's share spans islands, the NICs of the islands used\n")
	w("  times their bandwidth across nodes, divided by the rack uplink oversubscription across racks; plus\n")
	w("  2(n-1) network latencies across nodes.\n")
	w("- PS jobs: every trainer-pserver pair moves model bytes / pservers each way per step; free on one\n")
	w("  node, otherwise charged to both nodes' NICs (times the oversubscription across racks); the\n")
	w("  busiest node's NICs set the time.\n")
	w("- Step time = (compute^g + comm^g)^(1/g) (Pollux's form), g = 2.5; compute is the measured T4\n")
	w("  single-GPU step time of the workload (Pollux profiles) divided by the preset's compute speed-up.\n\n")
	w("| preset | GPUs/node | island | island GB/s | cross-island GB/s | NICs x Gb/s | source |\n|---|---|---|---|---|---|---|\n")
	for _, p := range quality.Presets {
		w("| %s | %d | %d | %g | %g | %d x %g (%.0f%% achieved) | %s |\n", p.Name, p.GPUsPerNode, p.IslandSize, p.IslandGBps, p.CrossIslandGBps,
			p.NICsPerNode, p.NICGbps, 100*p.NICEfficiency, p.Source)
	}
	w("\nRack uplink oversubscription 2:1 for all presets (an assumption). Calibration (`go test ./bench/quality -run TestCalibration -v`):\n")
	w("with the 4xT4 preset, whose bandwidths and latency were fitted to imagenet, bert and ncf, the model's\n")
	w("split (2+2 nodes) over packed (4 on one node) step-time ratio, averaged over the measured batch sizes, is\n")
	w("within 8%% of the measurement for those three (imagenet 1.56 vs 1.44, bert 2.61 vs 2.84, ncf 2.04 vs\n")
	w("2.20); out of sample it is +22%% for cifar10, +10%% for yolov3 and +48%% for deepspeech2.\n\n")
}

func (r *report) writeCluster(b *strings.Builder, dir string) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	w("## 3. End to end on the local cluster\n\n")
	w("Real etcd, kube-apiserver and kube-controller-manager (garbage collector, namespace and PV\n")
	w("controllers; not the node lifecycle controller, see `WithoutNodeLifecycle`), KWOK nodes (8 GPUs,\n")
	w("racks of 25), our Volcano\n")
	w("builds with the flags of Volcano's release manifest (controller manager `--kube-api-qps=50`, scheduler\n")
	w("`--schedule-period=1s`), all on this machine. Per size, one cluster; each configuration in turn\n")
	w("(the scheduler restarted with it): first one 64-pod gang alone, then a wave of Paddle jobs submitted\n")
	w("at once (gangs of 2 to 256 pods, 30%% PS, one GPU per trainer, DNS barrier off), waited until every pod\n")
	w("is bound. Command: `go run ./bench/cmd/bench -mode %s -skip allocate,quality`.\n\n", r.mode)
	w("Bind lag: from a pod's creation to its binding; it includes waiting for the rest of its gang to be\n")
	w("created. Gang lag: from a job's last pod created to its last pod bound, the scheduler's share.\n\n")
	w("| nodes | pods | config | jobs | pods bound/s | pods created/s | last gang bound | bind lag median / p95 | gang lag median | 64-pod gang | sessions (mean) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	var groups []string
	seen := map[string]bool{}
	vals := map[string]map[string]float64{}
	for _, m := range r.cluster {
		w("| %d | %d | %s | %d | %.0f | %.0f | %s | %s / %s | %s | %s | %d (%s) |\n", m.Size.Nodes, m.Size.Pods, m.Config, m.Jobs, m.BoundPerSecond, m.CreatedPerSecond,
			m.LastGangBound.Round(100*time.Millisecond), m.MedianBindLag.Round(10*time.Millisecond), m.P95BindLag.Round(10*time.Millisecond),
			m.GangLag.Round(10*time.Millisecond), m.Gang64.Round(10*time.Millisecond), m.SchedulerSessions, m.SessionMean.Round(time.Millisecond))
		g := fmt.Sprintf("%d nodes / %d pods", m.Size.Nodes, m.Size.Pods)
		if !seen[g] {
			seen[g] = true
			groups = append(groups, g)
			vals[g] = map[string]float64{}
		}
		vals[g][m.Config] = m.BoundPerSecond
	}
	for _, f := range r.clusterFailures {
		w("\nNot measured: %s\n", f)
	}
	w("\nCPU seconds used by each component during the wave (2 cores):\n\n")
	var comps []string
	for _, m := range r.cluster {
		for k := range m.CPU {
			if !contains(comps, k) {
				comps = append(comps, k)
			}
		}
	}
	sort.Strings(comps)
	w("| nodes | config | %s |\n|---|---|%s\n", strings.Join(comps, " | "), strings.Repeat("---|", len(comps)))
	for _, m := range r.cluster {
		var cells []string
		for _, c := range comps {
			cells = append(cells, fmt.Sprintf("%.0f", m.CPU[c]))
		}
		w("| %d | %s | %s |\n", m.Size.Nodes, m.Config, strings.Join(cells, " | "))
	}
	w("\nWhat limits throughput:\n\n")
	for _, m := range r.cluster {
		w("- %d nodes, %s: %s\n", m.Size.Nodes, m.Config, limiter(m))
	}
	w("\nThe floor of the 64-pod gang is about two scheduling periods (enqueue in one session, allocate in\n")
	w("the next: 2 x 1 s) plus the controller creating its 64 pods at 50 requests/s (about 1.3 s) and a\n")
	w("session; measured values above.\n\n")
	chart := barChart{Title: "Pods bound per second (wave)", YLabel: "pods/s", Groups: groups, Series: []string{"stock", "paddle"}, Format: "%.0f"}
	for _, g := range groups {
		chart.Values = append(chart.Values, []float64{vals[g]["stock"], vals[g]["paddle"]})
	}
	_ = os.WriteFile(filepath.Join(dir, "bench-cluster.svg"), []byte(chart.SVG()), 0o644)
	w("![pods bound per second](bench-cluster.svg)\n")
}

// limiter names the stage that sets the pace, from the evidence measured:
// creation rate against the controller's client QPS, the scheduler's share
// (gang lag, session length) and which process used the CPU.
func limiter(m clusterbench.Measurement) string {
	total := 0.0
	for _, v := range m.CPU {
		total += v
	}
	busiest, bv := "", 0.0
	for k, v := range m.CPU {
		if v > bv {
			busiest, bv = k, v
		}
	}
	util := total / math.Max(m.LastGangBound.Seconds(), 1) / 2
	var parts []string
	if m.CreatedPerSecond >= 0.8*controllerQPS {
		parts = append(parts, fmt.Sprintf("the controller creates pods at %.0f/s, at its client limit (--kube-api-qps=%d), and pods are bound at %.0f/s, so pod creation sets the pace", m.CreatedPerSecond, controllerQPS, m.BoundPerSecond))
	} else {
		parts = append(parts, fmt.Sprintf("pods are created at %.0f/s (below the controller's %d/s limit) and bound at %.0f/s", m.CreatedPerSecond, controllerQPS, m.BoundPerSecond))
	}
	parts = append(parts, fmt.Sprintf("once a gang's last pod exists it is bound after a median %s (sessions of %s every 1 s period)", m.GangLag.Round(10*time.Millisecond), m.SessionMean.Round(time.Millisecond)))
	parts = append(parts, fmt.Sprintf("the 2 cores are %.0f%% busy, %s the busiest process (%.0f of %.0f CPU s)", 100*util, busiest, bv, total))
	return strings.Join(parts, "; ") + "."
}

// controllerQPS is the controller manager's client QPS in Volcano's
// release manifest, which the local cluster uses.
const controllerQPS = 50

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
