package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/volcano-paddle/volcano-paddle/bench/clusterbench"
	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/report"
	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

// The parts of a run other than the replay: the allocate benchmarks, the
// placement quality, the local cluster (the job size part is jobsize.go).

// benchLine is one line of `go test -bench` output of the allocate
// benchmarks.
var benchLine = regexp.MustCompile(`^BenchmarkAllocate/nodes=(\d+)/pods=(\d+)/(\S+?)-\d+\s+(\d+)\s+(\d+) ns/op\s+(\S+) gpus\s+(\S+) placed\s+(\d+) B/op\s+(\d+) allocs/op`)

func runAllocate(ctx context.Context, root string, p *plan, r *report.Report) error {
	if err := sameVolcano(ctx, root); err != nil {
		return err
	}
	args := []string{"test", "./bench/allocate", "-run", "^$", "-bench", "Allocate", "-benchmem",
		"-benchtime", p.allocTime, "-count", strconv.Itoa(p.allocCount), "-timeout", "3h"}
	r.AllocCmd = fmt.Sprintf("BENCH_SIZES=%s go %s", p.allocSizes, strings.Join(args, " "))
	logf("allocate benchmarks: %s", r.AllocCmd)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "BENCH_SIZES="+p.allocSizes)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = nil
	if err := cmd.Start(); err != nil {
		return err
	}
	sums := map[string]*report.AllocResult{}
	var order []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		fmt.Println("  " + sc.Text())
		key := m[1] + "/" + m[2] + "/" + m[3]
		a := sums[key]
		if a == nil {
			n, _ := strconv.Atoi(m[1])
			pd, _ := strconv.Atoi(m[2])
			a = &report.AllocResult{Nodes: n, Pods: pd, Config: m[3]}
			sums[key] = a
			order = append(order, key)
		}
		ns, _ := strconv.ParseFloat(m[5], 64)
		gpus, _ := strconv.ParseFloat(m[6], 64)
		placed, _ := strconv.ParseFloat(m[7], 64)
		by, _ := strconv.ParseFloat(m[8], 64)
		al, _ := strconv.ParseFloat(m[9], 64)
		a.NsPerOp += ns
		a.Gpus += gpus
		a.Placed += placed
		a.Bytes += by
		a.Allocs += al
		a.N++
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("allocate benchmarks: %w", err)
	}
	for _, k := range order {
		a := sums[k]
		f := float64(a.N)
		a.NsPerOp, a.Placed, a.Gpus, a.Bytes, a.Allocs = a.NsPerOp/f, a.Placed/f, a.Gpus/f, a.Bytes/f, a.Allocs/f
		r.Alloc = append(r.Alloc, *a)
	}
	return nil
}

// sameVolcano: the go command the allocate part runs builds the Volcano
// release this bench was built with. Outside make, a plain go command reads
// go.mod (v1.14.1) while a bench built through make embeds v1.15.1; the
// part would then measure another release than the report names.
func sameVolcano(ctx context.Context, root string) error {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", volcanorelease.Module)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list -m %s: %w", volcanorelease.Module, err)
	}
	if got, want := strings.TrimSpace(string(out)), volcanorelease.Version(); got != want {
		return fmt.Errorf("the go command builds Volcano %s here, this bench embeds %s: run it through make, or with the GOFLAGS -modfile of %s", got, want, want)
	}
	return nil
}

func runQuality(p *plan, r *report.Report) error {
	stock, ours, err := simsched.LoadCompared()
	if err != nil {
		return err
	}
	// Placement quality is judged on the same jobs for every placer: the
	// small-job headroom would hold back whole-node gangs of a workload
	// that fills 90% of the cluster (the replay measures what that buys).
	ours.Tiers = paddle.WithArgs(ours.Tiers, map[string]interface{}{paddle.ArgSmallJobHeadroom: 0})
	data := filepath.Join(r.Root, "bench", "quality", "testdata", "pollux")
	for _, preset := range p.presets {
		var reps []*quality.Report
		for seed := int64(1); seed <= int64(p.seeds); seed++ {
			s := quality.Scenario{Preset: preset, Racks: p.racks, NodesPerRack: p.nodes, Seed: seed, PSShare: 0.3, Load: 0.9}
			rep, err := quality.Run(s, data, stock, ours)
			if err != nil {
				return err
			}
			reps = append(reps, rep)
		}
		logf("quality %s: %d seeds\n%s", preset.Name, len(reps), reps[0].String())
		r.Quality = append(r.Quality, report.QualityResult{Preset: preset, Reports: reps})
	}
	return nil
}

func runCluster(ctx context.Context, p *plan, r *report.Report) error {
	stockPath, oursPath, err := localcluster.SchedulerConfs()
	if err != nil {
		return err
	}
	stockConf, err := os.ReadFile(stockPath)
	if err != nil {
		return err
	}
	// This part measures how fast pods are bound, not whom the scheduler
	// holds back: with the small-job headroom, a wave that fills the
	// cluster (the scale mode's 2,000 pods on 250 nodes) would leave its
	// last gangs waiting for paddle.starvationAfter.
	oursConf, err := withoutHeadroom(oursPath)
	if err != nil {
		return err
	}
	r.Cluster, r.ClusterFailures = clusterbench.Run(ctx, clusterbench.Options{
		Sizes:   p.clusterSizes,
		Configs: []clusterbench.Config{{Name: "stock", Conf: stockConf}, {Name: "paddle", Conf: oursConf}},
		Logf:    logf, Seed: 1,
	})
	return nil
}

// headroomArg is paddle.smallJobHeadroom's line in a scheduler
// configuration file.
var headroomArg = regexp.MustCompile(`(?m)^(\s*` + regexp.QuoteMeta(paddle.ArgSmallJobHeadroom) + `:)\s*\S+\s*$`)

// withoutHeadroom is the scheduler configuration file at path with
// paddle.smallJobHeadroom 0.
func withoutHeadroom(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !headroomArg.Match(b) {
		return nil, fmt.Errorf("%s: no %s line to turn the headroom off", path, paddle.ArgSmallJobHeadroom)
	}
	return headroomArg.ReplaceAll(b, []byte("${1} 0")), nil
}

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		if len(f) >= 2 {
			kb, _ := strconv.ParseFloat(f[1], 64)
			mem = fmt.Sprintf(", %.0f GiB RAM", kb/1024/1024)
		}
	}
	return fmt.Sprintf("%s, %d cores%s, %s %s/%s", model, runtime.NumCPU(), mem, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
