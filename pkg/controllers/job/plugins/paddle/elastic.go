package paddle

// Elastic collective jobs: Paddle's own launcher (python -m
// paddle.distributed.launch, and fleetrun since Paddle 2.3) re-forms its
// world when a pod is lost or joins, through an etcd master. This file
// holds what the plugin does for such a job: its arguments, the env of its
// pods, its validation, the resize rule the webhook and the controller
// apply, and its warnings. The per-job etcd is in elastic_etcd.go, the
// loss notice in pkg/controllers/paddleelastic.
//
// Paddle code cited: python/paddle/distributed/launch/ of Paddle v2.6.2
// and v3.0.0-beta2 (the same code in both).

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
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

// Defaults and bounds of the elastic arguments.
const (
	// DefaultElasticTimeout is PADDLE_ELASTIC_TIMEOUT. Every starting
	// launcher wipes all heartbeats and the others beat again only every
	// ttl/2 = 5 s (controllers/master.py: ETCDMaster.register_heartbeat),
	// so a world formed faster than that splits: with 5 s, 3 of 6 first
	// rendezvous formed two worlds at once (design.md 3b). 10 s leaves two
	// beats.
	DefaultElasticTimeout = 10 * time.Second
	MinElasticTimeout     = 10 * time.Second
	// DefaultElasticMaxRestart is PADDLE_MAX_RESTART: every re-formed world
	// counts (controllers/collective.py: CollectiveElasticController.run),
	// resizes and losses included; Paddle's default 3 ends a launcher at
	// the 5th membership change.
	DefaultElasticMaxRestart = 100
	// DefaultElasticMaxFailures is how many trainer crashes the
	// paddleelastic controller replaces before it fails the job.
	DefaultElasticMaxFailures = 3
	// DefaultEtcdImage runs the per-job etcd on real clusters.
	DefaultEtcdImage = "registry.k8s.io/etcd:3.6.4-0"
)

// ElasticArgs are the plugin arguments of elastic jobs. A job is elastic
// when --elastic-max is set.
type ElasticArgs struct {
	// Max is the largest world (MAX of PADDLE_NNODES=MIN:MAX); MIN is the
	// trainer task's minAvailable. 0: a fixed-size job.
	Max int
	// Timeout is PADDLE_ELASTIC_TIMEOUT, how long a launcher waits after
	// the last membership change before it forms a world below MAX.
	Timeout time.Duration
	// MaxRestart is PADDLE_MAX_RESTART, the worlds one launcher may re-form.
	MaxRestart int
	// MaxFailures is how many crashed trainer pods the controller replaces;
	// the next one fails the job.
	MaxFailures int
	// EtcdImage is the image of the job's etcd pod.
	EtcdImage string
}

// registerElasticFlags adds the elastic arguments to the plugin's flags.
func registerElasticFlags(fs *flag.FlagSet, e *ElasticArgs) {
	fs.IntVar(&e.Max, "elastic-max", 0, "largest number of trainer pods of an elastic collective job (PADDLE_NNODES=MIN:MAX, MIN = the trainer task's minAvailable); 0: fixed size")
	fs.DurationVar(&e.Timeout, "elastic-timeout", DefaultElasticTimeout, "PADDLE_ELASTIC_TIMEOUT of elastic jobs, at least 10s")
	fs.IntVar(&e.MaxRestart, "elastic-max-restart", DefaultElasticMaxRestart, "PADDLE_MAX_RESTART of elastic jobs: worlds one launcher may re-form")
	fs.IntVar(&e.MaxFailures, "elastic-max-failures", DefaultElasticMaxFailures, "crashed trainer pods of an elastic job replaced before the job fails")
	fs.StringVar(&e.EtcdImage, "etcd-image", DefaultEtcdImage, "image of an elastic job's etcd pod")
}

// Enabled says the job is elastic.
func (e *ElasticArgs) Enabled() bool { return e.Max != 0 }

