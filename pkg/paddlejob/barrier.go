package paddlejob

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// BarrierContainerName is the init container that waits for the peers.
const BarrierContainerName = "paddle-wait-peers"

// BarrierBinary is the barrier's path in its image (cmd/paddle-images).
// Naming it, rather than relying on the image's entrypoint, makes a wrong
// --barrier-image fail to start instead of passing without waiting.
const BarrierBinary = "/usr/local/bin/paddle-barrier"

// barrierContainer builds the init container for a pod of the job. It runs
// paddle-barrier, which exits 0 once every peer host name has an address
// and 1 naming the ones that do not after the timeout, so that the pod
// fails visibly (and a RestartJob policy restarts the gang) instead of
// Paddle failing later: its TCP store client and PS client resolve a name
// once, only NCCL's bootstrap retries. It never asks for an address before
// it knows the name exists, so no negative answer is left in CoreDNS's
// cache for Paddle to hit (internal/dnsbarrier).
func (l *Layout) barrierContainer() v1.Container {
	small := v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")}
	return v1.Container{
		Name:    BarrierContainerName,
		Image:   l.Args.BarrierImage,
		Command: []string{BarrierBinary},
		Env: []v1.EnvVar{
			l.barrierHostsEnv(), // the incarnation's hosts, from its ConfigMap (layout.go)
			{Name: "PADDLE_BARRIER_TIMEOUT_SECONDS", Value: fmt.Sprintf("%d", int(l.Args.BarrierTimeout.Seconds()))},
		},
		Resources:                v1.ResourceRequirements{Requests: small, Limits: small},
		TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
		ImagePullPolicy:          v1.PullIfNotPresent,
		SecurityContext:          restrictedContainer(),
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
