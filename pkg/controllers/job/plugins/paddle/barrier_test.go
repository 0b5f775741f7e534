package paddle

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runBarrier runs the barrier's real script with sh, a resolv.conf and an
// nslookup that answers for the names in resolvable (after failing
// failFirst times for each).
func runBarrier(t *testing.T, hosts string, resolvable []string, failFirst int, timeout string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte("nameserver 10.96.0.10\nsearch ml.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := `#!/bin/sh
count_file="` + dir + `/count-$1"
n=$(cat "$count_file" 2>/dev/null || echo 0)
echo $((n+1)) > "$count_file"
echo "$1" >> "` + dir + `/asked"
for ok in ` + strings.Join(resolvable, " ") + `; do
  if [ "$1" = "$ok" ] && [ "$n" -ge ` + itoa(failFirst) + ` ]; then exit 0; fi
done
exit 1
`
	if err := os.WriteFile(filepath.Join(dir, "nslookup"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", barrierScript)
	cmd.Env = append(os.Environ(),
		"PATH="+dir+":"+os.Getenv("PATH"),
		"RESOLV_CONF="+filepath.Join(dir, "resolv.conf"),
		"PADDLE_BARRIER_HOSTS="+hosts,
		"PADDLE_BARRIER_TIMEOUT_SECONDS="+timeout)
	out, err := cmd.CombinedOutput()
	asked, _ := os.ReadFile(filepath.Join(dir, "asked"))
	return string(out) + "\nasked:\n" + string(asked), err
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestBarrierScriptWaitsForEveryPeer(t *testing.T) {
	hosts := "wd-ps-0.wd,wd-worker-0.wd"
	full := []string{"wd-ps-0.wd.ml.svc.cluster.local", "wd-worker-0.wd.ml.svc.cluster.local"}
	out, err := runBarrier(t, hosts, full, 1, "30")
	if err != nil {
		t.Fatalf("barrier failed: %v\n%s", err, out)
	}
	if !strings.Contains(out, "all 2 peers resolve") {
		t.Errorf("output: %s", out)
	}
	// It asked with the namespace's search domain, and retried each name.
	for _, n := range full {
		if strings.Count(out, n) < 2 {
			t.Errorf("%s asked fewer than 2 times:\n%s", n, out)
		}
	}
}

func TestBarrierScriptTimesOut(t *testing.T) {
	start := time.Now()
	out, err := runBarrier(t, "wd-ps-0.wd,wd-worker-0.wd", []string{"wd-ps-0.wd.ml.svc.cluster.local"}, 0, "1")
	if err == nil {
		t.Fatalf("barrier passed although a peer never resolves:\n%s", out)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v", err)
	}
	if !strings.Contains(out, "wd-worker-0.wd.ml.svc.cluster.local does not resolve after 1s") {
		t.Errorf("output does not say which peer is missing:\n%s", out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s with a 1s timeout", d)
	}
}
