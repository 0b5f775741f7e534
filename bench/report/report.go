// Package report writes a bench run's folder under docs/bench: its page
// (README.md) with the figures, the plots it shows, the figures as JSON
// (results.json) from which -render writes the page again, and the
// replay's jobs as CSV. docs/benchmarks.md is the hand-written guide to
// the pages.
package report

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/clusterbench"
	"github.com/volcano-paddle/volcano-paddle/bench/jobsize"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
)

// Report is everything one run measured. A run's files live in one folder
// under docs/bench (runFiles): the page, README.md; the figures as JSON
// beside it (results.json) so that the page can be rendered again from the
// same figures (-render) when only its text changes; the replay's jobs
// (jobs.csv.gz) and the plots the page shows (*.svg).
type Report struct {
	Mode string
	// Volcano is the volcano.sh/volcano release compiled into the bench
	// that measured (volcanorelease.Version): the replay runs its
	// scheduler code, the local cluster its binaries.
	Volcano string `json:",omitempty"`
	Started time.Time
	// Commands: the command line of the run, one per run merged.
	Commands []string `json:",omitempty"`
	// Merged: how many more runs' figures -render merged into this
	// report's (loadReports).
	Merged int `json:",omitempty"`
	// Interrupted says why the run stopped early (SIGINT or SIGTERM): its
	// figures are the parts and windows finished before.
	Interrupted string `json:",omitempty"`
	Took        time.Duration
	Machine     string
	AllocCmd    string
	Alloc       []AllocResult
	Quality     []QualityResult
	Replay      []*replay.Report
	// Before: the earlier run whose paddle joined this one's windows as
	// PaddleBefore (-before; AddBefore).
	Before string `json:",omitempty"`
	// Sweep: the lever a -sweep run swept ("": the comparison).
	Sweep   string `json:",omitempty"`
	Cluster []clusterbench.Measurement
	// ClusterFailures are sizes that could not be measured, with why.
	ClusterFailures []string
	// Root is the repository's root (the page names its figures from it).
	Root string `json:"-"`
	// cat is the bench's catalogue: the sweeps, windows and roles the
	// pages name.
	cat *catalogue.Catalogue
}

// The files of one run, all in its folder (-out; by default docs/bench/ and
// the mode, the lever swept or flex: defaultOut). The page links the plots
// by these names, relative to itself.
const (
	// PageFile and JobsFile are a run folder's page and per-job CSV.
	PageFile    = "README.md"
	JobsFile    = "jobs.csv.gz"
	resultsFile = "results.json"
	allocateSVG = "allocate.svg"
	qualitySVG  = "quality.svg"
	clusterSVG  = "cluster.svg"
)

// PagePath, resultsPath and jobsPath are a run folder's page, figures and
// per-job CSV (gzipped).
func PagePath(dir string) string    { return filepath.Join(dir, PageFile) }
func resultsPath(dir string) string { return filepath.Join(dir, resultsFile) }
func jobsPath(dir string) string    { return filepath.Join(dir, JobsFile) }

// replayPlots are the names of one window's plots in its run's folder.
func replayPlots(id string) (jct, util string) {
	return "replay-jct-" + id + ".svg", "replay-util-" + id + ".svg"
}

// renderArg is how the page names its figures for -render: the path from
// the repository root when the folder lies inside it (docs/bench/full/
// results.json), else the folder as given.
func (r *Report) renderArg(dir string) string {
	root := r.Root
	if root == "" {
		root, _ = localcluster.RepoRoot()
	}
	if root != "" {
		if absDir, err := filepath.Abs(dir); err == nil {
			if rel, err := filepath.Rel(root, absDir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				dir = rel
			}
		}
	}
	return filepath.ToSlash(resultsPath(dir))
}

