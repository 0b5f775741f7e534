package main

import (
	"time"

	"github.com/spf13/pflag"

	"volcano.sh/volcano/cmd/scheduler/app/options"
	commonutil "volcano.sh/volcano/pkg/util"

	"github.com/volcano-paddle/volcano-paddle/internal/cmdutil"
)

// addFlags registers on fs every flag the vc-scheduler main of the embedded
// Volcano release registers (volcano.sh/volcano cmd/scheduler/main.go:
// options, feature gates, leader election; v1.15's --scheduler-sharding-mode,
// --ignored-provisioners, --resource-sync-timeout and
// --gate-removal-worker-num come with its options) plus
// --log-flush-frequency, and returns the options they fill and the flush
// period. klog's flags come from the go flag set (cliflag.InitFlags). Call
// RegisterOptions on the result once the flags are parsed into their final
// flag set.
func addFlags(fs *pflag.FlagSet) (*options.ServerOption, *time.Duration) {
	s := options.NewServerOption()
	logFlushFreq := cmdutil.AddFlags(fs, s)
	cmdutil.AddLeaderElectionFlags(fs, &s.LeaderElection, commonutil.GenerateComponentName(s.SchedulerNames))
	return s, logFlushFreq
}
