// Command vc-controller-manager-paddle is Volcano's controller manager (every
// stock controller and job plugin) with the paddle job plugin compiled in.
// Volcano's job controller cannot load plugins at run time, so a job plugin
// needs its own build. It takes exactly the flags of the vc-controller-manager
// of the Volcano release it embeds (flags.go).
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
	// Paddle jobs going (paddle-elastic-controller).
	_ "github.com/volcano-paddle/volcano-paddle/pkg/controllers/job/plugins/paddle"
	_ "github.com/volcano-paddle/volcano-paddle/pkg/controllers/paddleelastic"
	_ "github.com/volcano-paddle/volcano-paddle/pkg/controllers/paddleobjects"

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
	cliflag.InitFlags()

	if s.PrintVersion {
		version.Print(os.Stdout, "vc-controller-manager-paddle")
		return
	}
	if err := s.CheckOptionOrDie(); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
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
	klog.InfoS("Starting vc-controller-manager-paddle", "version", version.Version, "volcano", version.VolcanoVersion())

	if err := app.Run(s); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
}
