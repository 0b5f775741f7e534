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

// deploy/paddle's tiers are the stock tiers with paddle added.
func TestDeployConfIsStockPlusPaddle(t *testing.T) {
	_, b := readConf(t, DeploySchedulerConf)
	_, s := readConf(t, StockSchedulerConf)
	for _, line := range strings.Split(strings.TrimSpace(string(s)), "\n") {
		if !strings.Contains(string(b), line) {
			t.Errorf("deploy/paddle/volcano-scheduler.conf lacks stock line %q", line)
		}
	}
	if !strings.Contains(string(b), "- name: paddle") {
		t.Error("deploy/paddle/volcano-scheduler.conf does not enable paddle")
	}
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