func (e *ElasticArgs) validate() field.ErrorList {
	var errs field.ErrorList
	if e.Max < 0 {
		errs = append(errs, field.Invalid(argsPath.Key("--elastic-max"), e.Max, "must be at least 2 (the largest number of trainer pods), or 0 for a fixed-size job"))
	}
	if !e.Enabled() {
		return errs
	}
	if e.Timeout < MinElasticTimeout {
		errs = append(errs, field.Invalid(argsPath.Key("--elastic-timeout"), e.Timeout.String(),
			"must be at least 10s: every starting launcher wipes all heartbeats and the others beat again only every 5 s, so a shorter timeout splits the first rendezvous into separate worlds"))
	} else if e.Timeout%time.Second != 0 {
		errs = append(errs, field.Invalid(argsPath.Key("--elastic-timeout"), e.Timeout.String(), "must be whole seconds (PADDLE_ELASTIC_TIMEOUT is an integer)"))
	}
	if e.MaxRestart < 1 {
		errs = append(errs, field.Invalid(argsPath.Key("--elastic-max-restart"), e.MaxRestart,
			"must be at least 1; every resize and every lost pod re-forms the world once and counts"))
	}
	if e.MaxFailures < 0 {
		errs = append(errs, field.Invalid(argsPath.Key("--elastic-max-failures"), e.MaxFailures, "must be 0 or more"))
	}
	if strings.TrimSpace(e.EtcdImage) == "" {
		errs = append(errs, field.Required(argsPath.Key("--etcd-image"), "the etcd image of the job's rendezvous, e.g. "+DefaultEtcdImage))
	}
	return errs
}

// Elastic is the elastic part of a job's layout.
type Elastic struct {
	// Min and Max bound the trainer pods (PADDLE_NNODES=Min:Max).
	Min, Max int
	Args     *ElasticArgs
}

// resolveElastic sets l.Elastic for an elastic job and checks what Paddle's
// elastic launcher needs of the spec. Called by ValidateJob on a resolved
// layout.
func resolveElastic(job *batch.Job, l *Layout) field.ErrorList {
	e := &l.Args.Elastic
	l.Elastic = nil
	if !e.Enabled() {
		return nil
	}
	maxPath := argsPath.Key("--elastic-max")
	if l.Mode != paddleapi.ModeCollective {
		// Only CollectiveElasticController has an elastic mode
		// (controllers/collective.py: enable needs an etcd:// master);
		// PSController starts from fixed server and trainer lists.
		return field.ErrorList{field.Invalid(maxPath, e.Max,
			fmt.Sprintf("%s jobs cannot be elastic: Paddle re-forms only collective worlds (launch/controllers/collective.py: CollectiveElasticController); its parameter-server controller starts from fixed server and trainer lists. Remove --elastic-max", l.Mode))}
	}
	ti := l.Trainer.TaskIndex
	ts := &job.Spec.Tasks[ti]
	minPath := field.NewPath("spec", "tasks").Index(ti).Child("minAvailable")
	if ts.MinAvailable == nil {
		return field.ErrorList{field.Required(minPath,
			fmt.Sprintf("an elastic job's smallest world is the trainer task's minAvailable (MIN of PADDLE_NNODES=MIN:%d); set it", e.Max))}
	}
	lo := int(*ts.MinAvailable)
	var errs field.ErrorList
	switch {
	case lo < 1:
		errs = append(errs, field.Invalid(minPath, lo, "the smallest world of an elastic job needs at least 1 trainer"))
	case lo >= e.Max:
		errs = append(errs, field.Invalid(maxPath, e.Max,
			fmt.Sprintf("must be above the trainer task's minAvailable (%d): Paddle re-forms a world only between MIN and MAX (launch/job/job.py), and with MIN = MAX it waits ten times the timeout", lo)))
	}
	if len(errs) > 0 {
		return errs
	}
	if r := l.Trainer.Replicas; r < lo || r > e.Max {
		errs = append(errs, field.Invalid(field.NewPath("spec", "tasks").Index(ti).Child("replicas"), r,
			fmt.Sprintf("an elastic job runs between minAvailable (%d) and --elastic-max (%d) trainers; a launcher that sees more peers than MAX ends (controllers/master.py: wait_peer_ready)", lo, e.Max)))
	}
	// The gang must be able to run at MIN trainers: the job's minAvailable
	// may not count trainers above MIN.
	floor := int32(0)
	for i := range job.Spec.Tasks {
		t := &job.Spec.Tasks[i]
		switch {
		case i == ti:
			floor += int32(lo)
		case t.MinAvailable != nil:
			floor += *t.MinAvailable
		default:
			floor += t.Replicas
		}
	}
	if job.Spec.MinAvailable > floor {
		errs = append(errs, field.Invalid(field.NewPath("spec", "minAvailable"), job.Spec.MinAvailable,
			fmt.Sprintf("an elastic job must be able to run with %d trainers (the trainer task's minAvailable); set minAvailable to at most %d", lo, floor)))
	}
	if n := EtcdName(job.Name); len(validation.IsDNS1035Label(n)) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), job.Name,
			fmt.Sprintf("the job's etcd Service %q must be a DNS label of at most 63 characters; shorten the job name", n)))
	}
	if rp := ts.Template.Spec.RestartPolicy; rp != v1.RestartPolicyNever {
		shown := string(rp)
		if shown == "" {
			shown = "unset (Always)"
		}
		// The elastic controller replaces a trainer whose launcher ended
		// and counts those ends toward --elastic-max-failures; a container
		// the kubelet restarts in place never ends its pod.
		errs = append(errs, field.Invalid(field.NewPath("spec", "tasks").Index(ti).Child("template", "spec", "restartPolicy"), shown,
			"an elastic job's trainers need restartPolicy Never: restarted in place (OnFailure, Always) a launcher's pod never ends, so it is never replaced and its crashes never count toward --elastic-max-failures; set restartPolicy: Never"))
	}
	errs = append(errs, validateElasticTemplateEnv(job, l.Trainer)...)
	if len(errs) > 0 {
		return errs
	}
	l.Elastic = &Elastic{Min: lo, Max: e.Max, Args: e}
	return nil
}

