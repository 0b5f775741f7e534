// Package releasetest holds the test every main of ours runs against the
// manifests of the Volcano release it embeds.
package releasetest

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
)

// Flags is what one binary's test knows of the release's manifests.
type Flags struct {
	// Binary names the flag set in messages.
	Binary string
	// Component is the Volcano component the binary replaces.
	Component volcanorelease.Component
	// ChartValues gives every flag of the component's Helm chart template
	// a value of the kind the chart's values.yaml takes (the chart passes
	// most of them only when a value is set).
	ChartValues map[string]string
	// Required are, per release, flags of its manifests that a main
	// written for another release could miss. The test also fails if the
	// release's files stop naming them, so it cannot pass on args read
	// wrongly.
	Required map[string][]string
	// Register adds the binary's flags to fs, as its main does.
	Register func(fs *pflag.FlagSet)
}

// ParsesReleaseArgs parses the binary's flags with the args of the embedded
// Volcano release's manifest and Helm chart, read from its module: a main
// that refuses one of them crash-loops in that release's Deployment.
func ParsesReleaseArgs(t *testing.T, f Flags) {
	t.Helper()
	release := volcanorelease.Version()
	lists, err := f.Component.ReleaseArgLists(f.ChartValues)
	if err != nil {
		t.Fatal(err)
	}
	want, ok := f.Required[release]
	if !ok {
		t.Fatalf("no required flags for Volcano %s: add the flags its manifests pass", release)
	}
	var seen []string
	for _, l := range lists {
		t.Run(l.Source, func(t *testing.T) {
			fs := volcanorelease.NewFlagSet(f.Binary)
			f.Register(fs)
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
