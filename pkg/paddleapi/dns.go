package paddleapi

import (
	"fmt"
	"strconv"
)

// PodName is Volcano's pod name for replica index of task in job
// (volcano.sh/volcano pkg/controllers/job/helpers: MakePodName).
func PodName(job, task string, index int) string {
	return fmt.Sprintf("%s-%s-%d", job, task, index)
}

// An incarnation is one run of the whole gang: Volcano's Job.Status.Version,
// which its job controller bumps only when it kills the whole job
// (volcano.sh/volcano pkg/controllers/job/job_controller_actions.go:
// killPods with no target) and writes on every pod it creates as the
// volcano.sh/job-version annotation (job_controller_util.go: createJobPod).
//
// Host names change with the incarnation because a RestartJob re-creates
// the pods under their old names with new IPs, and DNS caches (CoreDNS
// `cache 30`) keep answering the old IPs for up to 30 s, while Paddle
// resolves a peer once. Incarnation 0 keeps the pod name as host name.

// MaxIncarnationSuffixLen is the longest suffix WithIncarnation appends:
// "-v" and the largest int32 Volcano's Version can hold. Validation reserves
// it so that a host name fits in a DNS label in every incarnation.
const MaxIncarnationSuffixLen = len("-v2147483647")

// WithIncarnation is a host name in an incarnation: the name itself for
// incarnation 0, name-v<n> after. The last dash-token starts with "v", so it
// never equals another pod's name, whose last token is a number.
func WithIncarnation(name string, incarnation int) string {
	if incarnation <= 0 {
		return name
	}
	return name + "-v" + strconv.Itoa(incarnation)
}

// Hostname is the hostname of a replica in an incarnation.
func Hostname(job, task string, index, incarnation int) string {
	return WithIncarnation(PodName(job, task, index), incarnation)
}

// Host is the DNS name of a replica in an incarnation: its hostname under
// the job's headless Service (subdomain = job name). It resolves from every
// pod of the namespace through the search path and always contains a dot
// (Paddle's new launcher honours POD_IP only then: launch/plugins/__init__.py:
// rewrite_host_ip).
func Host(job, task string, index, incarnation int) string {
	return Hostname(job, task, index, incarnation) + "." + job
}

// Endpoint is host:port.
func Endpoint(host string, port int) string {
	return host + ":" + strconv.Itoa(port)
}
