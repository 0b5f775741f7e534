package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"volcano.sh/volcano/pkg/scheduler"

	paddleplugin "github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

// TestMain registers the paddle plugin as main does.
func TestMain(m *testing.M) {
	registerPaddle()
	os.Exit(m.Run())
}

func TestCheckSchedulerConf(t *testing.T) {
	deployed, err := os.ReadFile(filepath.Join("..", "..", "deploy", "paddle", "volcano-scheduler.conf"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		content string // "" with noFile: no file at all
		noFile  bool
		noPath  bool
		allow   bool // --allow-without-paddle
		wantErr string
	}{
		{name: "the deployed configuration", content: string(deployed)},
		{name: "paddle in the second tier", content: "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n- plugins:\n  - name: predicates\n  - name: paddle\n"},
		{name: "no path", noPath: true, wantErr: "no --scheduler-conf given"},
		{name: "missing file", noFile: true, wantErr: "reading --scheduler-conf"},
		{name: "empty file", content: "", wantErr: "is invalid"},
		{name: "unparsable YAML", content: "actions: \"enqueue, allocate\"\ntiers: [\n", wantErr: "is invalid"},
		{name: "unknown action", content: "actions: \"enqueue, alocate\"\ntiers:\n- plugins:\n  - name: paddle\n", wantErr: "failed to find Action"},
		{name: "no paddle", content: "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n", wantErr: `no "paddle" plugin in any tier`},
		{name: "no paddle, allowed", allow: true, content: "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n"},
		{name: "no path, allowed", allow: true, noPath: true},
		{name: "unparsable YAML, no paddle allowed", allow: true, content: "tiers: [\n", wantErr: "is invalid"},
		{name: "misspelt plugin", content: "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: padle\n", wantErr: `plugins this scheduler does not have: "padle"`},
		// Bad argument values fall back to defaults, logged (TestBadSchedulerConfigMap).
		{name: "bad paddle argument", content: "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: paddle\n    arguments:\n      paddle.starvationAfter: soon\n"},
		// A removed argument is an unknown key: ignored, logged (paddle.ParseArgs).
		{name: "removed paddle argument", content: "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: paddle\n    arguments:\n      paddle.smallJobHeadroom.patience: 2h\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "volcano-scheduler.conf")
			if !tt.noFile && !tt.noPath {
				if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.noPath {
				path = ""
			}
			err := checkSchedulerConf(path, tt.allow)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("accepted; want an error with %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
				t.Fatalf("error %q does not say %q", err, tt.wantErr)
			}
		})
	}
}

// Paddle's levers next to priority's preemptable function in one tier
// take nothing at equal priority: the start says so, and where to move
// paddle.
func TestLeverPlacementWarning(t *testing.T) {
	const levers = "    arguments:\n      paddle.elastic.shrink: true\n"
	tests := []struct {
		name, content, want string
	}{
		{name: "the deployed configuration", content: "deployed"},
		{name: "paddle last in priority's tier, levers on",
			content: "actions: \"enqueue, allocate, preempt\"\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n  - name: paddle\n" + levers,
			want:    "paddle shares tier 1 with priority"},
		{name: "the same with levers off (the defaults)",
			content: "actions: \"enqueue, allocate, preempt\"\ntiers:\n- plugins:\n  - name: priority\n  - name: paddle\n"},
		{name: "priority's preemptable function off",
			content: "actions: \"enqueue, allocate, preempt\"\ntiers:\n- plugins:\n  - name: priority\n    enablePreemptable: false\n  - name: paddle\n" + levers},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := tt.content
			if content == "deployed" {
				b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "paddle", "volcano-scheduler.conf"))
				if err != nil {
					t.Fatal(err)
				}
				content = string(b)
			}
			_, tiers, _, _, err := scheduler.UnmarshalSchedulerConf(content)
			if err != nil {
				t.Fatal(err)
			}
			args, _, _ := paddleplugin.ArgsIn(tiers)
			got := leverPlacementWarning(tiers, args)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("warning %q, want one with %q", got, tt.want)
			}
		})
	}
}
