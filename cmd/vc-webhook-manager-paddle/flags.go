package main

import (
	"time"

	"github.com/spf13/pflag"

	"volcano.sh/volcano/cmd/webhook-manager/app/options"
	// Volcano's feature gates, registered with the default feature gate
	// before --feature-gates lists them (as cmd/webhook-manager/main.go of
	// v1.15 imports it).
	_ "volcano.sh/volcano/pkg/features"

	"github.com/volcano-paddle/volcano-paddle/internal/cmdutil"
)

// addFlags registers on fs every flag the vc-webhook-manager main of the
// embedded Volcano release registers (volcano.sh/volcano
// cmd/webhook-manager/main.go: its options and, since v1.15, --feature-gates,
// which v1.15's Helm chart passes when admission_feature_gates is set) plus
// --log-flush-frequency, and returns the config they fill and the flush
// period. Accepting --feature-gates under v1.14.1 as well, whose main lacked
// it, lets one deploy/ serve both releases. klog's flags come from the go
// flag set (cliflag.InitFlags).
func addFlags(fs *pflag.FlagSet) (*options.Config, *time.Duration) {
	config := options.NewConfig()
	return config, cmdutil.AddFlags(fs, config)
}
