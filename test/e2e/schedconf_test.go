package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/test/e2e/framework"
)

// A scheduler started with a configuration it cannot use stops with the
// reason instead of running Volcano's default plugins without paddle
// (issue 28, item 3). No cluster is needed: the check comes before the
// scheduler connects; the kubeconfig points at a closed port so that a
// scheduler without the check would only log connection errors.
func TestSchedulerRefusesBadConf(t *testing.T) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin", localcluster.Scheduler)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, conf, want string
	}{
		{"unparsable", "actions: \"enqueue, allocate\"\ntiers: [\n", "is invalid"},
		{"unknown action", "actions: \"enqueue, alocate\"\ntiers:\n- plugins:\n  - name: paddle\n", "failed to find Action"},
		{"without paddle", "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: gang\n  - name: predicates\n", `no "paddle" plugin in any tier`},
		{"misspelt plugin", "actions: \"enqueue, allocate\"\ntiers:\n- plugins:\n  - name: paddel\n", `does not have: "paddel"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".conf")
			if err := os.WriteFile(conf, []byte(tt.conf), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+kubeconfig, "--leader-elect=false",
				"--scheduler-conf="+conf, "--enable-healthz=false", "--enable-metrics=false", "--listen-address=127.0.0.1:0")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var exit *exec.ExitError
			if ctx.Err() != nil || !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("scheduler with the %s configuration: %v (context %v); want a non-zero exit at once; output:\n%s", tt.name, err, ctx.Err(), out.String())
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Fatalf("exit output does not say %q:\n%s", tt.want, out.String())
			}
		})
	}
}

// A running scheduler keeps its last good configuration when the file
// turns invalid (Volcano's Scheduler.loadSchedulerConf logs and returns),
// and says so in its log.
func TestSchedulerKeepsLastGoodConfOnReload(t *testing.T) {
	c := framework.Cluster(t)
	ours, err := localcluster.DeploySchedulerConf()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { useSchedulerConf(t, c, ours) })
	logPath := c.LogPath(localcluster.Scheduler)
	before, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetSchedulerConf([]byte("actions: \"enqueue, allocate\"\ntiers: [\n")); err != nil {
		t.Fatal(err)
	}
	var after string
	err = framework.Poll(context.Background(), 60*time.Second, func(context.Context) (bool, error) {
		b, err := os.ReadFile(logPath)
		if err != nil {
			return false, err
		}
		after = string(b[len(before):])
		i := strings.Index(after, "is invalid")
		return i >= 0 && strings.Contains(after[i:], "Finished loading scheduler config"), nil
	})
	if err != nil {
		t.Fatalf("no reload of the invalid configuration logged: %v; log since the write:\n%s", err, after)
	}
	final := after[strings.Index(after, "is invalid"):]
	final = final[strings.Index(final, "Finished loading scheduler config"):]
	if nl := strings.IndexByte(final, '\n'); nl >= 0 {
		final = final[:nl]
	}
	if !strings.Contains(final, "paddle") {
		t.Fatalf("after an invalid reload the scheduler runs without paddle: %s", final)
	}
	if err := c.Healthy(); err != nil {
		t.Fatalf("scheduler after an invalid reload: %v", err)
	}
}
