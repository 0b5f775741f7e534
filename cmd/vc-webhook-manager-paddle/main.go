// Command vc-webhook-manager-paddle is Volcano's admission webhook manager
// with the paddle job plugin registered. Stock Volcano's job validation
// rejects a Job whose plugins it does not know ("unable to find job plugin:
// paddle"), so a cluster that enables the paddle job plugin must run this
// build in place of vc-webhook-manager. It takes the flags of the
// vc-webhook-manager of the Volcano release it embeds (flags.go).
package main

import (
	"github.com/spf13/pflag"
	_ "go.uber.org/automaxprocs"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
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
	paddleplugin "github.com/volcano-paddle/volcano-paddle/pkg/controllers/job/plugins/paddle"
	_ "github.com/volcano-paddle/volcano-paddle/pkg/webhooks/paddle"
	// The pod rule (/pods/paddle/validate): only the job controller creates
	// pods of Paddle jobs.
	_ "github.com/volcano-paddle/volcano-paddle/pkg/webhooks/paddlepods"

	"github.com/volcano-paddle/volcano-paddle/internal/cmdutil"
)

// Volcano's job admission refuses a job whose spec.plugins names a plugin
// its factory does not know (admit_job.go: validateJobCreate), so the
// paddle job plugin joins the factory before the webhooks serve.
func init() { paddleplugin.Register() }

func main() {
	cmdutil.Init()
	config, logFlushFreq := addFlags(pflag.CommandLine)
	cmdutil.ParseFlags("vc-webhook-manager-paddle", &config.PrintVersion)

	cmdutil.StartLogging("vc-webhook-manager-paddle", *logFlushFreq)
	defer klog.Flush()

	cmdutil.ExitOnError("configured port is invalid", config.CheckPortOrDie())
	cmdutil.ExitOnError("failed to parse CA file", config.ParseCAFiles(nil))
	cmdutil.ExitOnError("", app.Run(config))
}
