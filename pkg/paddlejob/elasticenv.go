package paddlejob

// The env of an elastic job's pods: one more source beside the entry
// points. Paddle's elastic launcher (python -m paddle.distributed.launch
// with an etcd:// master, and fleetrun since Paddle 2.3) forms every world
// itself and hands its processes that world's PADDLE_TRAINER_ID,
// PADDLE_TRAINERS_NUM, PADDLE_TRAINER_ENDPOINTS, PADDLE_CURRENT_ENDPOINT
// and PADDLE_MASTER (launch/controllers/collective.py:
// _build_pod_with_master), so a pod gets only what the launcher reads to
// find its etcd and its bounds, and nothing that pins a fixed world.
//
// elasticEnvUse classifies, for elastic pods, every variable an entry point
// sets (TestElasticEnvClassifiesEveryVariable fails on one it does not
// name) and the variables that pin a fixed world. Paddle code cited:
// python/paddle/distributed/ of Paddle v2.6.2 and v3.0.0-beta2 (design.md
// 3b).

import (
	"fmt"
	"strconv"
)

// elasticUse is what an elastic job's pods do with one variable.
type elasticUse struct {
	// given: the pods get it, with the value elasticEnv gives it (the one
	// the elastic launcher needs, which may differ from the fixed-world
	// entry points' value).
	given bool
	// refused: a template of an elastic job may not set it either
	// (elastic.go: validateElasticTemplateEnv): it breaks the launcher.
	refused bool
	// why it is given or withheld.
	why string
}

const (
	whyFixedMaster = "it makes the launcher take the fixed-size HTTP master from its first entry (launch/plugins/__init__.py: collective_compatible)"
	whyPinnedRank  = "it pins the launcher's rank, which ends in IndexError at the first rendezvous after a lower rank is lost (controllers/master.py: sync_peers)"
	whyRandomPorts = "the launcher picks new random ports at every rendezvous (context/node.py, controllers/collective.py: _build_pod_with_master); no port is declared on elastic pods (Layout.ports)"
	whyPSOnly      = "read only by parameter-server entry points, and an elastic job is collective (elastic.go: resolveElastic)"
)

var elasticEnvUse = map[string]elasticUse{
	// Given: the elastic launcher's variables (elasticEnv).
	EnvMaster:         {given: true, why: "etcd://<the job's etcd>: the only way to ETCDMaster (controllers/master.py: Master.factory) and CollectiveElasticController (controllers/collective.py: enable)"},
	EnvNNodes:         {given: true, why: "MIN:MAX, the bounds of every world (job/job.py; controllers/master.py: wait_peer_ready)"},
	EnvJobID:          {given: true, why: "the etcd prefix /paddle/<id> of the job's rendezvous, one per job and the same on its pods"},
	EnvPodIP:          {given: true, why: "from status.podIP: the launcher makes it the host of the pod's endpoints (context/args_envs.py: --host; plugins/__init__.py: rewrite_host_ip needs a dot)"},
	EnvElasticLevel:   {given: true, why: "1: survivors re-form the world when a peer is lost (controllers/controller.py: watch)"},
	EnvElasticTimeout: {given: true, why: "--elastic-timeout (context/args_envs.py)"},
	EnvMaxRestart:     {given: true, why: "--elastic-max-restart: every re-formed world counts (controllers/collective.py: CollectiveElasticController.run)"},
	EnvProtobufImpl:   {given: true, why: "the etcd3 module's generated protobuf code loads only with the pure-Python implementation"},

	// Withheld, and refused in templates: they pin a fixed world.
	EnvTrainerEndpoints:            {refused: true, why: whyFixedMaster},
	EnvDistributedTrainerEndpoints: {refused: true, why: whyFixedMaster},
	EnvTrainerID:                   {refused: true, why: whyPinnedRank},
	EnvRank:                        {refused: true, why: whyPinnedRank},
	EnvTrainersNum:                 {refused: true, why: "the launcher gives its processes the size of every new world itself (controllers/collective.py: _build_pod_with_master)"},
	EnvTrainers:                    {refused: true, why: "it describes a fixed world; the launcher finds its peers through etcd"},
	EnvCurrentEndpoint:             {refused: true, why: "the launcher picks new ports at every rendezvous and gives them to its processes"},

	// Withheld: the launcher has no use for them; a template may set them.
	EnvLaunchRunMode:      {why: "the etcd:// master alone selects the elastic controller, which sets the collective run mode itself (controllers/collective.py: CollectiveElasticController.enable)"},
	EnvPort:               {why: whyRandomPorts},
	EnvPortsNum:           {why: whyRandomPorts},
	EnvPaddleTrainingRole: {why: "every pod of an elastic job is a trainer, which the collective role maker assumes when it is unset (fleet/base/role_maker.py: PaddleCloudRoleMaker._collective_env)"},
	EnvTrainingRole:       {why: "every pod of an elastic job is a trainer; only scripts written for both modes read it"},

	// Withheld: parameter-server variables.
	EnvPServerEndpoints:       {why: whyPSOnly},
	EnvPServerID:              {why: whyPSOnly},
	EnvWithGloo:               {why: whyPSOnly},
	EnvGlooRendezvous:         {why: whyPSOnly},
	EnvGlooHTTPEndpoint:       {why: whyPSOnly},
	EnvAllHeterEndpoints:      {why: whyPSOnly},
	EnvNextHeterEndpoints:     {why: whyPSOnly},
	EnvPreviousHeterEndpoints: {why: whyPSOnly},
	EnvStageID:                {why: whyPSOnly},
	EnvStageNum:               {why: whyPSOnly},
	EnvStageTrainersNum:       {why: whyPSOnly},
	EnvHeterDeviceType:        {why: whyPSOnly},
	EnvFluidPServers:          {why: whyPSOnly},
	EnvFluidPServersNum:       {why: whyPSOnly},
	EnvFluidTrainerIPs:        {why: whyPSOnly},
	EnvFluidCurrentIP:         {why: whyPSOnly},
	EnvLaunchServers:          {why: whyPSOnly},
	EnvLaunchTrainers:         {why: whyPSOnly},
	EnvLaunchServerNum:        {why: whyPSOnly},
	EnvLaunchTrainerNm:        {why: whyPSOnly},
	EnvLaunchGlooPort:         {why: whyPSOnly},
}

// elasticEnv is the elastic source: the env of a trainer of an elastic job
// that the entry points do not decide, in the order pods carry it. Each of
// its variables is given in elasticEnvUse.
func (l *Layout) elasticEnv() []envVar {
	e := l.Elastic
	return []envVar{
		lit(EnvMaster, fmt.Sprintf("etcd://%s:%d", l.etcdHost(), EtcdClientPort)),
		lit(EnvNNodes, fmt.Sprintf("%d:%d", e.Min, e.Max)),
		lit(EnvElasticLevel, "1"),
		lit(EnvElasticTimeout, strconv.Itoa(int(e.Args.Timeout.Seconds()))),
		num(EnvMaxRestart, e.Args.MaxRestart),
		lit(EnvJobID, l.jobID()),
		lit(EnvProtobufImpl, "python"),
		fieldRef(EnvPodIP, "status.podIP"),
	}
}
