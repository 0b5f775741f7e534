package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// deploy/stock must restore exactly Volcano's Helm default tiers, the same
// file the benchmarks and tests call "stock" (read from the module cache).
func TestStockConfMatchesVolcano(t *testing.T) {
	stock, want := readConf(t, StockSchedulerConf)
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "deploy", "stock", "volcano-scheduler.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("deploy/stock/volcano-scheduler.conf differs from %s", stock)
	}
}

// deploy/paddle's configuration is the stock one with paddle added and
// the preempt and reclaim actions paddle's levers need; every other
// plugin keeps its stock settings, so that Volcano's own preemption and
// reclaim work for every job as without paddle (docs/scheduler-plugin.md,
// "Preemption and reclaim beside Volcano's plugins"); nothing else
// differs.
func TestDeployConfIsStockPlusPaddle(t *testing.T) {
	o, s := readSchedConf(t, DeploySchedulerConf), readSchedConf(t, StockSchedulerConf)
	if want := strings.Replace(s.Actions, "allocate,", "allocate, preempt, reclaim,", 1); o.Actions != want {
		t.Errorf("actions %q, want %q", o.Actions, want)
	}
	if len(o.Tiers) != len(s.Tiers) {
		t.Fatalf("%d tiers, stock has %d", len(o.Tiers), len(s.Tiers))
	}
	paddle := false
	for i := range s.Tiers {
		var mine []map[string]interface{}
		for _, p := range o.Tiers[i].Plugins {
			if p["name"] == "paddle" {
				paddle = true
				continue
			}
			mine = append(mine, p)
		}
		if len(mine) != len(s.Tiers[i].Plugins) {
			t.Fatalf("tier %d: plugins %v, stock has %v", i, o.Tiers[i].Plugins, s.Tiers[i].Plugins)
		}
		for j, sp := range s.Tiers[i].Plugins {
			for k, v := range sp {
				if mine[j][k] != v {
					t.Errorf("tier %d plugin %v: %s=%v, stock has %v", i, sp["name"], k, mine[j][k], v)
				}
			}
			for k, v := range mine[j] {
				if _, inStock := sp[k]; !inStock {
					t.Errorf("tier %d plugin %v: %s=%v is not in the stock configuration", i, sp["name"], k, v)
				}
			}
		}
	}
	if !paddle {
		t.Error("deploy/paddle/volcano-scheduler.conf does not enable paddle")
	}
}

// schedConf is the part of a Volcano scheduler configuration compared here.
type schedConf struct {
	Actions string `json:"actions"`
	Tiers   []struct {
		Plugins []map[string]interface{} `json:"plugins"`
	} `json:"tiers"`
}

func readSchedConf(t *testing.T, locate func() (string, error)) schedConf {
	t.Helper()
	path, b := readConf(t, locate)
	var c schedConf
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// readConf reads the scheduler configuration that locate finds.
func readConf(t *testing.T, locate func() (string, error)) (string, []byte) {
	t.Helper()
	path, err := locate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}
