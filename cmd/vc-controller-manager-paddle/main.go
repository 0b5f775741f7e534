// Command vc-controller-manager-paddle is Volcano's controller manager (every
// stock controller and job plugin) with the paddle job plugin compiled in.
// Volcano's job controller cannot load plugins at run time, so a job plugin
// needs its own build. It takes exactly the flags of the vc-controller-manager
// of the Volcano release it embeds (flags.go).
package main

import (
	"github.com/spf13/pflag"
	_ "go.uber.org/automaxprocs"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	"k8s.io/klog/v2"

	"volcano.sh/volcano/cmd/controller-manager/app"
	_ "volcano.sh/volcano/pkg/controllers/colocationconfig"
	_ "volcano.sh/volcano/pkg/controllers/cronjob"
	_ "volcano.sh/volcano/pkg/controllers/garbagecollector"
	_ "volcano.sh/volcano/pkg/controllers/hypernode"
	_ "volcano.sh/volcano/pkg/controllers/job"
	_ "volcano.sh/volcano/pkg/controllers/jobflow"
	_ "volcano.sh/volcano/pkg/controllers/jobtemplate"
	_ "volcano.sh/volcano/pkg/controllers/podgroup"
	_ "volcano.sh/volcano/pkg/controllers/queue"
	_ "volcano.sh/volcano/pkg/controllers/sharding"

	// The paddle job plugin, registered next to Volcano's own, and the
	// controller that re-creates a running Paddle job's Service when it is
	// deleted (paddle-objects-controller), and the one that keeps elastic
	// Paddle jobs going (paddle-elastic-controller), and the one that
	// records finished jobs' run times on their queues
	// (paddle-history-controller).
	paddleplugin "github.com/volcano-paddle/volcano-paddle/pkg/controllers/job/plugins/paddle"
	_ "github.com/volcano-paddle/volcano-paddle/pkg/controllers/paddleelastic"
	_ "github.com/volcano-paddle/volcano-paddle/pkg/controllers/paddlehistory"
	_ "github.com/volcano-paddle/volcano-paddle/pkg/controllers/paddleobjects"

	"github.com/volcano-paddle/volcano-paddle/internal/cmdutil"
)

// The paddle job plugin joins Volcano's job plugin factory before Volcano's
// job controller starts; in init rather than main so that this binary's
// tests (golden_test.go) drive the same factory.
func init() { paddleplugin.Register() }

func main() {
	cmdutil.Init()
	s, logFlushFreq := addFlags(pflag.CommandLine)
	cmdutil.ParseFlags("vc-controller-manager-paddle", &s.PrintVersion)
	cmdutil.ExitOnError("", s.CheckOptionOrDie())
	cmdutil.ParseCAFiles(s.CaCertFile, s.CertFile, s.KeyFile, func() error { return s.ParseCAFiles(nil) })

	cmdutil.StartLogging("vc-controller-manager-paddle", *logFlushFreq)
	defer klog.Flush()
	cmdutil.ExitOnError("", app.Run(s))
}
