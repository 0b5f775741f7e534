package paddleapi

// Role is the part a pod plays in a Paddle job, as written in the
// RoleLabel of its pod.
type Role string

const (
	// RolePServer serves parameters in parameter-server (PS) training.
	RolePServer Role = "pserver"
	// RoleTrainer computes gradients; in collective training it is the only role.
	RoleTrainer Role = "trainer"
	// RoleHeter is a heterogeneous trainer: stage 2 of a heter-PS pipeline.
	RoleHeter Role = "heter"
)

// TrainingRole is the value Paddle reads from TRAINING_ROLE and
// PADDLE_TRAINING_ROLE (role_maker.py: PaddleCloudRoleMaker._ps_env accepts
// exactly PSERVER, TRAINER and HETER_TRAINER).
func (r Role) TrainingRole() string {
	switch r {
	case RolePServer:
		return "PSERVER"
	case RoleHeter:
		return "HETER_TRAINER"
	default:
		return "TRAINER"
	}
}

// Mode is how a Paddle job trains.
type Mode string

const (
	// ModePS: parameter servers and trainers.
	ModePS Mode = "ps"
	// ModeHeterPS: parameter servers, CPU trainers (stage 1) and heter
	// trainers (stage 2), Paddle >= 2.2.
	ModeHeterPS Mode = "heter-ps"
	// ModeCollective: trainers only, all-reduce (NCCL/Gloo).
	ModeCollective Mode = "collective"
)

// Pod labels the job plugin sets and the scheduler plugin reads.
const (
	// RoleLabel holds the pod's Role.
	RoleLabel = "paddle.volcano.sh/role"
	// IndexLabel holds the pod's index within its role (trainer 0 hosts
	// Paddle's TCP store; pserver 0 the gloo HTTP store).
	IndexLabel = "paddle.volcano.sh/index"
	// JobUIDLabel holds the UID of the Volcano Job the pod belongs to. The
	// job's headless Service selects on it, so the terminating pods of a
	// deleted job of the same name (same host names at version 0) never
	// answer DNS for the new one.
	JobUIDLabel = "paddle.volcano.sh/job-uid"
	// ModeLabel holds the job's Mode.
	ModeLabel = "paddle.volcano.sh/mode"
	// ElasticLabel marks the pods of elastic collective jobs: "true" on
	// trainers, ElasticEtcd on the job's etcd pod. The scheduler plugin
	// may take an elastic job's trainers above the trainer task's
	// minAvailable back for a waiting gang; the paddleelastic controller
	// watches the pods it marks.
	ElasticLabel = "paddle.volcano.sh/elastic"
	// CheckpointableLabel ("true") marks the pods of a job that opted in
	// to preemption (the job plugin's --checkpointable): the job saves
	// checkpoints and resumes from them, so the scheduler plugin may stop
	// it whole for a starving gang. Pods without it are never offered.
	CheckpointableLabel = "paddle.volcano.sh/checkpointable"
)

// ElasticEtcd is the ElasticLabel value of an elastic job's etcd pod
// (trainers have "true").
const ElasticEtcd = "etcd"

// Task-name conventions users have today, in order of preference: Volcano's
// CTR example uses pserver/trainer, paddle-operator uses ps/worker.
var (
	DefaultPServerTaskNames = []string{"ps", "pserver"}
	DefaultTrainerTaskNames = []string{"worker", "trainer"}
	DefaultHeterTaskNames   = []string{"heter"}
)

// RoleFromTaskName guesses a role from a task name with the default
// conventions, for pods that carry no RoleLabel (jobs without the job
// plugin). ok is false for other task names.
func RoleFromTaskName(task string) (role Role, ok bool) {
	for _, n := range DefaultPServerTaskNames {
		if task == n {
			return RolePServer, true
		}
	}
	for _, n := range DefaultTrainerTaskNames {
		if task == n {
			return RoleTrainer, true
		}
	}
	for _, n := range DefaultHeterTaskNames {
		if task == n {
			return RoleHeter, true
		}
	}
	return "", false
}

// Node label keys for the two network tiers above a node, used by the
// scheduler plugin when the cluster has no Volcano HyperNodes (both are
// configurable in the scheduler ConfigMap).
const (
	DefaultRackLabel  = "paddle.volcano.sh/rack"
	DefaultSpineLabel = "paddle.volcano.sh/spine"
)

// PluginName is the name of both plugins: the key under a Volcano Job's
// spec.plugins that turns the job plugin on, and the scheduler plugin's name
// in the scheduler configuration's tiers.
const PluginName = "paddle"
