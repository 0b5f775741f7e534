package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
)

// fakeBinaries writes our three binaries as scripts whose --version names
// the given Volcano release ("" prints no such line).
func fakeBinaries(t *testing.T, release string) string {
	t.Helper()
	dir := t.TempDir()
	line := ""
	if release != "" {
		line = "echo 'Volcano Version: " + release + "'\n"
	}
	for _, name := range []string{WebhookManager, ControllerManager, Scheduler} {
		script := "#!/bin/sh\necho 'Version: test'\n" + line
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCheckVolcanoBinaries(t *testing.T) {
	own := volcanorelease.Version()
	if own == "" {
		t.Fatal("this test binary names no Volcano release")
	}
	other := "v1.14.1"
	if own == other {
		other = "v1.15.1"
	}
	cases := []struct {
		name    string
		release string
		wantErr string
	}{
		{name: "same release", release: own},
		{name: "no release line", release: ""},
		{name: "other release", release: other, wantErr: "make select VOLCANO=" + own},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := checkVolcanoBinaries(context.Background(), fakeBinaries(t, tc.release))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "embeds Volcano "+other) {
				t.Fatalf("error %v, want one naming %s and %q", err, other, tc.wantErr)
			}
		})
	}
	if err := checkVolcanoBinaries(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "make binaries") {
		t.Fatalf("missing binaries: error %v, want one saying to build them", err)
	}
}
