package main

import (
	"sort"
	"time"

	"github.com/spf13/pflag"

	"volcano.sh/volcano/cmd/controller-manager/app/options"
	"volcano.sh/volcano/pkg/controllers/framework"

	"github.com/volcano-paddle/volcano-paddle/internal/cmdutil"
)

// addFlags registers on fs every flag the vc-controller-manager main of the
// embedded Volcano release registers (volcano.sh/volcano
// cmd/controller-manager/main.go: options, controller flags, feature gates,
// leader election) plus --log-flush-frequency, and returns the options they
// fill and the flush period. klog's flags come from the go flag set
// (cliflag.InitFlags).
func addFlags(fs *pflag.FlagSet) (*options.ServerOption, *time.Duration) {
	s := options.NewServerOption()
	var known []string
	framework.ForeachController(func(c framework.Controller) { known = append(known, c.Name()) })
	sort.Strings(known)
	// The options' flags, then those of each controller that has its own
	// (v1.15's sharding controller: --sharding-configmap,
	// --sharding-configmap-namespace).
	adders := []cmdutil.FlagAdder{cmdutil.FlagAdderFunc(func(fs *pflag.FlagSet) { s.AddFlags(fs, known) })}
	framework.ForeachController(func(c framework.Controller) {
		if fp, ok := c.(cmdutil.FlagAdder); ok {
			adders = append(adders, fp)
		}
	})
	logFlushFreq := cmdutil.AddFlags(fs, adders...)
	cmdutil.AddLeaderElectionFlags(fs, &s.LeaderElection, "vc-controller-manager")
	return s, logFlushFreq
}
