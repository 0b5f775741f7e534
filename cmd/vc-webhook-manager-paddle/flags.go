package main

import (
	"time"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"volcano.sh/volcano/cmd/webhook-manager/app/options"
	// Volcano's feature gates, registered with the default feature gate
	// before --feature-gates lists them (as cmd/webhook-manager/main.go of
	// v1.15 imports it).
	_ "volcano.sh/volcano/pkg/features"
)

// addFlags registers on fs every flag the vc-webhook-manager main of the
// embedded Volcano release registers (volcano.sh/volcano
// cmd/webhook-manager/main.go: its options and, since v1.15, --feature-gates,
// which v1.15's Helm chart passes when admission_feature_gates is set) plus
// --log-flush-frequency, and returns the config they fill. Accepting
// --feature-gates under v1.14.1 as well, whose main lacked it, lets one
// deploy/ serve both releases. klog's flags come from the go flag set
// (cliflag.InitFlags).
func addFlags(fs *pflag.FlagSet, logFlushFreq *time.Duration) *options.Config {
	fs.DurationVar(logFlushFreq, "log-flush-frequency", 5*time.Second, "Maximum number of seconds between log flushes")
	config := options.NewConfig()
	config.AddFlags(fs)
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
	return config
}
