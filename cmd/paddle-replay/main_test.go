package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{name: "help", args: []string{"help"}, code: 0, stdout: []string{"export", "run", "help"}},
		{name: "help export", args: []string{"help", "export"}, code: 0, stdout: []string{"-kubeconfig", "-since", "-namespace", "-o ", "-omit-names"}},
		{name: "help of an unknown command", args: []string{"help", "replay"}, code: 2, stderr: []string{`no command "replay"`, "export, run, help"}},
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
