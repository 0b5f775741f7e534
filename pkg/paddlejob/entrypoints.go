package paddlejob

import (
	"fmt"
	"strconv"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// gloo rendezvous through an HTTP key-value store (role_maker: Gloo.RENDEZVOUS.HTTP).
const glooRendezvousHTTP = "3"

// envVar is one variable of a pod: a literal, a list all pods share,
// which the pod refers to in the job's ConfigMap under key list, or a
// field of the pod itself (the downward API's fieldPath).
type envVar struct {
	name, value, list, field string
}

func lit(name, value string) envVar     { return envVar{name: name, value: value} }
func num(name string, n int) envVar     { return lit(name, strconv.Itoa(n)) }
func shared(name, list string) envVar   { return envVar{name: name, list: list} }
func fieldRef(name, path string) envVar { return envVar{name: name, field: path} }

// replica is the pod whose env an entry point describes.
type replica struct {
	l     *Layout
	r     *RoleTask
	index int
}

func (p replica) host() string     { return p.l.host(p.r, p.index) }
func (p replica) endpoint() string { return p.l.endpoint(p.r, p.index) }
func (p replica) port() string     { return strconv.Itoa(p.l.Args.Port) }
func (p replica) is(role paddleapi.Role) bool {
	return p.r.Role == role
}

// indexAs is the variable name holding the replica's index, for a replica
// of role only.
func (p replica) indexAs(role paddleapi.Role, name string) []envVar {
	if !p.is(role) {
		return nil
	}
	return []envVar{num(name, p.index)}
}

// fleetRole is what fleet's parameter-server role maker reads of a
// replica's role and address; the CTR seed's paddle_k8s reads the same.
func (p replica) fleetRole() []envVar {
	return []envVar{
		num(EnvTrainersNum, p.l.Trainer.Replicas),
		lit(EnvTrainingRole, p.r.Role.TrainingRole()),
		lit(EnvPort, p.port()),
		lit(EnvPodIP, p.host()),
	}
}

func (p replica) ps() bool { return p.l.Mode != paddleapi.ModeCollective }

// entryPoint is one way a container starts Paddle, the code that reads its
// env there, and the variables that code needs. docs/job-plugin.md has the
// same table for users; test/contract checks pods against rules written
// from the same code, independently of this file.
type entryPoint struct {
	Name  string
	Code  string
	Modes []paddleapi.Mode
	vars  func(p replica) []envVar
}

var (
	allModes = []paddleapi.Mode{paddleapi.ModePS, paddleapi.ModeHeterPS, paddleapi.ModeCollective}
	psModes  = []paddleapi.Mode{paddleapi.ModePS, paddleapi.ModeHeterPS}
)

// entryPoints, in the order their variables appear in a pod. Two entry
// points may read the same variable; they always agree on its value
// (TestEntryPointsAgree), and the pod carries it once.
var entryPoints = []entryPoint{
	{
		Name:  "python train.py, parameter-server mode",
		Code:  "fleet/base/role_maker.py: PaddleCloudRoleMaker._ps_env",
		Modes: psModes,
		vars: func(p replica) []envVar {
			// Without the server list Paddle silently trains alone. A
			// pserver's id is list.index(POD_IP:PADDLE_PORT), so both
			// are the exact strings of the list.
			vs := append([]envVar{
				shared(EnvPServerEndpoints, listPServerEndpoints),
				shared(EnvTrainerEndpoints, listTrainerEndpoints),
			}, p.fleetRole()...)
			return append(vs, p.indexAs(paddleapi.RoleTrainer, EnvTrainerID)...)
		},
	},
	{
		Name:  "python train.py, heter-PS stages",
		Code:  "fleet/base/role_maker.py: PaddleCloudRoleMaker._ps_env (heter branch)",
		Modes: []paddleapi.Mode{paddleapi.ModeHeterPS},
		vars: func(p replica) []envVar {
			vs := []envVar{
				shared(EnvAllHeterEndpoints, listHeterEndpoints),
				lit(EnvStageNum, "2"),
				// Paddle evaluates this as a Python list literal.
				lit(EnvStageTrainersNum, fmt.Sprintf("[%d, %d]", p.l.Trainer.Replicas, p.l.Heter.Replicas)),
			}
			switch p.r.Role {
			case paddleapi.RoleTrainer:
				vs = append(vs, lit(EnvStageID, "1"), shared(EnvNextHeterEndpoints, listHeterEndpoints))
			case paddleapi.RoleHeter:
				vs = append(vs, lit(EnvStageID, "2"), shared(EnvPreviousHeterEndpoints, listTrainerEndpoints),
					lit(EnvHeterDeviceType, p.l.heterDevice()))
			}
			return vs
		},
	},
	{
		Name:  "gloo in parameter-server mode",
		Code:  "fleet/base/role_maker.py: PaddleCloudRoleMaker._gloo_init",
		Modes: psModes,
		vars: func(p replica) []envVar {
			a := p.l.Args
			vs := []envVar{num(EnvWithGloo, a.Gloo)}
			if a.Gloo > 0 {
				// pserver 0 serves the HTTP store; it declares the port.
				vs = append(vs, lit(EnvGlooRendezvous, glooRendezvousHTTP),
					lit(EnvGlooHTTPEndpoint, paddleapi.Endpoint(p.l.host(p.l.PServer, 0), a.glooPort())))
			}
			return vs
		},
	},
	{
		Name:  "seed-000 CTR image (Fluid DistributeTranspiler)",
		Code:  "elasticdeeplearning/edl example/ctr/ctr/train.py: train; example/ctr/script/paddle_k8s; Fluid's general envs (ParallelEnv.current_endpoint)",
		Modes: psModes,
		vars: func(p replica) []envVar {
			// train.py listens on POD_IP:(PADDLE_PORT+PADDLE_PSERVER_ID)
			// and looks that up in PADDLE_PSERVERS, so pserver i is
			// listed at PADDLE_PORT+i (the seed's log:
			// PADDLE_PSERVERS=...:30236,...:30237). The fleet list
			// keeps every pserver at PADDLE_PORT.
			vs := []envVar{
				shared(EnvFluidPServers, listFluidPServers),
				num(EnvFluidPServersNum, p.l.PServer.Replicas),
				shared(EnvFluidTrainerIPs, listTrainerHosts),
				lit(EnvFluidCurrentIP, p.host()),
				lit(EnvCurrentEndpoint, p.endpoint()),
				lit(EnvPaddleTrainingRole, p.r.Role.TrainingRole()),
			}
			vs = append(vs, p.fleetRole()...)
			// transpile(trainer_id) runs on pservers too; paddle_k8s
			// gives every pod its index within its role.
			vs = append(vs, num(EnvTrainerID, p.index))
			return append(vs, p.indexAs(paddleapi.RolePServer, EnvPServerID)...)
		},
	},
	{
		Name:  "python train.py, collective mode",
		Code:  "parallel.py: init_parallel_env; fleet/base/role_maker.py: PaddleCloudRoleMaker._collective_env",
		Modes: []paddleapi.Mode{paddleapi.ModeCollective},
		vars: func(p replica) []envVar {
			// The current endpoint must be entry PADDLE_TRAINER_ID of
			// the list; rank 0 serves the TCP store at PADDLE_MASTER.
			return []envVar{
				num(EnvTrainerID, p.index),
				lit(EnvCurrentEndpoint, p.endpoint()),
				num(EnvTrainersNum, p.l.Trainer.Replicas),
				shared(EnvTrainerEndpoints, listTrainerEndpoints),
				lit(EnvMaster, p.l.endpoint(p.l.Trainer, 0)),
				// _collective_env asserts PADDLE_TRAINING_ROLE is TRAINER;
				// TRAINING_ROLE is what scripts written for both modes test.
				lit(EnvPaddleTrainingRole, p.r.Role.TrainingRole()),
				lit(EnvTrainingRole, p.r.Role.TrainingRole()),
			}
		},
	},
	{
		Name:  "fleetrun / legacy python -m paddle.distributed.launch (cloud path)",
		Code:  "fleet/cloud_utils.py: use_paddlecloud, get_cloud_cluster; fleet/launch.py: launch_ps, launch_collective",
		Modes: allModes,
		vars: func(p replica) []envVar {
			// use_paddlecloud() needs all four on every pod, pservers
			// included, or fleetrun emulates a cluster on 127.0.0.1.
			// Collective pods are node PADDLE_TRAINER_ID of
			// PADDLE_TRAINERS, with ports from PADDLE_PORT on.
			return []envVar{
				shared(EnvTrainers, listTrainerHosts),
				lit(EnvPodIP, p.host()),
				num(EnvTrainerID, p.index),
				num(EnvPortsNum, p.l.Args.PortsPerPod),
				lit(EnvPort, p.port()),
				num(EnvTrainersNum, p.l.Trainer.Replicas),
			}
		},
	},
	{
		Name:  "python -m paddle.distributed.launch (Paddle >= 2.3), collective",
		Code:  "launch/plugins/__init__.py: collective_compatible, rewrite_host_ip; launch/controllers/master.py: HTTPMaster; launch/context/args_envs.py: parse_args",
		Modes: []paddleapi.Mode{paddleapi.ModeCollective},
		vars: func(p replica) []envVar {
			// The master is the first trainer endpoint; the one pod whose
			// POD_IP (with a dot) is its host serves it. The rank is
			// PADDLE_TRAINER_ID, the KV prefix the job id.
			return []envVar{
				lit(EnvLaunchRunMode, string(paddleapi.ModeCollective)),
				lit(EnvMaster, p.l.endpoint(p.l.Trainer, 0)),
				num(EnvNNodes, p.l.Trainer.Replicas),
				shared(EnvTrainerEndpoints, listTrainerEndpoints),
				lit(EnvPodIP, p.host()),
				num(EnvTrainerID, p.index),
				lit(EnvJobID, p.l.Namespace+"-"+p.l.Job),
			}
		},
	},
	{
		Name:  "python -m paddle.distributed.launch (Paddle >= 2.3), parameter-server mode",
		Code:  "launch/context/args_envs.py: env_args_mapping; launch/controllers/ps.py: PSController.enable, PSController._build_pod_with_args",
		Modes: psModes,
		vars: func(p replica) []envVar {
			// With both lists the PS controller starts one server per
			// server entry and one trainer per trainer entry that starts
			// with POD_IP: exactly this pod's process, on its declared
			// port (rank = list position); the gloo store is server 0's
			// host at PADDLE_GLOO_PORT. Without them it would pick the
			// collective controller and wait for peers.
			a := p.l.Args
			vs := []envVar{
				lit(EnvLaunchRunMode, string(paddleapi.ModePS)),
				shared(EnvLaunchServers, listPServerEndpoints),
				shared(EnvLaunchTrainers, listTrainerEndpoints),
				num(EnvLaunchServerNum, p.l.PServer.Replicas),
				num(EnvLaunchTrainerNm, p.l.Trainer.Replicas),
				lit(EnvPodIP, p.host()),
				num(EnvWithGloo, a.Gloo),
				lit(EnvJobID, p.l.Namespace+"-"+p.l.Job),
			}
			if a.Gloo > 0 {
				vs = append(vs, num(EnvLaunchGlooPort, a.glooPort()))
			}
			return vs
		},
	},
}

func (e *entryPoint) serves(m paddleapi.Mode) bool {
	for _, x := range e.Modes {
		if x == m {
			return true
		}
	}
	return false
}
