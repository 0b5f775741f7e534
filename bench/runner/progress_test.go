package runner

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/bench/quality"
	"github.com/volcano-paddle/volcano-paddle/bench/replay"
)

// A kept window is resumed only by a run of the same window, seeds and
// configurations; its jobs come back too; a damaged file is replayed anew.
func TestProgressResumes(t *testing.T) {
	dir := t.TempDir()
	o := replay.Options{Preset: quality.A100SXM, Start: 100, Jobs: 300, Seed: 1, Load: 0.9, NodesPerRack: 16}
	rep := &replay.Report{Options: o, PerSeed: []replay.SeedResult{{Seed: 1}, {Seed: 2}},
		Metrics: []replay.Metrics{{Config: "stock", Role: replay.RoleStock, MeanJCT: 3600}},
		Jobs:    []replay.RunJobs{{Config: "stock", Run: 1, Seed: 1, Jobs: []replay.JobResult{{Name: "job-00000", Start: 5, End: 10}}}}}
	p := progress{dir: dir, configs: []string{"stock", "paddle"}, seeds: 2}
	if err := p.save(o, rep); err != nil {
		t.Fatal(err)
	}
	if !p.has(o) {
		t.Fatal("the saved window is not kept")
	}
	got, ok := p.load(o)
	if !ok || !reflect.DeepEqual(got.Metrics, rep.Metrics) || !reflect.DeepEqual(got.Jobs, rep.Jobs) {
		t.Fatalf("resumed %v %+v", ok, got)
	}
	other := o
	other.Sensitivity = replay.Sensitivity{LinkScale: 0.5}
	for name, c := range map[string]struct {
		p progress
		o replay.Options
	}{
		"other configurations": {progress{dir: dir, configs: []string{"stock"}, seeds: 2}, o},
		"other seeds":          {progress{dir: dir, configs: p.configs, seeds: 3}, o},
		"other sensitivity":    {p, other},
	} {
		if _, ok := c.p.load(c.o); ok || c.p.has(c.o) {
			t.Errorf("%s: resumed", name)
		}
	}
	if err := os.WriteFile(p.path(o), []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := p.load(o); ok {
		t.Error("a damaged file was resumed")
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, ".window-*")); len(matches) != 0 {
		t.Errorf("temporary files left: %v", matches)
	}
}

// The sensitivity subset: the first held-out window of each stratum, on
// both presets (8 pairs, 4 per preset), all of them held-out windows.
func TestSensitivityWindows(t *testing.T) {
	ws := testWindows(t)
	sens, err := setOf(ws, Sets{Sensitivity: true})
	if err != nil {
		t.Fatal(err)
	}
	held, err := setOf(ws, Sets{HeldOut: true})
	if err != nil {
		t.Fatal(err)
	}
	perPreset := map[string]int{}
	var starts []int
	for _, o := range sens {
		perPreset[o.Preset.Name]++
		if !has(held, o) {
			t.Errorf("%s %d is not a held-out window", o.Preset.Name, o.Start)
		}
		if o.Preset.Name == quality.A100SXM.Name {
			starts = append(starts, o.Start)
		}
	}
	if len(sens) != 8 || perPreset[quality.A100SXM.Name] != 4 || perPreset[quality.PCIeNVLinkPairs.Name] != 4 {
		t.Errorf("%d pairs, %v per preset; want 8, 4 each", len(sens), perPreset)
	}
	if want := []int{13200, 20000, 23000, 74000}; !reflect.DeepEqual(starts, want) {
		t.Errorf("windows %v, want the first of each stratum %v", starts, want)
	}
}
