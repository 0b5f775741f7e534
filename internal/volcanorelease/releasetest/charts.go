package releasetest

import "github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"

// chart is what the test knows of one component's manifests.
type chart struct {
	// values gives every flag of the component's Helm chart template a
	// value of the kind the chart's values.yaml takes (the chart passes
	// most of them only when a value is set).
	values map[string]string
	// required are, per release, flags of its manifests that a main
	// written for another release could miss. The test also fails if the
	// release's files stop naming them, so it cannot pass on args read
	// wrongly.
	required map[string][]string
}

// charts holds, for each component we replace, the flags of its Helm chart
// template (installer/helm/chart/volcano/templates/controllers.yaml,
// scheduler.yaml and admission.yaml of volcano.sh/volcano v1.14.1 and
// v1.15.1) and the flags each release's manifests must pass.
var charts = map[volcanorelease.Component]chart{
	volcanorelease.ControllerManager: {
		values: map[string]string{
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
		},
		required: map[string][]string{
			"v1.14.1": {"worker-threads-for-podgroup", "leader-elect", "kube-api-qps"},
			// v1.15.1's installer/volcano-development.yaml passes the
			// sharding controller's flags; a main without them exits with
			// "unknown flag: --sharding-configmap" and the Deployment
			// crash-loops.
			"v1.15.1": {"sharding-configmap", "sharding-configmap-namespace", "controllers"},
		},
	},
	volcanorelease.Scheduler: {
		values: map[string]string{
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
		},
		required: map[string][]string{
			"v1.14.1": {"scheduler-conf", "scheduler-sharding-mode", "ignored-provisioners", "feature-gates"},
			"v1.15.1": {"scheduler-conf", "scheduler-sharding-mode", "ignored-provisioners", "feature-gates", "percentage-nodes-to-find"},
		},
	},
	volcanorelease.WebhookManager: {
		// The admission chart passes some of these only when a value is
		// set.
		values: map[string]string{
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
		},
		required: map[string][]string{
			"v1.14.1": {"enabled-admission", "webhook-service-name", "port"},
			// v1.15.1's chart passes --feature-gates when
			// admission_feature_gates is set; v1.14's webhook manager
			// refused it.
			"v1.15.1": {"enabled-admission", "webhook-service-name", "feature-gates"},
		},
	},
}
