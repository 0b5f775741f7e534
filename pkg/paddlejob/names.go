package paddlejob

import (
	"strconv"

	v1 "k8s.io/api/core/v1"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/gputopology"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
)

// PluginName is the key under spec.plugins.
const PluginName = paddleapi.PluginName

// Keys in Job.Status.ControlledResources: that the plugin initialised the
// job, the replica counts its endpoint lists were built for, and the
// ConfigMap of its latest incarnation.
const (
	ControlledKey = "plugin-" + PluginName
	LayoutKey     = "plugin-" + PluginName + "-layout"
	ConfigMapKey  = "plugin-" + PluginName + "-configmap"
)

// Labels of the objects the plugin creates for a job.
const (
	// ManagedByLabel marks the Services this plugin creates.
	ManagedByLabel = "paddle.volcano.sh/managed-by"
	// IncarnationLabel holds the incarnation (Volcano job version) of a
	// ConfigMap; batch.JobNameKey names its job, as on the Service.
	IncarnationLabel = "paddle.volcano.sh/incarnation"
	// EtcdOfLabel names, on an elastic job's etcd pod, Service,
	// EndpointSlice and NetworkPolicy, the job they serve.
	EtcdOfLabel = "paddle.volcano.sh/etcd-of"
	// EtcdEndpointSliceManager is the endpointslice.kubernetes.io/managed-by
	// value of the EndpointSlice that publishes an elastic job's etcd
	// (store.go: EtcdEndpointSlice). Kubernetes' endpointslice controller
	// only touches slices that carry its own value
	// (endpointslice-controller.k8s.io), and the Service is selector-less
	// besides.
	EtcdEndpointSliceManager = "paddle-elastic-controller.paddle.volcano.sh"
)

// Job status reasons.
const (
	// InvalidReason is the Job status reason set when the plugin rejects a job.
	InvalidReason = "PaddleInvalidSpec"
	// StoreConflictReason is the reason of the Warning event a job gets
	// when an object under its etcd store's name (pod, Service,
	// EndpointSlice, NetworkPolicy) is not the job's: the plugin neither
	// uses, adopts nor deletes it, and the job does not start until it is
	// gone.
	StoreConflictReason = "PaddleEtcdConflict"
	// ResizeHeldReason is the Job status reason (and Warning event reason)
	// when the controller keeps a running Paddle job at its old size.
	ResizeHeldReason = "PaddleResizeHeld"
)

// The variables Paddle reads, grouped below by the entry point (the way a
// container starts Paddle) whose code reads them. Paths are PaddlePaddle's
// python/paddle/distributed/ (v2.6 and v3.0), or the seed image's code.
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

	EnvWithGloo         = "PADDLE_WITH_GLOO"
	EnvGlooRendezvous   = "PADDLE_GLOO_RENDEZVOUS"
	EnvGlooHTTPEndpoint = "PADDLE_GLOO_HTTP_ENDPOINT"

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

	// Fluid-era names the seed's CTR image (volcanosh/edlctr) and its
	// paddle_k8s start script use.
	EnvFluidPServers    = "PADDLE_PSERVERS"
	EnvFluidPServersNum = "PADDLE_PSERVERS_NUM"
	EnvFluidTrainerIPs  = "PADDLE_TRAINER_IPS"
	EnvFluidCurrentIP   = "PADDLE_CURRENT_IP"

	// The new launcher's own names (launch/context/args_envs.py:
	// env_args_mapping).
	EnvLaunchRunMode   = "PADDLE_RUN_MODE"
	EnvLaunchServers   = "PADDLE_SERVERS_ENDPOINTS"
	EnvLaunchTrainers  = "PADDLE_TRAINERS_ENDPOINTS"
	EnvLaunchServerNum = "PADDLE_SERVER_NUM"
	EnvLaunchTrainerNm = "PADDLE_TRAINER_NUM"
	EnvLaunchGlooPort  = "PADDLE_GLOO_PORT"

	// EnvBarrierHosts is what the barrier init container waits for.
	EnvBarrierHosts = "PADDLE_BARRIER_HOSTS"
)

