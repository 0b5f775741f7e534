package main

import (
	"sort"
	"time"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	componentbaseoptions "k8s.io/component-base/config/options"

	"volcano.sh/volcano/cmd/controller-manager/app/options"
	"volcano.sh/volcano/pkg/controllers/framework"
	commonutil "volcano.sh/volcano/pkg/util"
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
// fill. klog's flags come from the go flag set (cliflag.InitFlags).
func addFlags(fs *pflag.FlagSet, logFlushFreq *time.Duration) *options.ServerOption {
	fs.DurationVar(logFlushFreq, "log-flush-frequency", 5*time.Second, "Maximum number of seconds between log flushes")
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
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)

	commonutil.LeaderElectionDefault(&s.LeaderElection)
	s.LeaderElection.ResourceName = "vc-controller-manager"
	componentbaseoptions.BindLeaderElectionFlags(&s.LeaderElection, fs)
	return s
}
