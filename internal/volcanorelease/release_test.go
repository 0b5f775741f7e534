package volcanorelease

import (
	"slices"
	"testing"
)

// TestModuleDirIsTheEmbeddedRelease: the files read are those of the Volcano
// release linked into the test binary, whichever modfile built it.
func TestModuleDirIsTheEmbeddedRelease(t *testing.T) {
	dir, err := ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	want := "volcano.sh/volcano@" + Version()
	if !slices.Contains([]string{"v1.14.1", "v1.15.1"}, Version()) {
		t.Fatalf("embedded Volcano is %q, want v1.14.1 or v1.15.1", Version())
	}
	if len(dir) < len(want) || dir[len(dir)-len(want):] != want {
		t.Errorf("ModuleDir() = %s, want a folder ending in %s", dir, want)
	}
}

func TestComponentsReadFromTheRelease(t *testing.T) {
	tests := []struct {
		component    Component
		manifestFlag string // a flag the release manifest passes
		chartFlag    string // a flag only the chart's values switch on
	}{
		{Scheduler, "scheduler-conf", "ignored-provisioners"},
		{ControllerManager, "worker-threads-for-podgroup", "leader-elect-resource-namespace"},
		{WebhookManager, "enabled-admission", "scheduler-name"},
	}
	for _, tc := range tests {
		t.Run(tc.component.Container, func(t *testing.T) {
			args, err := tc.component.ManifestArgs()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(FlagNames(args), tc.manifestFlag) {
				t.Errorf("manifest args %q lack --%s", args, tc.manifestFlag)
			}
			names, err := tc.component.ChartFlags()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(names, tc.chartFlag) || !slices.Contains(names, "v") {
				t.Errorf("chart flags %q lack --%s or -v", names, tc.chartFlag)
			}
			if _, err := tc.component.ChartArgs(map[string]string{"v": "1"}); err == nil {
				t.Errorf("ChartArgs with values for -v only: want an error naming the flags without a value")
			}
		})
	}
}
