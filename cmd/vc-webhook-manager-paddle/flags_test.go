package main

import (
	"slices"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
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

// TestReleaseArgs starts the flag parsing of vc-webhook-manager-paddle with
// the args of the embedded Volcano release's manifest and Helm chart, read
// from its module.
func TestReleaseArgs(t *testing.T) {
	lists, err := volcanorelease.WebhookManager.ReleaseArgLists(chartValues)
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
			fs := volcanorelease.NewFlagSet("vc-webhook-manager-paddle")
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