// The variables of Paddle's elastic launcher that only elastic jobs get
// (launch/context/args_envs.py: env_args_mapping; env beats flags there,
// context/__init__.py: set_env_in_args).
const (
	EnvElasticLevel   = "PADDLE_ELASTIC_LEVEL"
	EnvElasticTimeout = "PADDLE_ELASTIC_TIMEOUT"
	EnvMaxRestart     = "PADDLE_MAX_RESTART"
	// EnvProtobufImpl: the etcd3 module's generated protobuf code fails to
	// load with current protobuf releases unless the pure-Python
	// implementation is used.
	EnvProtobufImpl = "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"
	// EnvRank pins a launcher's rank (args_envs.py: PADDLE_RANK -> --rank).
	EnvRank = "PADDLE_RANK"
	// EnvDistributedTrainerEndpoints is the other name
	// plugins/__init__.py: collective_compatible reads.
	EnvDistributedTrainerEndpoints = "DISTRIBUTED_TRAINER_ENDPOINTS"
)

// The lists every pod shares, stored once per incarnation in the job's
// ConfigMap under these keys (the name of the variable that first reads
// each) and referenced from the pods.
const (
	listPServerEndpoints = EnvPServerEndpoints // host:PADDLE_PORT of every pserver
	listFluidPServers    = EnvFluidPServers    // host:PADDLE_PORT+i of pserver i
	listTrainerEndpoints = EnvTrainerEndpoints // host:PADDLE_PORT of every trainer
	listTrainerHosts     = EnvTrainers         // host of every trainer
	listHeterEndpoints   = EnvAllHeterEndpoints
	listBarrierHosts     = EnvBarrierHosts // the hosts the barrier waits for
)

// The lists every pod of an incarnation shares live in one immutable
// ConfigMap per incarnation, <job>-paddle-v<n>, which the pods' env refers
// to (configMapKeyRef): a pod object then has the same size with 10 or
// 10,000 trainers. It is created before the incarnation's first pod, owned
// by the Job (the garbage collector removes it with the job), and replaced
// when Volcano restarts the whole job: the new pods carry new host names
// (paddleapi.WithIncarnation), so they need new lists.

// ConfigMapName is the ConfigMap of a job's incarnation.
func ConfigMapName(job string, incarnation int) string {
	return job + "-paddle-v" + strconv.Itoa(incarnation)
}

// EtcdName is the name of an elastic job's etcd pod, Service and
// NetworkPolicy. It starts with "paddle-": Paddle strips the characters
// e, t, c, d, ':' and '/' from both ends of PADDLE_MASTER
// (controllers/master.py: ETCDMaster.__init__, master.strip("etcd://")),
// so a host starting with one of them would lose it.
func EtcdName(job string) string { return "paddle-etcd-" + job }

// EtcdClientPort is where the job's etcd serves clients.
const EtcdClientPort = 2379

// JobID is PADDLE_JOB_ID of a job's pods: the etcd prefix /paddle/<id> and
// /<id>/info, which every starting launcher deletes, so it is one per job
// and the same on all its pods.
func JobID(job *batch.Job) string { return jobID(job.Namespace, job.Name) }

func jobID(namespace, job string) string { return namespace + "-" + job }

// Serves reports whether the plugin has set the job up (OnJobAdd) and not
// torn it down since (OnJobDelete, which Volcano's killJob runs on every
// restart, completion and termination): its objects should exist.
func Serves(job *batch.Job) bool {
	return job.Status.ControlledResources[ControlledKey] == PluginName
}

const gpuResource v1.ResourceName = gputopology.ResourceName

// gpuCount is what a container asks of nvidia.com/gpu (limits win, as for
// extended resources they must equal requests).
func gpuCount(c *v1.Container) int64 {
	if q, ok := c.Resources.Limits[gpuResource]; ok {
		return q.Value()
	}
	if q, ok := c.Resources.Requests[gpuResource]; ok {
		return q.Value()
	}
	return 0
}

// taskIndex is the index of the named task in the job, -1 if none.
func taskIndex(job *batch.Job, name string) int {
	for i, t := range job.Spec.Tasks {
		if t.Name == name {
			return i
		}
	}
	return -1
}
