package quality

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// profiles are the Pollux models' measured step times
// (testdata/pollux/<model>/placements.csv), compiled into the binaries that
// replay a cluster's own history (cmd/paddle-replay run): such a binary
// runs where the repository's testdata is not at hand. The Philly trace
// (philly.csv, 3.4 MB) stays out: a user replays their own history.
//
//go:embed testdata/pollux/*/placements.csv
var profiles embed.FS

// profilesRoot is the folder of the embedded profiles, one folder per model.
const profilesRoot = "testdata/pollux"

// WriteProfiles writes the embedded model profiles into dir as
// dir/<model>/placements.csv, the layout Models and LoadPlacements read
// (and replay.Replay's dataDir): the replay engine reads its profiles from
// a folder.
func WriteProfiles(dir string) error {
	return fs.WalkDir(profiles, profilesRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := profiles.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(profilesRoot, filepath.FromSlash(p))
		if err != nil {
			return err
		}
		out := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return fmt.Errorf("model profiles: %w", err)
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return fmt.Errorf("model profiles: %w", err)
		}
		return nil
	})
}
