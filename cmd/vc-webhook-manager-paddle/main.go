// Command vc-webhook-manager-paddle is Volcano's admission webhook manager
// with the paddle job plugin registered. Stock Volcano's job validation
// rejects a Job whose plugins it does not know ("unable to find job plugin:
// paddle"), so a cluster that enables the paddle job plugin must run this
// build in place of vc-webhook-manager. It takes the flags of the
// vc-webhook-manager of the Volcano release it embeds (flags.go).
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

	"volcano.sh/volcano/cmd/webhook-manager/app"
	_ "volcano.sh/volcano/pkg/webhooks/admission/cronjobs/validate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/hypernodes/validate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/jobflows/validate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/jobs/mutate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/jobs/validate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/podgroups/mutate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/podgroups/validate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/pods/mutate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/pods/validate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/queues/mutate"
	_ "volcano.sh/volcano/pkg/webhooks/admission/queues/validate"

	// The paddle job plugin, registered next to Volcano's own, and its
	// admissions (/jobs/paddle/validate and /jobs/paddle/mutate).
	_ "github.com/volcano-paddle/volcano-paddle/pkg/controllers/job/plugins/paddle"
	_ "github.com/volcano-paddle/volcano-paddle/pkg/webhooks/paddle"
	// The pod rule (/pods/paddle/validate): only the job controller creates
	// pods of Paddle jobs.
	_ "github.com/volcano-paddle/volcano-paddle/pkg/webhooks/paddlepods"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
	"github.com/volcano-paddle/volcano-paddle/pkg/version"
)

func main() {
	runtime.GOMAXPROCS(runtime.NumCPU())
	klog.InitFlags(nil)
	volcanorelease.InitKlog(goflag.CommandLine)
	version.Stamp()

	var logFlushFreq time.Duration
	config := addFlags(pflag.CommandLine, &logFlushFreq)
	cliflag.InitFlags()

	if config.PrintVersion {
		version.Print(os.Stdout, "vc-webhook-manager-paddle")
		return
	}

	klog.StartFlushDaemon(logFlushFreq)
	defer klog.Flush()
	klog.InfoS("Starting vc-webhook-manager-paddle", "version", version.Version, "volcano", version.VolcanoVersion())

	if err := config.CheckPortOrDie(); err != nil {
		fmt.Fprintf(os.Stderr, "configured port is invalid: %v\n", err)
		os.Exit(1)
	}
	if err := config.ParseCAFiles(nil); err != nil {
		fmt.Fprintf(os.Stderr, "failed to parse CA file: %v\n", err)
		os.Exit(1)
	}
	if err := app.Run(config); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
}
