package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease/releasetest"
)

// chartValues gives every flag of the controller manager's Helm chart
// template (installer/helm/chart/volcano/templates/controllers.yaml of
// volcano.sh/volcano v1.14.1 and v1.15.1) a value of the kind the chart's
// values.yaml takes; the chart passes most of them only when a value is set.
var chartValues = map[string]string{
	"logtostderr":                     "",
	"enable-healthz":                  "true",
	"enable-metrics":                  "true",
	"leader-elect":                    "true",
	"scheduler-name":                  "volcano",
	"leader-elect-resource-namespace": "volcano-system",
	"kube-api-qps":                    "50",
	"kube-api-burst":                  "100",
	"worker-threads":                  "3",
	"worker-threads-for-gc":           "5",
	"worker-threads-for-podgroup":     "5",
	"sharding-configmap":              "volcano-sharding-configmap",
	"sharding-configmap-namespace":    "volcano-system",
	"controllers":                     "*,-jobflow-controller",
	"v":                               "4",
}

// releaseFlags are flags of each release's manifests that a main written for
// another release could miss. The test also fails if the release's files
// stop naming them, so it cannot pass on args read wrongly.
var releaseFlags = map[string][]string{
	"v1.14.1": {"worker-threads-for-podgroup", "leader-elect", "kube-api-qps"},
	// v1.15.1's installer/volcano-development.yaml passes the sharding
	// controller's flags; a main without them exits with "unknown flag:
	// --sharding-configmap" and the Deployment crash-loops.
	"v1.15.1": {"sharding-configmap", "sharding-configmap-namespace", "controllers"},
}

// TestReleaseArgs: vc-controller-manager-paddle takes every flag the embedded Volcano
// release's manifest and Helm chart pass.
func TestReleaseArgs(t *testing.T) {
	releasetest.ParsesReleaseArgs(t, releasetest.Flags{
		Binary: "vc-controller-manager-paddle", Component: volcanorelease.ControllerManager,
		ChartValues: chartValues, Required: releaseFlags,
		Register: func(fs *pflag.FlagSet) {
			var flush time.Duration
			addFlags(fs, &flush)
		},
	})
}