// fixedWorldEnv are variables that pin a fixed world, with why each breaks
// the elastic launcher.
var fixedWorldEnv = map[string]string{
	EnvTrainerEndpoints:            "it makes the launcher take the fixed-size HTTP master from its first entry (launch/plugins/__init__.py: collective_compatible)",
	EnvDistributedTrainerEndpoints: "it makes the launcher take the fixed-size HTTP master from its first entry (launch/plugins/__init__.py: collective_compatible)",
	EnvTrainerID:                   "it pins the launcher's rank, which ends in IndexError at the first rendezvous after a lower rank is lost (controllers/master.py: sync_peers)",
	EnvRank:                        "it pins the launcher's rank, which ends in IndexError at the first rendezvous after a lower rank is lost (controllers/master.py: sync_peers)",
	EnvTrainersNum:                 "the launcher gives its processes the size of every new world itself (controllers/collective.py: _build_pod_with_master)",
	EnvTrainers:                    "it describes a fixed world; the launcher finds its peers through etcd",
	EnvCurrentEndpoint:             "the launcher picks new ports at every rendezvous and gives them to its processes",
}

// validateElasticTemplateEnv refuses template variables that break
// Paddle's elastic launcher. PADDLE_MASTER and PADDLE_NNODES are checked by
// validateTemplateEnv like every variable the plugin sets.
func validateElasticTemplateEnv(job *batch.Job, r *RoleTask) field.ErrorList {
	var errs field.ErrorList
	ts := &job.Spec.Tasks[r.TaskIndex]
	spec := field.NewPath("spec", "tasks").Index(r.TaskIndex).Child("template", "spec")
	for ci := range ts.Template.Spec.Containers {
		for ei, e := range ts.Template.Spec.Containers[ci].Env {
			path := spec.Child("containers").Index(ci).Child("env").Index(ei)
			if why, ok := fixedWorldEnv[e.Name]; ok {
				errs = append(errs, field.Forbidden(path, fmt.Sprintf("%s must not be set in an elastic job: %s; remove it", e.Name, why)))
				continue
			}
			if e.Name == EnvJobID && (e.ValueFrom != nil || e.Value != JobID(job)) {
				errs = append(errs, field.Invalid(path, e.Name, fmt.Sprintf(
					"PADDLE_JOB_ID of an elastic job is %q: the controller finds the launchers' keys in the job's etcd under /paddle/%s (loss notice, completion); remove it (the plugin sets it)", JobID(job), JobID(job))))
				continue
			}
			if msg := elasticEnvProblem(e); msg != "" {
				errs = append(errs, field.Invalid(path, e.Name, msg))
			}
		}
	}
	return errs
}