// Write writes the page of the run folder dir (README.md) and its plots.
func (r *Report) Write(dir string) error {
	if r.cat == nil {
		cat, err := catalogue.Load()
		if err != nil {
			return err
		}
		r.cat = cat
	}
	path := PagePath(dir)
	var b strings.Builder
	w := func(f string, a ...interface{}) { fmt.Fprintf(&b, f, a...) }
	if len(r.Replay) > 0 && r.isSweep() {
		w("# Benchmarks: a sweep\n\n")
		w("Run %s, took %s, on %s. The raw figures are in `%s`.\n\n", r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Took.Round(time.Second), r.Machine, resultsFile)
		r.writeReplay(&b, dir)
		return os.WriteFile(path, []byte(b.String()), 0o644)
	}
	w("# Benchmarks\n\n")
	w("Every figure compares Volcano's **stock** scheduler configuration (the Helm chart's default tiers,\n")
	w("read from the Volcano module: `installer/helm/chart/volcano/config/volcano-scheduler.conf`) with\n")
	w("**paddle** (`deploy/paddle/volcano-scheduler.conf`: the same tiers plus the `paddle` plugin), measured\n")
	w("in the same run on the same machine; the trace replay also compares tuned stock configurations (the\n")
	w("best a Volcano operator can do without us). Benchmarks report; they never fail a build on a number.\n\n")
	w("Reproduce: `make bench` (quick; under 15 minutes on 2 cores of its own, see Time below; writes docs/bench/quick) or\n")
	w("`make bench-full` (prints its expected duration first; writes docs/bench/full). Guide: [benchmarks.md](../../benchmarks.md). Last run: %s mode, Volcano %s, %s, took %s, on %s.\n\n",
		r.Mode, r.volcano(), r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Took.Round(time.Second), r.Machine)
	if r.Merged > 0 {
		w("These figures merge %d runs of the bench (`-render` of their saved figures; took: their times added up).\n\n", r.Merged+1)
	}
	for _, c := range r.Commands {
		w("Command: `%s`\n\n", c)
	}
	if r.Interrupted != "" {
		w("**This run was %s: the figures below are the parts and windows it finished.**\n\n", r.Interrupted)
	}
	w("The raw figures are in `%s`; `go run ./bench/cmd/bench -render %s`\n", resultsFile, r.renderArg(dir))
	w("renders this page again from them without measuring.\n\n")
	if len(r.Replay) > 0 {
		r.writeReplay(&b, dir)
	}
	if len(r.Alloc) > 0 {
		r.writeAlloc(&b, dir)
	}
	if len(r.Quality) > 0 {
		r.writeQuality(&b, dir)
	}
	if len(r.Cluster) > 0 || len(r.ClusterFailures) > 0 {
		r.writeCluster(&b, dir)
	}
	// The job size section is measured and written by its own part
	// (bench/jobsize); a run that skips it keeps the figures already there.
	if s := jobsize.Section(path); s != "" {
		w("%s", s)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// volcano is the Volcano release the figures come from; runs saved before
// the report recorded it were all measured on v1.14.1.
func (r *Report) volcano() string {
	if r.Volcano == "" {
		return "v1.14.1"
	}
	return r.Volcano
}

// WriteAll writes the figures (JSON), the per-job CSV of the replays and
// the page into the run folder dir.
func (r *Report) WriteAll(dir string) error {
	if err := r.save(resultsPath(dir)); err != nil {
		return err
	}
	if len(r.Replay) > 0 {
		if err := r.saveJobs(jobsPath(dir)); err != nil {
			return err
		}
	}
	return r.Write(dir)
}

// save keeps the figures a run measured, for -render.
func (r *Report) save(path string) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// saveJobs writes every replayed job of every configuration and run as
// CSV (replay.JobsCSVHeader), gzipped.
func (r *Report) saveJobs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	z := gzip.NewWriter(f)
	if _, err := io.WriteString(z, replay.JobsCSVLine()); err != nil {
		return err
	}
	for _, rep := range r.Replay {
		if err := rep.WriteJobsCSV(z); err != nil {
			return err
		}
	}
	if err := z.Close(); err != nil {
		return err
	}
	return f.Close()
}

// Load reads the figures of one or more runs (-render a,b) and merges
// them: the windows of every run in order, the other parts from the first
// run that has them, the times added up. Runs of different Volcano
// releases are not merged.
func Load(paths string) (*Report, error) {
	var out *Report
	for _, path := range strings.Split(paths, ",") {
		r, err := load(strings.TrimSpace(path))
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = r
			continue
		}
		if r.volcano() != out.volcano() {
			return nil, fmt.Errorf("%s: Volcano %s, the runs before it %s: not merged", path, r.volcano(), out.volcano())
		}
		out.Merged++
		out.Took += r.Took
		out.Commands = append(out.Commands, r.Commands...)
		out.Replay = append(out.Replay, r.Replay...)
		if len(out.Alloc) == 0 {
			out.Alloc, out.AllocCmd = r.Alloc, r.AllocCmd
		}
		if len(out.Quality) == 0 {
			out.Quality = r.Quality
		}
		if len(out.Cluster) == 0 && len(out.ClusterFailures) == 0 {
			out.Cluster, out.ClusterFailures = r.Cluster, r.ClusterFailures
		}
	}
	return out, nil
}

