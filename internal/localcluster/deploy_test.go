package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// deploy/stock must restore exactly Volcano's Helm default tiers, the same
// file the benchmarks and tests call "stock" (read from the module cache).
func TestStockConfMatchesVolcano(t *testing.T) {
	stock, err := StockSchedulerConf()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(stock)
	if err != nil {
		t.Fatal(err)
	}
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

// deploy/paddle's tiers are the stock tiers with paddle added.
func TestDeployConfIsStockPlusPaddle(t *testing.T) {
	ours, err := DeploySchedulerConf()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ours)
	if err != nil {
		t.Fatal(err)
	}
	stock, _ := StockSchedulerConf()
	s, _ := os.ReadFile(stock)
	for _, line := range strings.Split(strings.TrimSpace(string(s)), "\n") {
		if !strings.Contains(string(b), line) {
			t.Errorf("deploy/paddle/volcano-scheduler.conf lacks stock line %q", line)
		}
	}
	if !strings.Contains(string(b), "- name: paddle") {
		t.Error("deploy/paddle/volcano-scheduler.conf does not enable paddle")
	}
}
