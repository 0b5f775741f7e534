package localcluster

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

var (
	volcanoDirOnce sync.Once
	volcanoDir     string
	volcanoDirErr  error
)

// VolcanoModuleDir is the module-cache folder of the volcano.sh/volcano
// version our go.mod pins. Volcano's CRDs, release manifest and default
// scheduler configuration are read from there, never copied into the repo.
func VolcanoModuleDir() (string, error) {
	volcanoDirOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			volcanoDirErr = err
			return
		}
		cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "volcano.sh/volcano")
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			volcanoDirErr = fmt.Errorf("locating volcano.sh/volcano in the module cache: %v: %s", err, stderr.String())
			return
		}
		volcanoDir = strings.TrimSpace(string(out))
		if volcanoDir == "" {
			volcanoDirErr = fmt.Errorf("volcano.sh/volcano is not downloaded; run `go mod download`")
		}
	})
	return volcanoDir, volcanoDirErr
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
