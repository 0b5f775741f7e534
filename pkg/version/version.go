// Package version reports the volcano-paddle version and the Volcano release
// compiled into our binaries.
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	volcanoversion "volcano.sh/volcano/pkg/version"
)

// Set at link time by the Makefile (-X); the defaults mark a plain `go build`.
var (
	Version = "devel"
	GitSHA  = "unknown"
	Built   = "unknown"
)

const volcanoModule = "volcano.sh/volcano"

// VolcanoVersion is the version of volcano.sh/volcano linked into this binary,
// read from the module build info so it can never disagree with go.mod.
func VolcanoVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == volcanoModule {
			if dep.Replace != nil {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	return "unknown"
}

// Lines is what `--version` prints, one fact per line.
func Lines(component string) []string {
	return []string{
		fmt.Sprintf("%s (volcano-paddle)", component),
		fmt.Sprintf("Version: %s", Version),
		fmt.Sprintf("Git SHA: %s", GitSHA),
		fmt.Sprintf("Built At: %s", Built),
		fmt.Sprintf("Volcano Version: %s", VolcanoVersion()),
		fmt.Sprintf("Go Version: %s", runtime.Version()),
		fmt.Sprintf("Go OS/Arch: %s/%s", runtime.GOOS, runtime.GOARCH),
	}
}

// Print writes Lines to w.
func Print(w io.Writer, component string) {
	for _, l := range Lines(component) {
		fmt.Fprintln(w, l)
	}
}

// Stamp makes Volcano's own version variables, which its components log at
// start-up and expose in metrics, name the embedded Volcano release and us.
func Stamp() {
	volcanoversion.Version = fmt.Sprintf("%s (volcano-paddle %s)", VolcanoVersion(), Version)
	volcanoversion.GitSHA = GitSHA
	volcanoversion.Built = Built
}