// load reads a run's figures from path or, where only path.gz exists,
// from that: the published pages keep their figures gzipped (docs/bench
// stays under its size budget; docs/benchmarks.md), and their render
// commands still name results.json. Rows saved before reports recorded
// roles get them from the catalogue (Catalogue.RoleOf).
func load(path string) (*Report, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		raw, err = readGzip(path + ".gz")
	}
	if err != nil {
		return nil, err
	}
	r := &Report{}
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.cat, err = catalogue.Load(); err != nil {
		return nil, err
	}
	for _, rep := range r.Replay {
		fill := func(ms []replay.Metrics) {
			for k := range ms {
				if ms[k].Role == "" {
					ms[k].Role = replay.Role(r.cat.RoleOf(ms[k].Config))
				}
			}
		}
		fill(rep.Metrics)
		for k := range rep.PerSeed {
			fill(rep.PerSeed[k].Metrics)
		}
	}
	return r, nil
}

// readGzip is the content of a gzipped file.
func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer z.Close()
	raw, err := io.ReadAll(z)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return raw, nil
}

func (r *Report) writeAlloc(b *strings.Builder, dir string) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	w("## 1. Allocate speed, in process\n\n")
	w("One scheduling cycle (open session, Volcano's real `allocate` action, close session) on Volcano's\n")
	w("scheduler cache with fake clients, nodes of 8 GPUs (2 NVLink islands) in racks of 32, and pending\n")
	w("Paddle gangs (30%% of the pods in PS jobs, the rest collective gangs of 2 to 32 pods of 1 to 8 GPUs).\n")
	w("`stock-no-nodeorder` is stock without Volcano's `nodeorder` plugin: what `nodeorder`, a stock\n")
	w("scoring plugin, costs is the yardstick for what `paddle` costs. Building the cache is not timed.\n\n")
	w("Command: `%s`\n\n", r.AllocCmd)
	w("| nodes | pending pods | config | time/cycle | vs stock | allocs/cycle | MB/cycle | pods placed | GPUs placed |\n|---|---|---|---|---|---|---|---|---|\n")
	byKey := map[string]AllocResult{}
	for _, a := range r.Alloc {
		byKey[fmt.Sprintf("%d/%d/%s", a.Nodes, a.Pods, a.Config)] = a
	}
	var groups []string
	var seen = map[string]bool{}
	for _, a := range r.Alloc {
		stock := byKey[fmt.Sprintf("%d/%d/stock", a.Nodes, a.Pods)]
		w("| %d | %d | %s | %s | %s | %.2fM | %.0f | %.0f | %.0f |\n", a.Nodes, a.Pods, a.Config,
			time.Duration(a.NsPerOp).Round(time.Millisecond), ratioOf(a.NsPerOp, stock.NsPerOp), a.Allocs/1e6, a.Bytes/1e6, a.Placed, a.Gpus)
		g := fmt.Sprintf("%d nodes / %d pods", a.Nodes, a.Pods)
		if !seen[g] {
			seen[g] = true
			groups = append(groups, g)
		}
	}
	w("\n")
	// Overheads and growth.
	var lines []string
	for _, a := range r.Alloc {
		if a.Config != "paddle" {
			continue
		}
		s := byKey[fmt.Sprintf("%d/%d/stock", a.Nodes, a.Pods)]
		n := byKey[fmt.Sprintf("%d/%d/stock-no-nodeorder", a.Nodes, a.Pods)]
		if s.NsPerOp == 0 || n.NsPerOp == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("- %d nodes, %d pods: a paddle cycle takes %.2fx a stock cycle (%+v), placing %.0f GPUs to stock's %.0f; nodeorder makes a cycle %.1fx longer than without it (%+v).",
			a.Nodes, a.Pods, a.NsPerOp/s.NsPerOp, time.Duration(a.NsPerOp-s.NsPerOp).Round(time.Millisecond), a.Gpus, s.Gpus,
			s.NsPerOp/n.NsPerOp, time.Duration(s.NsPerOp-n.NsPerOp).Round(time.Millisecond)))
	}
	if len(lines) > 0 {
		w("Overheads:\n\n%s\n\n", strings.Join(lines, "\n"))
	}
	growth := func(cfg string, n1, p1, n2, p2 int) string {
		a, c := byKey[fmt.Sprintf("%d/%d/%s", n1, p1, cfg)], byKey[fmt.Sprintf("%d/%d/%s", n2, p2, cfg)]
		if a.NsPerOp == 0 || c.NsPerOp == 0 {
			return ""
		}
		return fmt.Sprintf("%.1fx", c.NsPerOp/a.NsPerOp)
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
			row = append(row, byKey[fmt.Sprintf("%d/%d/%s", np, pp, cfg)].NsPerOp/1e6)
		}
		chart.Values = append(chart.Values, row)
	}
	_ = os.WriteFile(filepath.Join(dir, allocateSVG), []byte(chart.SVG()), 0o644)
	w("![allocate cycle time](%s)\n\n", allocateSVG)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (r *Report) writeQuality(b *strings.Builder, dir string) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	w("## 2. Placement quality\n\n")
	w("What this section shows and does not: Q scores where one snapshot of jobs lands, by the cost model's\n")
	w("step times, against random and best placement. It says nothing about waiting: a gang blocked by\n")
	w("fragmentation counts only as \"blocked\", and a small difference in step time can be a large\n")
	w("difference in Q. What users feel, completion time over a trace, is the replay above. Paddle runs\n")
	w("here with `paddle.smallJobHeadroom: 0`: the headroom would hold back whole-node gangs of a snapshot\n")
	w("that fills 90%% of the free GPUs, and every placer must place the same jobs.\n\n")
	w("The same clusters and workloads placed by Volcano's real scheduler (one allocate cycle, stock\n")
	w("tiers and ours), by a random placer (each pod on a random node with room, whole gangs only) and\n")
	w("judged against the best placement of each job (alone on an empty cluster). Workloads are\n")
	w("snapshots drawn from the Philly trace (jobs picked with probability proportional to duration, so\n")
	w("multi-GPU jobs hold their share of GPU time; 30%% PS jobs; pods of 1, 2, 4 or 8 GPUs), on %d racks\n", r.Quality[0].Reports[0].Scenario.Racks)
	w("x %d nodes with about half the nodes already running single-GPU jobs; load 0.9 of the free GPUs.\n", r.Quality[0].Reports[0].Scenario.NodesPerRack)
	w("Figures are means over %d seeds. Step times come from the cost model in `bench/quality`\n", len(r.Quality[0].Reports))
	w("(below); slowdown is step time over the best placement's, GPU-time weighted over the jobs every\n")
	w("placer placed; Q = (random - placer)/(random - best) on the mean slowdown.\n\n")
	w("| preset | placer | mean slowdown | p95 slowdown | Q | multi-GPU jobs on one node* | PS bytes crossing a NIC | racks per job | blocked (by fragmentation) |\n|---|---|---|---|---|---|---|---|---|\n")
	var groups []string
	chart := barChart{Title: "Placement quality Q (1 = best placement, 0 = random)", YLabel: "Q", Series: []string{"stock", "paddle"}, Format: "%.2f"}
	for _, q := range r.Quality {
		for _, placer := range []string{"random", "stock", "paddle"} {
			m := func(f func(quality.Metrics) float64) float64 { return q.mean(placer, f) }
			w("| %s | %s | %.3f | %.3f | %.2f | %.0f%% | %.0f%% | %.2f | %.1f (%.1f) |\n", q.Preset.Name, placer,
				m(meanSlowdown), m(p95Slowdown), m(qScore), 100*m(oneNode), 100*m(psCrossNIC), m(racks),
				m(blocked), m(blockedByFragmentation))
		}
		groups = append(groups, q.Preset.Name)
		chart.Values = append(chart.Values, []float64{q.mean("stock", qScore), q.mean("paddle", qScore)})
	}
	chart.Groups = groups
	_ = os.WriteFile(filepath.Join(dir, qualitySVG), []byte(chart.SVG()), 0o644)
	w("\npaddle vs stock (paddle / stock; below 1 is better):\n\n")
	w("| preset | mean slowdown | p95 slowdown | PS bytes crossing a NIC | racks per job | jobs blocked |\n|---|---|---|---|---|---|\n")
	for _, q := range r.Quality {
		ratio := func(f func(quality.Metrics) float64) string {
			return ratioOf(q.mean("paddle", f), q.mean("stock", f))
		}
		w("| %s | %s | %s | %s | %s | %s |\n", q.Preset.Name,
			ratio(meanSlowdown), ratio(p95Slowdown), ratio(psCrossNIC), ratio(racks), ratio(blocked))
	}
	w("\n\\* of the multi-GPU jobs that fit in one node. Workload of the first seed per preset: ")
	for i, q := range r.Quality {
		if i > 0 {
			w("; ")
		}
		w("%s: %s", q.Preset.Name, q.Reports[0].Workload)
	}
	w(".\n\n![placement quality](%s)\n\n", qualitySVG)
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

