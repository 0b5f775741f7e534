package paddle

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// The names below are read by Paddle's own code; see docs/job-plugin.md for
// which entry point reads which (role_maker.py, parallel.py, cloud_utils.py,
// launch/). Endpoint lists always follow replica order, so an id is the
// position of the pod's own endpoint in its list.
const (
	EnvJobID              = "PADDLE_JOB_ID"
	EnvPort               = "PADDLE_PORT"
	EnvPortsNum           = "TRAINER_PORTS_NUM"
	EnvTrainersNum        = "PADDLE_TRAINERS_NUM"
	EnvTrainerEndpoints   = "PADDLE_TRAINER_ENDPOINTS"
	EnvTrainers           = "PADDLE_TRAINERS"
	EnvTrainerID          = "PADDLE_TRAINER_ID"
	EnvPodIP              = "POD_IP"
	EnvCurrentEndpoint    = "PADDLE_CURRENT_ENDPOINT"
	EnvTrainingRole       = "TRAINING_ROLE"
	EnvPaddleTrainingRole = "PADDLE_TRAINING_ROLE"

	EnvPServerEndpoints = "PADDLE_PSERVERS_IP_PORT_LIST"
	EnvPServerID        = "PADDLE_PSERVER_ID"

	EnvWithGloo        = "PADDLE_WITH_GLOO"
	EnvGlooRendezvous  = "PADDLE_GLOO_RENDEZVOUS"
	EnvGlooHTTPEnpoint = "PADDLE_GLOO_HTTP_ENDPOINT"

	EnvMaster = "PADDLE_MASTER"
	EnvNNodes = "PADDLE_NNODES"

	EnvAllHeterEndpoints      = "PADDLE_ALL_HETER_TRAINER_IP_PORT_LIST"
	EnvNextHeterEndpoints     = "PADDLE_NEXT_HETER_TRAINER_IP_PORT_LIST"
	EnvPreviousHeterEndpoints = "PADDLE_PREVIOUS_HETER_TRAINER_IP_PORT_LIST"
	EnvStageID                = "STAGE_ID"
	EnvStageNum               = "STAGE_NUM"
	EnvStageTrainersNum       = "PADDLE_STAGE_TRAINERS_NUM"
	EnvHeterDeviceType        = "HETER_DEVICE_TYPE"

	EnvSelectedGPUs = "FLAGS_selected_gpus"

	// Fluid-era names the CTR example images of Volcano's Paddle guide read.
	EnvFluidPServers    = "PADDLE_PSERVERS"
	EnvFluidPServersNum = "PADDLE_PSERVERS_NUM"
	EnvFluidTrainerIPs  = "PADDLE_TRAINER_IPS"
	EnvFluidCurrentIP   = "PADDLE_CURRENT_IP"
)

// gloo rendezvous through an HTTP key-value store (role_maker: Gloo.RENDEZVOUS.HTTP).
const glooRendezvousHTTP = "3"