// elasticEnvProblem explains why a template's own value of an elastic
// variable cannot be used, or returns "". PADDLE_MAX_RESTART and the
// protobuf switch are the user's to set.
func elasticEnvProblem(e v1.EnvVar) string {
	switch e.Name {
	case EnvElasticLevel:
		if e.ValueFrom == nil && e.Value == "1" {
			return ""
		}
		return "PADDLE_ELASTIC_LEVEL must be 1 in an elastic job: with -1 (Paddle's default) every survivor stops and exits when a peer is lost, with 0 a launcher exits when its own process fails (controllers/controller.py: watch); remove it (the plugin sets 1)"
	case EnvElasticTimeout:
		if n, err := strconv.Atoi(e.Value); e.ValueFrom == nil && err == nil && n >= int(MinElasticTimeout.Seconds()) {
			return ""
		}
		return "PADDLE_ELASTIC_TIMEOUT must be whole seconds, at least 10 (a shorter one splits the first rendezvous); remove it and pass --elastic-timeout to the plugin"
	case EnvPodIP:
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP" {
			return ""
		}
		return "POD_IP becomes the host of the pod's endpoints in an elastic job (launch/context/args_envs.py: --host) and must be the pod's IP; remove it (the plugin sets it from status.podIP)"
	}
	return ""
}

// EtcdName is the name of an elastic job's etcd pod, Service and
// NetworkPolicy. It starts with "paddle-": Paddle strips the characters
// e, t, c, d, ':' and '/' from both ends of PADDLE_MASTER
// (controllers/master.py: ETCDMaster.__init__, master.strip("etcd://")),
// so a host starting with one of them would lose it.
func EtcdName(job string) string { return "paddle-etcd-" + job }

// EtcdClientPort is where the job's etcd serves clients.
const EtcdClientPort = 2379

// etcdHost is the etcd's DNS name as the pods' resolvers find it (search
// list <namespace>.svc.<cluster domain>).
func (l *Layout) etcdHost() string { return EtcdName(l.Job) + "." + l.Namespace + ".svc" }

// jobID is PADDLE_JOB_ID: the etcd prefix /paddle/<id> and /<id>/info,
// which every starting launcher deletes, so it is one per job and the same
// on all its pods.
func (l *Layout) jobID() string { return l.Namespace + "-" + l.Job }

// JobID is PADDLE_JOB_ID of a job's pods.
func JobID(job *batch.Job) string { return job.Namespace + "-" + job.Name }

// elasticEnv is the env of a trainer of an elastic job, as literals: the
// elastic launcher's variables and nothing that pins a world. POD_IP,
// from the downward API, is added by elasticPodEnv.
func (l *Layout) elasticEnv() []envVar {
	e := l.Elastic
	return []envVar{
		// The only way to ETCDMaster (controllers/master.py: Master.factory)
		// and CollectiveElasticController (controllers/collective.py: enable).
		lit(EnvMaster, fmt.Sprintf("etcd://%s:%d", l.etcdHost(), EtcdClientPort)),
		lit(EnvNNodes, fmt.Sprintf("%d:%d", e.Min, e.Max)),
		lit(EnvElasticLevel, "1"),
		lit(EnvElasticTimeout, strconv.Itoa(int(e.Args.Timeout.Seconds()))),
		num(EnvMaxRestart, e.Args.MaxRestart),
		lit(EnvJobID, l.jobID()),
		lit(EnvProtobufImpl, "python"),
	}
}

