// Command vc-scheduler-paddle is Volcano's scheduler (every stock action and
// plugin) with the paddle scheduler plugin compiled in. It takes exactly the
// flags of the vc-scheduler of the Volcano release it embeds (flags.go);
// enable the plugin in the scheduler ConfigMap tiers (see deploy/).
package main

import (
	"time"

	"github.com/spf13/pflag"
	_ "go.uber.org/automaxprocs"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/cmd/scheduler/app"
	"volcano.sh/volcano/pkg/scheduler/framework"

	// Volcano's stock actions and plugins, as in its own main.
	_ "volcano.sh/volcano/pkg/scheduler/actions"
	_ "volcano.sh/volcano/pkg/scheduler/plugins"
	_ "volcano.sh/volcano/pkg/scheduler/util/assert"

	"github.com/volcano-paddle/volcano-paddle/internal/cmdutil"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

// registerPaddle registers the paddle scheduler plugin (enable it in the
// ConfigMap tiers) over one store for the life of the process: the
// reservations starving gangs hold from one session to the next, on the
// real clock, and Events on the Volcano Jobs it holds back.
func registerPaddle() {
	store := paddle.NewStore(time.Now)
	store.PostJobEvents()
	framework.RegisterPluginBuilder(paddle.PluginName, paddle.Builder(store))
}

func main() {
	registerPaddle()
	cmdutil.Init()
	s, logFlushFreq := addFlags(pflag.CommandLine)
	s.RegisterOptions()
	cmdutil.ParseFlags("vc-scheduler-paddle", &s.PrintVersion)
	cmdutil.ExitOnError("", s.CheckOptionOrDie())
	cmdutil.ExitOnError("vc-scheduler-paddle", checkSchedulerConf(s.SchedulerConf, *allowWithoutPaddle))
	cmdutil.ParseCAFiles(s.CaCertFile, s.CertFile, s.KeyFile, func() error { return s.ParseCAFiles(nil) })

	cmdutil.StartLogging("vc-scheduler-paddle", *logFlushFreq)
	defer klog.Flush()
	cmdutil.ExitOnError("", app.Run(s))
}
