package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease/releasetest"
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

// TestReleaseArgs: vc-scheduler-paddle takes every flag the embedded Volcano
// release's manifest and Helm chart pass.
func TestReleaseArgs(t *testing.T) {
	releasetest.ParsesReleaseArgs(t, releasetest.Flags{
		Binary: "vc-scheduler-paddle", Component: volcanorelease.Scheduler,
		ChartValues: chartValues, Required: releaseFlags,
		Register: func(fs *pflag.FlagSet) {
			var flush time.Duration
			addFlags(fs, &flush)
		},
	})
}