func (r *Report) writeCluster(b *strings.Builder, dir string) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	w("## 3. End to end on the local cluster\n\n")
	w("Real etcd, kube-apiserver and kube-controller-manager (garbage collector, namespace and PV\n")
	w("controllers; not the node lifecycle controller, see `WithoutNodeLifecycle`), KWOK nodes (8 GPUs,\n")
	w("racks of 25), our Volcano\n")
	w("builds with the flags of Volcano's release manifest (controller manager `--kube-api-qps=50`, scheduler\n")
	w("`--schedule-period=1s`), all on this machine. Per size, one cluster; each configuration in turn\n")
	w("(the scheduler restarted with it): first one 64-pod gang alone, then a wave of Paddle jobs submitted\n")
	w("at once (gangs of 2 to 256 pods, 30%% PS, one GPU per trainer, DNS barrier off), waited until every pod\n")
	w("is bound. Paddle runs deploy/paddle's configuration with `paddle.smallJobHeadroom: 0`: this part\n")
	w("measures binding speed, and a wave that fills the cluster would leave its last gangs waiting for\n")
	w("`paddle.starvationAfter`. Command: `go run ./bench/cmd/bench -mode %s -skip allocate,quality`.\n\n", r.Mode)
	w("Bind lag: from a pod's creation to its binding; it includes waiting for the rest of its gang to be\n")
	w("created. Gang lag: from a job's last pod created to its last pod bound, the scheduler's share.\n\n")
	w("| nodes | pods | config | jobs | pods bound/s | pods created/s | last gang bound | bind lag median / p95 | gang lag median | 64-pod gang | sessions (mean) |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	var groups []string
	seen := map[string]bool{}
	vals := map[string]map[string]float64{}
	for _, m := range r.Cluster {
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
	for _, f := range r.ClusterFailures {
		w("\nNot measured: %s\n", f)
	}
	r.writeClusterRatios(b)
	w("\nCPU seconds used by each component during the wave (2 cores):\n\n")
	var comps []string
	for _, m := range r.Cluster {
		for k := range m.CPU {
			if !contains(comps, k) {
				comps = append(comps, k)
			}
		}
	}
	sort.Strings(comps)
	w("| nodes | config | %s |\n|---|---|%s\n", strings.Join(comps, " | "), strings.Repeat("---|", len(comps)))
	for _, m := range r.Cluster {
		var cells []string
		for _, c := range comps {
			cells = append(cells, fmt.Sprintf("%.0f", m.CPU[c]))
		}
		w("| %d | %s | %s |\n", m.Size.Nodes, m.Config, strings.Join(cells, " | "))
	}
	w("\nWhat limits throughput:\n\n")
	for _, m := range r.Cluster {
		w("- %d nodes, %s: %s\n", m.Size.Nodes, m.Config, limiter(m))
	}
	w("\nThe floor of the 64-pod gang is about two scheduling periods (enqueue in one session, allocate in\n")
	w("the next: 2 x 1 s) plus the controller creating its 64 pods at 50 requests/s (about 1.3 s) and a\n")
	w("session; measured values above.\n\n")
	chart := barChart{Title: "Pods bound per second (wave)", YLabel: "pods/s", Groups: groups, Series: []string{"stock", "paddle"}, Format: "%.0f"}
	for _, g := range groups {
		chart.Values = append(chart.Values, []float64{vals[g]["stock"], vals[g]["paddle"]})
	}
	_ = os.WriteFile(filepath.Join(dir, clusterSVG), []byte(chart.SVG()), 0o644)
	w("![pods bound per second](%s)\n", clusterSVG)
}

// limiter names the stage that sets the pace, from the evidence measured:
// creation rate against the controller's client QPS, binding rate against
// creation rate and session length against the scheduling period (the
// scheduler's share), and which process used the CPU.
func limiter(m clusterbench.Measurement) string {
	total, busiest, bv := 0.0, "", 0.0
	for _, k := range sortedKeys(m.CPU) {
		v := m.CPU[k]
		total += v
		if v > bv {
			busiest, bv = k, v
		}
	}
	util := total / math.Max(m.LastGangBound.Seconds(), 1) / 2
	// Binding well below creation while sessions last several periods means
	// pods wait for the scheduler, not for the controller.
	schedulerBound := m.BoundPerSecond < 0.85*m.CreatedPerSecond && m.SessionMean > 2*schedulePeriod
	gangLag, session := m.GangLag.Round(10*time.Millisecond), m.SessionMean.Round(time.Millisecond)
	var pace string
	switch {
	case schedulerBound:
		pace = fmt.Sprintf("pods are created at %.0f/s (the controller's client limit is --kube-api-qps=%d) but bound at only %.0f/s, so the scheduler sets the pace: its sessions take %s against a %s period, and once a gang's last pod exists it waits a median %s to be bound",
			m.CreatedPerSecond, controllerQPS, m.BoundPerSecond, session, schedulePeriod, gangLag)
	case m.CreatedPerSecond >= 0.8*controllerQPS:
		pace = fmt.Sprintf("the controller creates pods at %.0f/s, at its client limit (--kube-api-qps=%d), and pods are bound at %.0f/s, so pod creation sets the pace",
			m.CreatedPerSecond, controllerQPS, m.BoundPerSecond)
	default:
		pace = fmt.Sprintf("pods are created at %.0f/s (below the controller's %d/s limit) and bound at %.0f/s",
			m.CreatedPerSecond, controllerQPS, m.BoundPerSecond)
	}
	if !schedulerBound {
		pace += fmt.Sprintf("; once a gang's last pod exists it is bound after a median %s (sessions of %s every %s period)", gangLag, session, schedulePeriod)
	}
	cpu := fmt.Sprintf("the 2 cores are %.0f%% busy, %s the busiest process (%.0f of %.0f CPU s)", 100*util, busiest, bv, total)
	if util >= 0.9 {
		cpu += ", so the machine is saturated and the scheduler competes for CPU with the API server"
	}
	return pace + "; " + cpu + "."
}

// schedulePeriod is the scheduler's --schedule-period on the local cluster.
const schedulePeriod = time.Second

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

// writeClusterRatios states paddle over stock for each cluster size.
func (r *Report) writeClusterRatios(b *strings.Builder) {
	w := func(f string, a ...interface{}) { fmt.Fprintf(b, f, a...) }
	type pair struct{ stock, paddle *clusterbench.Measurement }
	var sizes []clusterbench.Size
	pairs := map[clusterbench.Size]*pair{}
	for i := range r.Cluster {
		m := &r.Cluster[i]
		p := pairs[m.Size]
		if p == nil {
			p = &pair{}
			pairs[m.Size] = p
			sizes = append(sizes, m.Size)
		}
		switch m.Config {
		case "stock":
			p.stock = m
		case "paddle":
			p.paddle = m
		}
	}
	var rows []string
	for _, sz := range sizes {
		p := pairs[sz]
		if p.stock == nil || p.paddle == nil {
			continue
		}
		d := func(f func(*clusterbench.Measurement) time.Duration) string {
			return ratioOf(f(p.paddle).Seconds(), f(p.stock).Seconds())
		}
		rows = append(rows, fmt.Sprintf("| %d | %d | %s | %s | %s | %s | %s | %s |", sz.Nodes, sz.Pods,
			ratioOf(p.paddle.BoundPerSecond, p.stock.BoundPerSecond),
			d(func(m *clusterbench.Measurement) time.Duration { return m.LastGangBound }),
			d(func(m *clusterbench.Measurement) time.Duration { return m.MedianBindLag }),
			d(func(m *clusterbench.Measurement) time.Duration { return m.GangLag }),
			d(func(m *clusterbench.Measurement) time.Duration { return m.Gang64 }),
			d(func(m *clusterbench.Measurement) time.Duration { return m.SessionMean })))
	}
	if len(rows) == 0 {
		return
	}
	w("\npaddle vs stock (paddle / stock; for pods bound/s above 1 is better, for times below 1):\n\n")
	w("| nodes | pods | pods bound/s | last gang bound | bind lag median | gang lag median | 64-pod gang | session |\n|---|---|---|---|---|---|---|---|\n")
	w("%s\n", strings.Join(rows, "\n"))
}

// ratioOf formats a/b, or "-" when b is zero.
func ratioOf(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}
