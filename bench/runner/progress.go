package runner

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/volcano-paddle/volcano-paddle/bench/replay"
)

// progress keeps every window's results as soon as its seeds are replayed,
// one gzipped file per window, so that a long run stopped by a signal, a
// crash or a lost session resumes where it stopped, and so that several
// processes (-shard) can share the windows of one run. A kept window is
// reused only for the same window options (workload, sensitivity, seeds)
// and the same configurations; anything else is replayed anew.
type progress struct {
	dir     string
	configs []string
	seeds   int
}

// kept is one window's file: its report and every job's result.
type kept struct {
	Configs []string
	Seeds   int
	Report  *replay.Report
	Jobs    []replay.RunJobs
}

// path of window o's file.
func (p progress) path(o replay.Options) string {
	name := fmt.Sprintf("%s-%d+%d-seed%d", o.Preset.Name, o.Start, o.Jobs, o.Seed)
	if s := o.Sensitivity; s.LinkScale > 0 || s.FirstFreeGPUs {
		name += fmt.Sprintf("-links%g-firstfree%v", s.LinkScale, s.FirstFreeGPUs)
	}
	if o.Flex.On() {
		name += fmt.Sprintf("-flex%g-%g-%g", o.Flex.ElasticShare, o.Flex.CheckpointShare, o.Flex.RestartCost)
	}
	return filepath.Join(p.dir, name+".json.gz")
}

// load reads window o's kept results when they match this run.
func (p progress) load(o replay.Options) (*replay.Report, bool) {
	if p.dir == "" {
		return nil, false
	}
	f, err := os.Open(p.path(o))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, false
	}
	var k kept
	if err := json.NewDecoder(z).Decode(&k); err != nil || k.Report == nil {
		return nil, false
	}
	if !slices.Equal(k.Configs, p.configs) || k.Seeds != p.seeds || len(k.Report.PerSeed) != p.seeds || !sameWindow(k.Report.Options, o) {
		return nil, false
	}
	k.Report.Jobs = k.Jobs
	return k.Report, true
}

// has: window o's results are kept and match this run.
func (p progress) has(o replay.Options) bool {
	_, ok := p.load(o)
	return ok
}

// sameWindow compares what decides a window's replay.
func sameWindow(a, b replay.Options) bool {
	return a.Preset.Name == b.Preset.Name && a.Start == b.Start && a.Jobs == b.Jobs && a.Seed == b.Seed &&
		a.Load == b.Load && a.PSShare == b.PSShare && a.NodesPerRack == b.NodesPerRack && a.Flex == b.Flex &&
		a.Sensitivity == b.Sensitivity && a.TracePath == b.TracePath && a.Nodes == b.Nodes
}

// save writes window o's results (to a temporary file renamed into place,
// so a kill mid-write leaves no half file to resume from).
func (p progress) save(o replay.Options, rep *replay.Report) error {
	if p.dir == "" {
		return nil
	}
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	path := p.path(o)
	tmp, err := os.CreateTemp(p.dir, ".window-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	z := gzip.NewWriter(tmp)
	if err := json.NewEncoder(z).Encode(kept{Configs: p.configs, Seeds: p.seeds, Report: rep, Jobs: rep.Jobs}); err != nil {
		tmp.Close()
		return err
	}
	if err := z.Close(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
