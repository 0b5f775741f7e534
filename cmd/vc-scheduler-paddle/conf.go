package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	"volcano.sh/volcano/pkg/scheduler"
	"volcano.sh/volcano/pkg/scheduler/conf"
	"volcano.sh/volcano/pkg/scheduler/framework"

	paddleplugin "github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

// allowWithoutPaddle lets the scheduler run a configuration without the
// paddle plugin: only for comparisons with Volcano's stock configuration
// (the e2e tests and benchmarks run this build with both).
var allowWithoutPaddle = pflag.Bool("allow-without-paddle", false,
	"Start even when --scheduler-conf has no paddle plugin (for comparisons with Volcano's stock configuration); an unreadable or invalid file still stops the start")

// checkSchedulerConf reads the --scheduler-conf file the way Volcano's
// scheduler does at start (volcano.sh/volcano pkg/scheduler/scheduler.go:
// Scheduler.loadSchedulerConf, v1.14.1) and returns why it would not run the
// paddle plugin.
//
// Volcano itself only logs an unreadable or invalid file and carries on
// with its built-in default configuration, which has no paddle: jobs would
// be placed with none of our rules and nobody would notice. Its own remedy,
// --disable-default-scheduler-config, makes loadSchedulerConf call
// klog.Fatalf on an invalid file, and the file watcher calls the same
// function on every change: one bad edit of the ConfigMap would kill a
// running scheduler. So the check is done here, once, before the scheduler
// starts; on a later reload Volcano keeps the last good configuration and
// logs "Scheduler config ... is invalid".
func checkSchedulerConf(path string, allowWithoutPaddle bool) error {
	if path == "" && allowWithoutPaddle {
		return nil // Volcano's built-in default configuration
	}
	if path == "" {
		return fmt.Errorf("no --scheduler-conf given: Volcano's built-in default configuration has no %q plugin; pass the configuration file with %q in a tier (deploy/paddle/volcano-scheduler.conf)",
			paddleplugin.PluginName, paddleplugin.PluginName)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading --scheduler-conf: %w", err)
	}
	// loadSchedulerConf trims the file before it unmarshals it.
	_, tiers, _, _, err := scheduler.UnmarshalSchedulerConf(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("--scheduler-conf %s is invalid: %w", path, err)
	}
	var unknown []string
	for _, tier := range tiers {
		for _, p := range tier.Plugins {
			// Volcano's session skips a plugin it has no builder for with
			// one log line per session (framework.OpenSession): a typo in
			// a name drops that plugin silently.
			if _, ok := framework.GetPluginBuilder(p.Name); !ok {
				unknown = append(unknown, fmt.Sprintf("%q", p.Name))
			}
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("--scheduler-conf %s names plugins this scheduler does not have: %s; fix the names in the tiers", path, strings.Join(unknown, ", "))
	}
	// The paddle plugin's own arguments are not checked here: a bad value
	// falls back to its default with an error in the log, at start as on
	// a reload (paddle.ParseArgs), so that both behave alike.
	args, _, found := paddleplugin.ArgsIn(tiers)
	if !found && !allowWithoutPaddle {
		return fmt.Errorf("--scheduler-conf %s has no %q plugin in any tier; add it (deploy/paddle/volcano-scheduler.conf shows where) or run Volcano's stock vc-scheduler",
			path, paddleplugin.PluginName)
	}
	if w := leverPlacementWarning(tiers, args); w != "" {
		klog.Warningf("--scheduler-conf %s: %s", path, w)
	}
	return nil
}

// leverPlacementWarning says when paddle's levers are on but paddle shares
// its tier with priority's PreemptableFn: Volcano intersects the victims
// of one tier (framework/session_plugins.go: Preemptable), and priority
// refuses every victim of equal or higher priority (plugins/priority:
// preemptableFn), so the levers, which act between jobs of equal
// priority, would never take anything. A valid configuration, so a
// warning, not an error.
func leverPlacementWarning(tiers []conf.Tier, args paddleplugin.Args) string {
	if !args.ShrinkElastic && !args.PreemptCheckpointable {
		return ""
	}
	for i, tier := range tiers {
		var paddle, priority bool
		for _, p := range tier.Plugins {
			switch {
			case p.Name == paddleplugin.PluginName:
				paddle = true
			case p.Name == "priority" && (p.EnabledPreemptable == nil || *p.EnabledPreemptable):
				priority = true
			}
		}
		if paddle && priority {
			return fmt.Sprintf("paddle shares tier %d with priority, whose preemptable function refuses every victim of equal priority, so paddle.elastic.shrink and paddle.checkpointable.preempt take nothing from jobs of the gang's priority; put paddle in the tier after priority's (deploy/paddle/volcano-scheduler.conf)", i+1)
		}
	}
	return ""
}
