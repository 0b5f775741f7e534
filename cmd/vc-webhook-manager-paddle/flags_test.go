package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease/releasetest"
)

// chartValues gives every flag of the admission Helm chart template
// (installer/helm/chart/volcano/templates/admission.yaml of
// volcano.sh/volcano v1.14.1 and v1.15.1) a value of the kind the chart's
// values.yaml takes; the chart passes some only when a value is set.
var chartValues = map[string]string{
	"enabled-admission":    "/jobs/mutate,/jobs/validate,/podgroups/validate,/queues/mutate,/queues/validate",
	"tls-cert-file":        "/admission.local.config/certificates/tls.crt",
	"tls-private-key-file": "/admission.local.config/certificates/tls.key",
	"ca-cert-file":         "/admission.local.config/certificates/ca.crt",
	"admission-conf":       "/admission.local.config/configmap/volcano-admission.conf",
	"webhook-namespace":    "volcano-system",
	"webhook-service-name": "volcano-admission-service",
	"scheduler-name":       "volcano",
	"feature-gates":        "PriorityClass=true",
	"enable-healthz":       "true",
	"logtostderr":          "",
	"port":                 "8443",
	"v":                    "4",
}

// releaseFlags are flags of each release's manifests that a main written for
// another release could miss. The test also fails if the release's files
// stop naming them, so it cannot pass on args read wrongly.
var releaseFlags = map[string][]string{
	"v1.14.1": {"enabled-admission", "webhook-service-name", "port"},
	// v1.15.1's chart passes --feature-gates when admission_feature_gates
	// is set; v1.14's webhook manager refused it.
	"v1.15.1": {"enabled-admission", "webhook-service-name", "feature-gates"},
}

// TestReleaseArgs: vc-webhook-manager-paddle takes every flag the embedded Volcano
// release's manifest and Helm chart pass.
func TestReleaseArgs(t *testing.T) {
	releasetest.ParsesReleaseArgs(t, releasetest.Flags{
		Binary: "vc-webhook-manager-paddle", Component: volcanorelease.WebhookManager,
		ChartValues: chartValues, Required: releaseFlags,
		Register: func(fs *pflag.FlagSet) {
			var flush time.Duration
			addFlags(fs, &flush)
		},
	})
}
