package paddleapi

import "fmt"

// PodName is Volcano's pod name for replica index of task in job
// (volcano.sh/volcano pkg/controllers/job/helpers: MakePodName).
func PodName(job, task string, index int) string {
	return fmt.Sprintf("%s-%s-%d", job, task, index)
}

// Host is the stable DNS name of a replica: the pod's hostname under the
// job's headless Service (subdomain = job name). It resolves from every pod
// of the namespace through the search path, always contains a dot (Paddle's
// new launcher honours POD_IP only then), and does not change when the pod
// is re-created.
func Host(job, task string, index int) string {
	return PodName(job, task, index) + "." + job
}

// Endpoint is host:port.
func Endpoint(host string, port int) string {
	return fmt.Sprintf("%s:%d", host, port)
}
