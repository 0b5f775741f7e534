package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
)

// state is what `serve` records in .local/cluster.json for up, down and
// status; the kubeconfig always sits next to it in .local/kubeconfig.
type state struct {
	PID        int            `json:"pid"`
	Ready      bool           `json:"ready"`
	Error      string         `json:"error,omitempty"`
	Kubeconfig string         `json:"kubeconfig"`
	LogDir     string         `json:"logDir"`
	Components map[string]int `json:"components,omitempty"`
	Nodes      int            `json:"nodes"`
	// RealNode is set when the real node real-0 runs beside the KWOK nodes.
	RealNode bool `json:"realNode,omitempty"`
}

type paths struct{ dir, state, kubeconfig, serveLog string }

func localPaths() (paths, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return paths{}, err
	}
	d := filepath.Join(root, ".local")
	return paths{dir: d, state: filepath.Join(d, "cluster.json"), kubeconfig: filepath.Join(d, "kubeconfig"), serveLog: filepath.Join(d, "serve.log")}, nil
}

func readState(p paths) (*state, error) {
	b, err := os.ReadFile(p.state)
	if err != nil {
		return nil, err
	}
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", p.state, err)
	}
	return &s, nil
}

func writeState(p paths, s *state) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := p.state + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p.state)
}

// running returns the state of a live cluster, or nil when none runs (a
// state file whose server died is stale and is removed).
func running(p paths) (*state, error) {
	s, err := readState(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if s.PID > 0 && syscall.Kill(s.PID, 0) == nil {
		return s, nil
	}
	_ = os.Remove(p.state)
	return nil, nil
}

// stateFor parses the args of a command that takes no flags (down, status),
// so that -h and stray flags are answered, and reads the local cluster's
// paths and its state (nil when none runs).
func stateFor(command string, args []string) (paths, *state, error) {
	p, err := parseArgs(flag.NewFlagSet(command, flag.ContinueOnError), args)
	if err != nil {
		return paths{}, nil, err
	}
	s, err := running(p)
	return p, s, err
}

// parseArgs parses a command's args into fs, so that -h and stray flags are
// answered, and returns the local cluster's paths.
func parseArgs(fs *flag.FlagSet, args []string) (paths, error) {
	if err := fs.Parse(args); err != nil {
		return paths{}, err
	}
	return localPaths()
}
