package main

import (
	"slices"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
)

// chartValues gives every flag of the scheduler's Helm chart template
// (installer/helm/chart/volcano/templates/scheduler.yaml of
// volcano.sh/volcano v1.14.1 and v1.15.1) a value of the kind the chart's
// values.yaml takes; the chart passes most of them only when a value is set.
var chartValues = map[string]string{
	"logtostderr":                     "",
	"scheduler-conf":                  "/volcano.scheduler/volcano-scheduler.conf",
	"scheduler-name":                  "volcano",
	"enable-healthz":                  "true",
	"enable-metrics":                  "true",
	"enable-pprof":                    "true",
	"leader-elect":                    "true",
	"leader-elect-resource-namespace": "volcano-system",
	"kube-api-qps":                    "2000",
	"kube-api-burst":                  "2000",
	"schedule-period":                 "1s",
	"node-worker-threads":             "20",
	"percentage-nodes-to-find":        "50",
	"plugins-dir":                     "/plugins",
	"feature-gates":                   "PriorityClass=true",
	"ignored-provisioners":            "rancher.io/local-path,hostpath.csi.k8s.io",
	"scheduler-sharding-mode":         "none",
	"v":                               "3",
}

// releaseFlags are flags of each release's manifests that a main written for
// another release could miss. The test also fails if the release's files
// stop naming them, so it cannot pass on args read wrongly.
var releaseFlags = map[string][]string{
	"v1.14.1": {"scheduler-conf", "scheduler-sharding-mode", "ignored-provisioners", "feature-gates"},
	"v1.15.1": {"scheduler-conf", "scheduler-sharding-mode", "ignored-provisioners", "feature-gates", "percentage-nodes-to-find"},
}

// TestReleaseArgs starts the flag parsing of vc-scheduler-paddle with the
// args of the embedded Volcano release's manifest and Helm chart, read from
// its module.
func TestReleaseArgs(t *testing.T) {
	lists, err := volcanorelease.Scheduler.ReleaseArgLists(chartValues)
	if err != nil {
		t.Fatal(err)
	}
	want, ok := releaseFlags[volcanorelease.Version()]
	if !ok {
		t.Fatalf("no releaseFlags for Volcano %s: add the flags its manifests pass", volcanorelease.Version())
	}
	var seen []string
	for _, l := range lists {
		t.Run(l.Source, func(t *testing.T) {
			fs := volcanorelease.NewFlagSet("vc-scheduler-paddle")
			var flush time.Duration
			addFlags(fs, &flush)
			if err := volcanorelease.ParseArgs(fs, l.Args); err != nil {
				t.Errorf("Volcano %s %s args %q: %v", volcanorelease.Version(), l.Source, l.Args, err)
			}
		})
		seen = append(seen, volcanorelease.FlagNames(l.Args)...)
	}
	for _, f := range want {
		if !slices.Contains(seen, f) {
			t.Errorf("Volcano %s's manifests no longer pass --%s (args read: %q)", volcanorelease.Version(), f, seen)
		}
	}
}
