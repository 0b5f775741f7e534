// Command vc-scheduler-paddle is Volcano's scheduler (every stock action and
// plugin) with the paddle scheduler plugin compiled in. It takes exactly the
// flags of the vc-scheduler of the Volcano release it embeds (flags.go);
// enable the plugin in the scheduler ConfigMap tiers (see deploy/).
package main

import (
	goflag "flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/spf13/pflag"
	_ "go.uber.org/automaxprocs"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/cmd/scheduler/app"

	// Volcano's stock actions and plugins, as in its own main.
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"
	_ "volcano.sh/volcano/pkg/scheduler/util/assert"

	// The paddle scheduler plugin; enable it in the ConfigMap tiers.
	_ "github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
	"github.com/volcano-paddle/volcano-paddle/pkg/version"
)

func main() {
	runtime.GOMAXPROCS(runtime.NumCPU())
	klog.InitFlags(nil)
	volcanorelease.InitKlog(goflag.CommandLine)
	version.Stamp()

	var logFlushFreq time.Duration
	s := addFlags(pflag.CommandLine, &logFlushFreq)
	s.RegisterOptions()

	cliflag.InitFlags()

	if s.PrintVersion {
		version.Print(os.Stdout, "vc-scheduler-paddle")
		return
	}
	if err := s.CheckOptionOrDie(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	if err := checkSchedulerConf(s.SchedulerConf, *allowWithoutPaddle); err != nil {
		fmt.Fprintf(os.Stderr, "vc-scheduler-paddle: %v\n", err)
		os.Exit(1)
	}
	if s.CaCertFile != "" && s.CertFile != "" && s.KeyFile != "" {
		if err := s.ParseCAFiles(nil); err != nil {
			fmt.Fprintf(os.Stderr, "failed to parse CA file: %v\n", err)
			os.Exit(1)
		}
	}

	klog.StartFlushDaemon(logFlushFreq)
	defer klog.Flush()
	klog.InfoS("Starting vc-scheduler-paddle", "version", version.Version, "volcano", version.VolcanoVersion())

	if err := app.Run(s); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
}
