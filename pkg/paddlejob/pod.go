package paddlejob

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// DecoratePod gives a pod of the job, as Volcano's job controller builds
// it, its name, labels, env, ports and barrier. l is the job's validated
// layout in any incarnation; the pod's own incarnation is the one Volcano
// wrote on it. It returns that incarnation's layout and whether the pod
// plays a Paddle role: its env then refers to the incarnation's ConfigMap,
// which must exist before the pod is created. A helper task's pod (a
// TensorBoard, say) gets its DNS name only.
func DecoratePod(pod *v1.Pod, job *batch.Job, l *Layout) (*Layout, bool, error) {
	// Host names carry the incarnation (paddleapi.WithIncarnation).
	l = l.At(podIncarnation(pod, job))
	pod.Spec.Hostname = l.podHostname(job, pod)
	if pod.Spec.Subdomain == "" {
		pod.Spec.Subdomain = job.Name
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[paddleapi.ModeLabel] = string(l.Mode)
	if job.UID != "" {
		pod.Labels[paddleapi.JobUIDLabel] = string(job.UID)
	}

	task := pod.Annotations[batch.TaskSpecKey]
	r := l.roleTask(task)
	l.markPreemption(pod, r, job) // preemption.go
	if r == nil {
		return l, false, nil // a helper task: DNS name only
	}
	index, err := podIndex(pod)
	if err != nil || index >= r.Replicas {
		return l, false, fmt.Errorf("paddle: pod %s/%s of task %s has index %q outside its %d replicas", pod.Namespace, pod.Name, task, pod.Annotations[batch.TaskIndex], r.Replicas)
	}
	pod.Labels[paddleapi.RoleLabel] = string(r.Role)
	// Least privilege: Paddle's processes need no API access (peers come
	// from env and DNS), so no service-account token unless the template
	// asks for one.
	if pod.Spec.AutomountServiceAccountToken == nil {
		automount := false
		pod.Spec.AutomountServiceAccountToken = &automount
	}
	pod.Labels[paddleapi.IndexLabel] = strconv.Itoa(index)
	if l.Elastic != nil {
		labelElasticPod(pod)
	}

	env := l.podEnv(r, index)
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		injectEnv(c, env)
		if n := gpuCount(c); n > 0 {
			injectEnv(c, []v1.EnvVar{{Name: EnvSelectedGPUs, Value: selectedGPUs(n)}})
		}
		if proxy, noProxy := hasProxy(c); proxy && !noProxy {
			np := l.noProxyValue()
			injectEnv(c, []v1.EnvVar{{Name: "NO_PROXY", Value: np}, {Name: "no_proxy", Value: np}})
		}
	}
	if len(pod.Spec.Containers) > 0 {
		declarePorts(pod, l.ports(r, index))
	}
	if l.Args.Barrier {
		addBarrier(pod, l.barrierContainer()) // barrier.go
	}
	return l, true, nil
}

func podIndex(pod *v1.Pod) (int, error) {
	if s, ok := pod.Annotations[batch.TaskIndex]; ok {
		return strconv.Atoi(s)
	}
	// Volcano names pods <job>-<task>-<index>.
	i := strings.LastIndexByte(pod.Name, '-')
	return strconv.Atoi(pod.Name[i+1:])
}

// declarePorts adds ports to the first container (the training container by
// Volcano's and paddle-operator's convention) unless a container of the pod
// already declares that port number or name.
func declarePorts(pod *v1.Pod, ports []v1.ContainerPort) {
	for _, want := range ports {
		taken := false
		for _, c := range pod.Spec.Containers {
			for _, have := range c.Ports {
				if have.ContainerPort == want.ContainerPort || have.Name == want.Name {
					taken = true
				}
			}
		}
		if !taken {
			pod.Spec.Containers[0].Ports = append(pod.Spec.Containers[0].Ports, want)
		}
	}
}

// selectedGPUs is FLAGS_selected_gpus for a container with n GPUs: inside
// the container the device plugin numbers its GPUs 0..n-1.
func selectedGPUs(n int64) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return strings.Join(ids, ",")
}

func hasProxy(c *v1.Container) (proxy, noProxy bool) {
	for _, e := range c.Env {
		switch strings.ToLower(e.Name) {
		case "http_proxy", "https_proxy":
			proxy = true
		case "no_proxy":
			noProxy = true
		}
	}
	return proxy, noProxy
}

// injectEnv adds env to a container, never replacing a variable the
// template already sets (validation has checked those agree).
func injectEnv(c *v1.Container, env []v1.EnvVar) {
	have := make(map[string]bool, len(c.Env))
	for _, e := range c.Env {
		have[e.Name] = true
	}
	for _, e := range env {
		if !have[e.Name] {
			c.Env = append(c.Env, e)
			have[e.Name] = true
		}
	}
}

// labelElasticPod marks a pod of an elastic job for the paddleelastic
// controller.
func labelElasticPod(pod *v1.Pod) { pod.Labels[paddleapi.ElasticLabel] = "true" }
