package main

import (
	"sort"
	"time"

	"github.com/spf13/pflag"

	"volcano.sh/volcano/cmd/controller-manager/app/options"
	"volcano.sh/volcano/pkg/controllers/framework"

	"github.com/volcano-paddle/volcano-paddle/internal/cmdutil"
)

// flagProvider is Volcano v1.15's framework.FlagProvider (a controller that
// registers its own flags: the sharding controller's --sharding-configmap and
// --sharding-configmap-namespace). It is matched by its method, not by name,
// so that this main builds against v1.14.1 too, where no controller has one.
type flagProvider interface {
	AddFlags(fs *pflag.FlagSet)
}

// addFlags registers on fs every flag the vc-controller-manager main of the
// embedded Volcano release registers (volcano.sh/volcano
// cmd/controller-manager/main.go: options, controller flags, feature gates,
// leader election) plus --log-flush-frequency, and returns the options they
// fill and the flush period. klog's flags come from the go flag set
// (cliflag.InitFlags).
func addFlags(fs *pflag.FlagSet) (*options.ServerOption, *time.Duration) {
	logFlushFreq := cmdutil.AddFlags(fs)
	s := options.NewServerOption()
	var known []string
	framework.ForeachController(func(c framework.Controller) { known = append(known, c.Name()) })
	sort.Strings(known)
	s.AddFlags(fs, known)
	framework.ForeachController(func(c framework.Controller) {
		if fp, ok := c.(flagProvider); ok {
			fp.AddFlags(fs)
		}
	})
	cmdutil.AddLeaderElectionFlags(fs, &s.LeaderElection, "vc-controller-manager")
	return s, logFlushFreq
}
