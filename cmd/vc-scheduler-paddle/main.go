// Command vc-scheduler-paddle is Volcano's scheduler (every stock action and
// plugin) with the paddle scheduler plugin compiled in. It takes exactly the
// flags of Volcano's vc-scheduler; enable the plugin in the scheduler
// ConfigMap tiers (see deploy/).
package main

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/spf13/pflag"
	_ "go.uber.org/automaxprocs"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	cliflag "k8s.io/component-base/cli/flag"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/cmd/scheduler/app"
	"volcano.sh/volcano/cmd/scheduler/app/options"
	commonutil "volcano.sh/volcano/pkg/util"

	// Volcano's stock actions and plugins, as in its own main.
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"
	_ "volcano.sh/volcano/pkg/scheduler/util/assert"

	// The paddle scheduler plugin; enable it in the ConfigMap tiers.
	_ "github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
	"github.com/volcano-paddle/volcano-paddle/pkg/version"
)

var logFlushFreq = pflag.Duration("log-flush-frequency", 5*time.Second, "Maximum number of seconds between log flushes")

func main() {
	runtime.GOMAXPROCS(runtime.NumCPU())
	klog.InitFlags(nil)
	version.Stamp()

	fs := pflag.CommandLine
	s := options.NewServerOption()
	s.AddFlags(fs)
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)

	commonutil.LeaderElectionDefault(&s.LeaderElection)
	s.LeaderElection.ResourceName = commonutil.GenerateComponentName(s.SchedulerNames)
	componentbaseoptions.BindLeaderElectionFlags(&s.LeaderElection, fs)
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

	klog.StartFlushDaemon(*logFlushFreq)
	defer klog.Flush()
	klog.InfoS("Starting vc-scheduler-paddle", "version", version.Version, "volcano", version.VolcanoVersion())

	if err := app.Run(s); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
}
