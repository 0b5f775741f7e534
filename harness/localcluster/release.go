package localcluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
)

// versionTimeout bounds one `--version` call of a component binary.
const versionTimeout = 10 * time.Second

// checkVolcanoBinaries refuses to start when our three Volcano binaries in
// binDir embed another Volcano release than this program: the CRDs and the
// release manifest's flags this program installs and passes are its own
// release's, and a binary of the other release exits on them (a v1.14.1
// controller manager refuses v1.15.1's --sharding-configmap). bin/ holds
// links that `make select` points at one release's binaries, so this
// happens after a make command for the other release.
func checkVolcanoBinaries(ctx context.Context, binDir string) error {
	want := volcanorelease.Version()
	if want == "" {
		return nil
	}
	for _, name := range []string{WebhookManager, ControllerManager, Scheduler} {
		got, err := embeddedVolcano(ctx, filepath.Join(binDir, name))
		if err != nil {
			return err
		}
		if got != "" && got != want {
			return fmt.Errorf("%s embeds Volcano %s, but this program was built for Volcano %s: "+
				"run `make select VOLCANO=%s` (or `make binaries VOLCANO=%s`) first", filepath.Join(binDir, name), got, want, want, want)
		}
	}
	return nil
}

// embeddedVolcano reads the "Volcano Version:" line of a binary's
// --version; "" when it has none (a build without module information).
func embeddedVolcano(ctx context.Context, bin string) (string, error) {
	v, err := versionLine(ctx, bin, "Volcano Version")
	if err != nil {
		return "", fmt.Errorf("%w (build it with `make binaries`)", err)
	}
	if v == "unknown" {
		return "", nil
	}
	return v, nil
}

// versionLine runs one of our binaries with --version and returns the value
// of its "key: value" line (pkg/version: Lines); "" when it prints no such
// line.
func versionLine(ctx context.Context, bin, key string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", bin, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+": "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", nil
}
