// Package cmdutil is the start-up that vc-controller-manager-paddle,
// vc-scheduler-paddle and vc-webhook-manager-paddle share. Each replaces a
// Volcano main (volcano.sh/volcano cmd/controller-manager, cmd/scheduler and
// cmd/webhook-manager main.go), which all do these steps the same way, and
// must keep doing them so that the release's manifests run ours unchanged.
// What differs between the three (their options, the Volcano app they run)
// stays in their mains.
package cmdutil

import (
	goflag "flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"
	"k8s.io/klog/v2"
	commonutil "volcano.sh/volcano/pkg/util"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
	"github.com/volcano-paddle/volcano-paddle/pkg/version"
)

// Init prepares the process before any flag is registered, as Volcano's
// mains do: every CPU (runtime.GOMAXPROCS), klog's flags on the go flag set
// with the embedded release's klog defaults (volcanorelease.InitKlog), and
// Volcano's version variables naming the release and us (version.Stamp).
func Init() {
	runtime.GOMAXPROCS(runtime.NumCPU())
	klog.InitFlags(nil)
	volcanorelease.InitKlog(goflag.CommandLine)
	version.Stamp()
}

// FlagAdder registers flags on a flag set: the options of a Volcano main
// (the scheduler's, the webhook manager's), or a controller with flags of
// its own (Volcano v1.15's framework.FlagProvider, matched by its method,
// not by name, so that the controller manager builds against v1.14.1 too).
type FlagAdder interface {
	AddFlags(fs *pflag.FlagSet)
}

// FlagAdderFunc is a function that is a FlagAdder (options whose AddFlags
// takes more than the flag set).
type FlagAdderFunc func(fs *pflag.FlagSet)

// AddFlags calls f.
func (f FlagAdderFunc) AddFlags(fs *pflag.FlagSet) { f(fs) }

// AddFlags registers on fs the flags every Volcano main adds to its
// options, --log-flush-frequency, whose value it returns, and
// --feature-gates (the default feature gate's), then those of each of
// adders in turn.
func AddFlags(fs *pflag.FlagSet, adders ...FlagAdder) *time.Duration {
	d := new(time.Duration)
	fs.DurationVar(d, "log-flush-frequency", 5*time.Second, "Maximum number of seconds between log flushes")
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
	for _, a := range adders {
		a.AddFlags(fs)
	}
	return d
}

// AddLeaderElectionFlags registers the leader election flags on fs, filling
// le, with Volcano's defaults and the lock named resourceName, as the
// controller manager's and the scheduler's mains do.
func AddLeaderElectionFlags(fs *pflag.FlagSet, le *componentbaseconfig.LeaderElectionConfiguration, resourceName string) {
	commonutil.LeaderElectionDefault(le)
	le.ResourceName = resourceName
	componentbaseoptions.BindLeaderElectionFlags(le, fs)
}

// ParseFlags parses the command line into pflag.CommandLine, with klog's
// flags from the go flag set (cliflag.InitFlags), and when --version was
// given (printVersion, the options' field) prints the version of binary and
// exits.
func ParseFlags(binary string, printVersion *bool) {
	cliflag.InitFlags()
	if *printVersion {
		version.Print(os.Stdout, binary)
		os.Exit(0)
	}
}

// ExitOnError does nothing when err is nil; otherwise it prints err to
// stderr, after prefix when there is one, and exits with status 1, as
// Volcano's mains do with a start-up error.
func ExitOnError(prefix string, err error) {
	if err == nil {
		return
	}
	if prefix != "" {
		fmt.Fprintf(os.Stderr, "%s: %v\n", prefix, err)
	} else {
		fmt.Fprintf(os.Stderr, "%v\n", err)
	}
	os.Exit(1)
}

// ParseCAFiles calls parse (the options' ParseCAFiles) when the CA,
// certificate and key files are all given, and exits if it fails: the
// controller manager's and the scheduler's mains read them only then, and
// serve without TLS otherwise.
func ParseCAFiles(caCertFile, certFile, keyFile string, parse func() error) {
	if caCertFile == "" || certFile == "" || keyFile == "" {
		return
	}
	ExitOnError("failed to parse CA file", parse())
}

// StartLogging starts klog's flush daemon at the --log-flush-frequency
// period and logs that the binary starts, with our version and the embedded
// Volcano release. The caller defers klog.Flush.
func StartLogging(binary string, flushFrequency time.Duration) {
	klog.StartFlushDaemon(flushFrequency)
	klog.InfoS("Starting "+binary, "version", version.Version, "volcano", version.VolcanoVersion())
}