// elasticPodEnv is elasticEnv as Kubernetes env, with POD_IP, which the
// launcher makes the host of the pod's endpoints (args_envs.py: --host;
// plugins/__init__.py: rewrite_host_ip needs a dot, which an IPv4 has).
func (l *Layout) elasticPodEnv() []v1.EnvVar {
	vs := l.elasticEnv()
	out := make([]v1.EnvVar, 0, len(vs)+1)
	for _, v := range vs {
		out = append(out, l.k8sEnv(v))
	}
	return append(out, v1.EnvVar{Name: EnvPodIP, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
}

// labelElasticPod marks a pod of an elastic job for the paddleelastic
// controller.
func labelElasticPod(pod *v1.Pod) { pod.Labels[paddleapi.ElasticLabel] = "true" }

// IsElastic reports whether a job's plugin arguments declare it elastic
// (without validating the job).
func IsElastic(job *batch.Job) bool {
	_, ok := ElasticJobArgs(job)
	return ok
}

// ElasticJobArgs are the plugin arguments of a job they declare elastic
// (without validating the job); ok is false for any other job.
func ElasticJobArgs(job *batch.Job) (a *Args, ok bool) {
	args, uses := job.Spec.Plugins[PluginName]
	if !uses {
		return nil, false
	}
	a, errs := ParseArgs(args)
	if len(errs) > 0 || !a.Elastic.Enabled() {
		return nil, false
	}
	return a, true
}

// elasticReplicaChanges is the resize rule of an elastic job (l, valid):
// the trainers' replicas may change within [MIN, MAX] while it runs, MIN,
// MAX and everything else the launchers were started with may not. A
// launcher's MIN:MAX is fixed when its pod is created, and one that sees
// more peers than its MAX ends (controllers/master.py: wait_peer_ready).
func elasticReplicaChanges(old, job *batch.Job, l *Layout) field.ErrorList {
	oldArgs, oldErrs := ParseArgs(old.Spec.Plugins[PluginName])
	if len(oldErrs) > 0 {
		return nil // never ran: judged alone
	}
	if was, errs := ValidateJob(old, oldArgs); len(errs) > 0 || was == nil {
		return nil
	}
	tasks := field.NewPath("spec", "tasks")
	switch {
	case !oldArgs.Elastic.Enabled():
		return field.ErrorList{field.Forbidden(argsPath.Key("--elastic-max"),
			"a running job cannot become elastic: its launchers were started with a fixed world; delete the job and create it with --elastic-max")}
	case l.Elastic == nil:
		return field.ErrorList{field.Forbidden(argsPath.Key("--elastic-max"),
			"a running elastic job cannot become fixed-size: its launchers were started with an etcd master; delete the job and create it without --elastic-max")}
	}
	var errs field.ErrorList
	if oldArgs.Elastic != l.Args.Elastic {
		errs = append(errs, field.Forbidden(argsPath,
			"the elastic arguments cannot change while the job exists: every launcher got PADDLE_NNODES, PADDLE_ELASTIC_TIMEOUT and PADDLE_MAX_RESTART when its pod was created; delete the job and create it with the new arguments"))
	}
	ti := l.Trainer.TaskIndex
	if oi := taskIndex(old, l.Trainer.TaskName); oi >= 0 {
		if om := old.Spec.Tasks[oi].MinAvailable; om != nil && int(*om) != l.Elastic.Min {
			errs = append(errs, field.Forbidden(tasks.Index(ti).Child("minAvailable"),
				fmt.Sprintf("the trainer task's minAvailable is MIN of PADDLE_NNODES=%d:%d, which every launcher got when its pod was created; it cannot change from %d to %d while the job exists",
					*om, l.Elastic.Max, *om, l.Elastic.Min)))
		}
	}
	// An elastic job is collective: the trainers are its only role.
	return errs
}

// elasticResizeAllowed is holdResize's question for an elastic job: the
// trainers' replicas changed within [MIN, MAX] and nothing else the
// launchers depend on did. Volcano then creates and deletes pods as for
// any job (syncJob), and the survivors keep running: Paddle re-forms the
// world itself.
func (p *jobPlugin) elasticResizeAllowed(job *batch.Job) bool {
	if !p.args.Elastic.Enabled() {
		return false
	}
	l, errs := ValidateJob(job, p.args)
	if len(errs) > 0 || l.Elastic == nil {
		return false // out of [MIN, MAX]: held like any resize, with the reason
	}
	if job.Status.ControlledResources != nil {
		job.Status.ControlledResources[layoutKey] = l.ReplicaSummary()
	}
	return true
}

// elasticWarnings are the warnings of an elastic job: policies that would
// restart the survivors Paddle keeps running.
func elasticWarnings(job *batch.Job, l *Layout) []string {
	var out []string
	check := func(path string, policies []batch.LifecyclePolicy) {
		for _, pol := range policies {
			if pol.Action == bus.RestartJobAction || pol.Action == bus.RestartTaskAction || pol.Action == bus.RestartPartitionAction {
				out = append(out, fmt.Sprintf("%s: %s restarts the pods Paddle keeps training in an elastic job; remove it: a lost or failed trainer is replaced on its own and the survivors re-form the world", path, pol.Action))
			}
		}
	}
	check("spec.policies", job.Spec.Policies)
	check(fmt.Sprintf("spec.tasks[%d].policies", l.Trainer.TaskIndex), job.Spec.Tasks[l.Trainer.TaskIndex].Policies)
	return out
}
