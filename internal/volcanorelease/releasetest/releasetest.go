// Package releasetest holds the test every main of ours runs against the
// manifests of the Volcano release it embeds.
package releasetest

import (
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
)

// ParsesReleaseArgs parses the flags that addFlags (the binary's, which its
// main calls) registers with the args of the embedded Volcano release's
// manifest and Helm chart for component, read from its module: a main that
// refuses one of them crash-loops in that release's Deployment. binary names
// the flag set in messages.
func ParsesReleaseArgs[O any](t *testing.T, binary string, component volcanorelease.Component, addFlags func(fs *pflag.FlagSet) (O, *time.Duration)) {
	t.Helper()
	c, ok := charts[component]
	if !ok {
		t.Fatalf("no chart values for Volcano's %s", component.Container)
	}
	release := volcanorelease.Version()
	lists, err := component.ReleaseArgLists(c.values)
	if err != nil {
		t.Fatal(err)
	}
	want, ok := c.required[release]
	if !ok {
		t.Fatalf("no required flags for Volcano %s: add the flags its manifests pass", release)
	}
	var seen []string
	for _, l := range lists {
		t.Run(l.Source, func(t *testing.T) {
			fs := volcanorelease.NewFlagSet(binary)
			addFlags(fs)
			if err := volcanorelease.ParseArgs(fs, l.Args); err != nil {
				t.Errorf("Volcano %s %s args %q: %v", release, l.Source, l.Args, err)
			}
		})
		seen = append(seen, volcanorelease.FlagNames(l.Args)...)
	}
	for _, flag := range want {
		if !slices.Contains(seen, flag) {
			t.Errorf("Volcano %s's manifests no longer pass --%s (args read: %q)", release, flag, seen)
		}
	}
}
