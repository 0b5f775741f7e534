package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/pkg/jobhistory"
)

func TestCommandLine(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     []string // each in stdout
		stderr     []string // each in stderr
		noneOnDisk string   // a path that must not exist afterwards
	}{
		{name: "no command", code: 2, stderr: []string{"Commands:", "export"}},
		{name: "help", args: []string{"help"}, code: 0, stdout: []string{"export", "run", "predict", "help"}},
		{name: "help export", args: []string{"help", "export"}, code: 0, stdout: []string{"-kubeconfig", "-since", "-namespace", "-o ", "-omit-names"}},
		{name: "help of an unknown command", args: []string{"help", "replay"}, code: 2, stderr: []string{`no command "replay"`, "export, run, predict, help"}},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderr: []string{`no command "frobnicate"`}},
		{name: "unknown flag", args: []string{"export", "--frob"}, code: 2, stderr: []string{"flag provided but not defined: -frob"}},
		{name: "bad duration", args: []string{"export", "--since", "a month"}, code: 2, stderr: []string{"-since"}},
		{name: "negative since", args: []string{"export", "--since", "-1h"}, code: 2, stderr: []string{"--since=-1h0m0s", "positive duration"}},
		{name: "stray argument", args: []string{"export", "jobs"}, code: 2, stderr: []string{`unexpected argument "jobs"`}},
		{
			name: "a kubeconfig that is not there", args: []string{"export", "--kubeconfig", missing, "-o", missing + ".csv"},
			code: 1, stderr: []string{"kubeconfig", "no-such-kubeconfig", "--kubeconfig FILE"}, noneOnDisk: missing + ".csv",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout does not say %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr.String())
				}
			}
			if tc.noneOnDisk != "" {
				if _, err := os.Stat(tc.noneOnDisk); !os.IsNotExist(err) {
					t.Errorf("%s exists after a failed export", tc.noneOnDisk)
				}
			}
		})
	}
}

// A failed export leaves the file it was to replace as it was, and no
// temporary file beside it.
func TestOutputReplacesOnlyOnCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.csv")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, _, abort, err := output(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("half")); err != nil {
		t.Fatal(err)
	}
	abort()
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("after an abort the file holds %q, want the old content", b)
	}
	w, commit, _, err := output(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("after a commit the file holds %q, want the new content", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the folder, want only history.csv", len(entries))
	}
}

// predict on a history whose run times follow the queue: the history
// predicts them, the global mean does not, and bad flags are refused.
func TestPredict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := jobhistory.NewWriter(f)
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 100; i++ {
		q, d := "short", 100*time.Second
		if i%2 == 1 {
			q, d = "long", 10000*time.Second
		}
		at := start.Add(time.Duration(i) * 4 * time.Hour)
		if err := w.Write(jobhistory.Record{SubmitTime: at, Start: at, Duration: d, Pods: 1, GPUsPerPod: 1, MinPods: 1, MaxPods: 1, Queue: q, Namespace: q}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string // regular expressions
		stderr []string
	}{
		{"the last 10 days", []string{"predict", "--trace", path, "--last", "240h"}, 0,
			[]string{"100 jobs", "the 61 submitted", `history \(every level\) +1\.0\dx +100% +0\.87`, `global mean \(naive\) +9\.\d\dx`, "shape 61"}, nil},
		{"no job of a whole node", []string{"predict", "--trace", path, "--last", "240h"}, 0,
			[]string{`Jobs of 8 or more GPUs, split at paddle\.smallJobHeadroom\.predictedAbove 4h0m0s: none in the judged part\.`}, nil},
		// 1-GPU nodes: every job is a whole-node gang; at 1 h the queues'
		// 100 s and 10,000 s jobs are told apart without a mistake.
		{"the headroom's split", []string{"predict", "--trace", path, "--last", "240h", "--node-gpus", "1", "--headroom-above", "1h"}, 0,
			[]string{`Jobs of 1 or more GPUs, split at paddle\.smallJobHeadroom\.predictedAbove 1h0m0s: 61 judged; 30 predicted to run less \(the headroom lets them start at once\), 0 of them ran 1h0m0s or more; 31 predicted to run 1h0m0s or more \(it may hold them\), 0 of them ran less\.`}, nil},
		{"no GPUs per node", []string{"predict", "--trace", path, "--node-gpus", "0"}, 2, nil, []string{"--node-gpus=0", "at least 1"}},
		{"no threshold", []string{"predict", "--trace", path, "--headroom-above", "0s"}, 2, nil, []string{"--headroom-above=0s", "positive"}},
		{"no trace", []string{"predict"}, 2, nil, []string{"--trace is required"}},
		{"a missing trace", []string{"predict", "--trace", path + ".gone"}, 1, nil, []string{"--trace", "no such file"}},
		{"a negative span", []string{"predict", "--trace", path, "--last", "-1h"}, 2, nil, []string{"--last=-1h0m0s", "positive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			for _, s := range tc.stdout {
				if !regexp.MustCompile(s).MatchString(stdout.String()) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
				}
			}
		})
	}
}
