package localcluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
)

const modulePath = "github.com/volcano-paddle/volcano-paddle"

// RepoRoot finds the checkout this code runs from by walking up from the
// working directory to our go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if strings.HasPrefix(line, "module ") {
					if strings.TrimSpace(strings.TrimPrefix(line, "module ")) == modulePath {
						f.Close()
						return dir, nil
					}
					break
				}
			}
			f.Close()
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod for %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// VolcanoModuleDir is the module-cache folder of the volcano.sh/volcano
// release compiled into this binary (VOLCANO=v1.14.1 or v1.15.1). Volcano's
// CRDs, release manifest and default scheduler configuration are read from
// there, never copied into the repo.
func VolcanoModuleDir() (string, error) {
	return volcanorelease.ModuleDir()
}

// DeploySchedulerConf is the scheduler configuration cluster operators
// install (deploy/paddle); the local cluster uses the same file.
func DeploySchedulerConf() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "deploy", "paddle", "volcano-scheduler.conf"), nil
}

// StockSchedulerConf is the default configuration of Volcano's Helm chart, the
// baseline every comparison with stock Volcano uses.
func StockSchedulerConf() (string, error) {
	dir, err := VolcanoModuleDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "installer", "helm", "chart", "volcano", "config", "volcano-scheduler.conf"), nil
}

// SchedulerConfs are the two configurations every comparison of stock
// Volcano with paddle runs: StockSchedulerConf and DeploySchedulerConf.
func SchedulerConfs() (stock, paddle string, err error) {
	if stock, err = StockSchedulerConf(); err != nil {
		return "", "", err
	}
	if paddle, err = DeploySchedulerConf(); err != nil {
		return "", "", err
	}
	return stock, paddle, nil
}
