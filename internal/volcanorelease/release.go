// Package volcanorelease knows the Volcano release compiled into this binary:
// where its module lies in the module cache (its CRDs, release manifest and
// Helm chart are read from there, never copied into this repository) and what
// its mains do that ours must do too.
package volcanorelease

import (
	"encoding/json"
	"flag"
	"fmt"
	"os/exec"
	"reflect"
	"runtime"
	"strings"
	"sync"

	volcanoversion "volcano.sh/volcano/pkg/version"

	"github.com/volcano-paddle/volcano-paddle/pkg/version"
)

// Module is the Go module of Volcano's code.
const Module = "volcano.sh/volcano"

var (
	dirOnce sync.Once
	dir     string
	dirErr  error
)

// ModuleDir is the module-cache folder of the volcano.sh/volcano version
// linked into this binary (go.mod's v1.14.1 or the v1.15.1 modfile's). It
// asks the go command for exactly that version, so a binary built with
// `make VOLCANO=v1.15.1` reads v1.15.1's CRDs whichever go.mod the working
// directory has; the go command downloads it through the module proxy if the
// cache lacks it.
func ModuleDir() (string, error) {
	dirOnce.Do(func() {
		v := Version()
		if v == "" {
			dirErr = fmt.Errorf("cannot tell which %s this binary embeds; build it with the go command in module mode", Module)
			return
		}
		dir, dirErr = downloadDir(Module, v)
	})
	return dir, dirErr
}

// Version is the volcano.sh/volcano version linked into this binary. Binaries
// carry it in their module build info (version.VolcanoVersion); test binaries
// carry no dependencies there, so it is then read from the source file the
// compiler recorded for one of Volcano's functions, which lies in
// ".../volcano.sh/volcano@<version>/..." with or without -trimpath.
func Version() string {
	if v := version.VolcanoVersion(); v != "unknown" && v != "" {
		return v
	}
	fn := runtime.FuncForPC(reflect.ValueOf(volcanoversion.Info).Pointer())
	if fn == nil {
		return ""
	}
	file, _ := fn.FileLine(fn.Entry())
	_, rest, ok := strings.Cut(file, Module+"@")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, "/")
	return v
}

func downloadDir(module, v string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+v).Output()
	var info struct {
		Dir   string
		Error string
	}
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Error != "" || err != nil || info.Dir == "" {
		return "", fmt.Errorf("locating %s@%s in the module cache (go mod download -json): %v %s", module, v, err, info.Error)
	}
	return info.Dir, nil
}

// InitKlog does to klog's flags what the mains of Volcano v1.15 do (their
// cmd/*/main.go, after klog.InitFlags): -stderrthreshold is honoured even with
// -logtostderr (kubernetes/klog#212, #432). klog v2.130 (Volcano v1.14.1's)
// has no legacy_stderr_threshold_behavior flag and keeps its old behaviour, as
// Volcano v1.14.1 did; so the flag is set only where it exists.
func InitKlog(fs *flag.FlagSet) {
	if fs.Lookup("legacy_stderr_threshold_behavior") == nil {
		return
	}
	for name, value := range map[string]string{"legacy_stderr_threshold_behavior": "false", "stderrthreshold": "INFO"} {
		if err := fs.Set(name, value); err != nil {
			panic(fmt.Sprintf("klog flag %s=%s: %v", name, value, err))
		}
	}
}