// podEnv is the Paddle env of replica index of role r, shared by every
// container of the pod, in a stable order.
func (l *Layout) podEnv(r *RoleTask, index int) []v1.EnvVar {
	a := l.Args
	host := r.Hosts[index]
	trainerEPs := l.Trainer.Endpoints(a.Port)
	env := []v1.EnvVar{
		{Name: EnvJobID, Value: l.Namespace + "-" + l.Job},
		{Name: EnvPort, Value: strconv.Itoa(a.Port)},
		{Name: EnvPortsNum, Value: strconv.Itoa(a.PortsPerPod)},
		{Name: EnvTrainersNum, Value: strconv.Itoa(l.Trainer.Replicas)},
		{Name: EnvTrainerEndpoints, Value: strings.Join(trainerEPs, ",")},
		{Name: EnvTrainers, Value: strings.Join(l.Trainer.Hosts, ",")},
		{Name: EnvFluidTrainerIPs, Value: strings.Join(l.Trainer.Hosts, ",")},
	}
	switch l.Mode {
	case paddleapi.ModePS, paddleapi.ModeHeterPS:
		psEPs := strings.Join(l.PServer.Endpoints(a.Port), ",")
		env = append(env,
			v1.EnvVar{Name: EnvPServerEndpoints, Value: psEPs},
			v1.EnvVar{Name: EnvFluidPServers, Value: psEPs},
			v1.EnvVar{Name: EnvFluidPServersNum, Value: strconv.Itoa(l.PServer.Replicas)},
			v1.EnvVar{Name: EnvWithGloo, Value: strconv.Itoa(a.Gloo)},
		)
		if a.Gloo > 0 {
			env = append(env,
				v1.EnvVar{Name: EnvGlooRendezvous, Value: glooRendezvousHTTP},
				v1.EnvVar{Name: EnvGlooHTTPEnpoint, Value: paddleapi.Endpoint(l.PServer.Hosts[0], a.glooPort())},
			)
		}
		if l.Mode == paddleapi.ModeHeterPS {
			env = append(env,
				v1.EnvVar{Name: EnvAllHeterEndpoints, Value: strings.Join(l.Heter.Endpoints(a.Port), ",")},
				v1.EnvVar{Name: EnvStageNum, Value: "2"},
				// Paddle evaluates this as a Python list literal.
				v1.EnvVar{Name: EnvStageTrainersNum, Value: fmt.Sprintf("[%d, %d]", l.Trainer.Replicas, l.Heter.Replicas)},
			)
		}
	case paddleapi.ModeCollective:
		env = append(env,
			v1.EnvVar{Name: EnvMaster, Value: trainerEPs[0]},
			v1.EnvVar{Name: EnvNNodes, Value: strconv.Itoa(l.Trainer.Replicas)},
		)
	}

	env = append(env,
		v1.EnvVar{Name: EnvPodIP, Value: host},
		v1.EnvVar{Name: EnvFluidCurrentIP, Value: host},
		v1.EnvVar{Name: EnvCurrentEndpoint, Value: paddleapi.Endpoint(host, a.Port)},
		v1.EnvVar{Name: EnvTrainingRole, Value: r.Role.TrainingRole()},
		v1.EnvVar{Name: EnvPaddleTrainingRole, Value: r.Role.TrainingRole()},
	)
	switch r.Role {
	case paddleapi.RoleTrainer:
		env = append(env, v1.EnvVar{Name: EnvTrainerID, Value: strconv.Itoa(index)})
		if l.Mode == paddleapi.ModeHeterPS {
			env = append(env,
				v1.EnvVar{Name: EnvStageID, Value: "1"},
				v1.EnvVar{Name: EnvNextHeterEndpoints, Value: strings.Join(l.Heter.Endpoints(a.Port), ",")},
			)
		}
	case paddleapi.RolePServer:
		env = append(env, v1.EnvVar{Name: EnvPServerID, Value: strconv.Itoa(index)})
	case paddleapi.RoleHeter:
		env = append(env,
			v1.EnvVar{Name: EnvStageID, Value: "2"},
			v1.EnvVar{Name: EnvPreviousHeterEndpoints, Value: strings.Join(trainerEPs, ",")},
			v1.EnvVar{Name: EnvHeterDeviceType, Value: l.heterDevice()},
		)
	}
	return env
}

// heterDevice is HETER_DEVICE_TYPE: the argument, or gpu when the heter
// task asks for GPUs.
func (l *Layout) heterDevice() string {
	if l.Args.HeterDevice != heterDeviceAuto {
		return l.Args.HeterDevice
	}
	if l.Heter != nil && l.Heter.gpus > 0 {
		return "gpu"
	}
	return "cpu"
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

// noProxyValue keeps the job's own names away from an HTTP proxy: Paddle's
// launchers drop http_proxy for the same reason (proxies hang multi-node
// training), but `python train.py` does not.
func (l *Layout) noProxyValue() string {
	return fmt.Sprintf(".%s,.%s.%s.svc,localhost,127.0.0.1", l.Job, l.Job, l.Namespace)
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
