package paddle

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// BarrierContainerName is the init container that waits for the peers.
const BarrierContainerName = "paddle-wait-peers"

// barrierScript waits until every peer host name resolves, then exits 0; it
// exits 1 after the timeout so the pod fails visibly (and a RestartJob
// policy restarts the gang) instead of Paddle crashing on a lookup later.
// Paddle needs this: its TCP store client and the PS client resolve a name
// once and fail, only NCCL's bootstrap retries.
//
// Names are tried under the first search domain of resolv.conf
// (<namespace>.svc.<cluster-domain> in a pod), because busybox's nslookup
// does not walk the search list.
const barrierScript = `set -u
deadline=$(( $(date +%s) + ${PADDLE_BARRIER_TIMEOUT_SECONDS} ))
domain=$(awk '/^search/ { print $2; exit }' "${RESOLV_CONF:-/etc/resolv.conf}")
for host in $(echo "${PADDLE_BARRIER_HOSTS}" | tr ',' ' '); do
  name="${host}${domain:+.${domain}}"
  until nslookup "${name}" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "${deadline}" ]; then
      echo "paddle: ${name} does not resolve after ${PADDLE_BARRIER_TIMEOUT_SECONDS}s; is the job's headless Service there and its pod scheduled?" >&2
      exit 1
    fi
    sleep 1
  done
done
echo "paddle: all $(echo "${PADDLE_BARRIER_HOSTS}" | tr ',' '\n' | wc -l) peers resolve"
`

// barrierContainer builds the init container for a pod of the job.
func (l *Layout) barrierContainer() v1.Container {
	var hosts []string
	for _, r := range l.roles() {
		hosts = append(hosts, r.Hosts...)
	}
	small := v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")}
	return v1.Container{
		Name:    BarrierContainerName,
		Image:   l.Args.BarrierImage,
		Command: []string{"sh", "-c", barrierScript},
		Env: []v1.EnvVar{
			{Name: "PADDLE_BARRIER_HOSTS", Value: strings.Join(hosts, ",")},
			{Name: "PADDLE_BARRIER_TIMEOUT_SECONDS", Value: fmt.Sprintf("%d", int(l.Args.BarrierTimeout.Seconds()))},
		},
		Resources:                v1.ResourceRequirements{Requests: small, Limits: small},
		TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
		ImagePullPolicy:          v1.PullIfNotPresent,
	}
}

// addBarrier prepends the barrier so user init containers (data download,
// say) run after the peers are known; idempotent.
func addBarrier(pod *v1.Pod, c v1.Container) {
	for _, ic := range pod.Spec.InitContainers {
		if ic.Name == BarrierContainerName {
			return
		}
	}
	pod.Spec.InitContainers = append([]v1.Container{c}, pod.Spec.InitContainers...)
}
