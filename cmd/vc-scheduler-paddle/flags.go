package main

import (
	"time"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	componentbaseoptions "k8s.io/component-base/config/options"

	"volcano.sh/volcano/cmd/scheduler/app/options"
	commonutil "volcano.sh/volcano/pkg/util"
)

// addFlags registers on fs every flag the vc-scheduler main of the embedded
// Volcano release registers (volcano.sh/volcano cmd/scheduler/main.go:
// options, feature gates, leader election; v1.15's --scheduler-sharding-mode,
// --ignored-provisioners, --resource-sync-timeout and
// --gate-removal-worker-num come with its options) plus
// --log-flush-frequency, and returns the options they fill. klog's flags come
// from the go flag set (cliflag.InitFlags). Call RegisterOptions on the
// result once the flags are parsed into their final flag set.
func addFlags(fs *pflag.FlagSet, logFlushFreq *time.Duration) *options.ServerOption {
	fs.DurationVar(logFlushFreq, "log-flush-frequency", 5*time.Second, "Maximum number of seconds between log flushes")
	s := options.NewServerOption()
	s.AddFlags(fs)
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)

	commonutil.LeaderElectionDefault(&s.LeaderElection)
	s.LeaderElection.ResourceName = commonutil.GenerateComponentName(s.SchedulerNames)
	componentbaseoptions.BindLeaderElectionFlags(&s.LeaderElection, fs)
	return s
}
