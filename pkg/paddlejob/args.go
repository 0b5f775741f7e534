package paddlejob

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
	"github.com/volcano-paddle/volcano-paddle/pkg/version"
)

// Defaults of the plugin arguments.
const (
	DefaultPort           = 36000
	DefaultPortsPerPod    = 20
	DefaultBarrierTimeout = 5 * time.Minute
)

// Mode values of --mode besides the paddleapi modes.
const modeAuto = "auto"

// Heter device values of --heter-device (Paddle's HETER_DEVICE_TYPE).
const heterDeviceAuto = "auto"

// Args are the plugin's arguments, written Volcano-style as flags:
//
//	plugins:
//	  paddle: ["--port=36000", "--gloo=1"]
type Args struct {
	// PServerTask, TrainerTask and HeterTask name the tasks that play each
	// role; empty means the conventions (ps or pserver; worker or trainer;
	// heter).
	PServerTask string
	TrainerTask string
	HeterTask   string
	// Mode is auto, ps, collective or heter-ps.
	Mode string
	// Port is PADDLE_PORT, the first of PortsPerPod consecutive ports each
	// pod may use (TRAINER_PORTS_NUM: one per trainer process of a launcher).
	Port        int
	PortsPerPod int
	// Gloo is PADDLE_WITH_GLOO for parameter-server jobs: 0 off, 1 trainers,
	// 2 trainers and servers. GlooPort is where pserver 0 serves the HTTP
	// store (default: Port+PortsPerPod-2, at least Port+1).
	Gloo     int
	GlooPort int
	// Barrier adds an init container that waits until every peer name
	// resolves; BarrierImage is the paddle-barrier image (barrier.go).
	Barrier        bool
	BarrierImage   string
	BarrierTimeout time.Duration
	// HostNetwork allows tasks whose template uses hostNetwork.
	HostNetwork bool
	// HeterDevice is HETER_DEVICE_TYPE for heter trainers: auto (gpu when
	// the task requests nvidia.com/gpu, else cpu), cpu, gpu or xpu.
	HeterDevice string
	// TrainerCompletesJob: at admission, a PS job whose trainer task has no
	// TaskCompleted policy gets TaskCompleted -> CompleteJob there, so the
	// pservers stop when training ends (defaults.go).
	TrainerCompletesJob bool
	// Checkpointable: the job saves checkpoints and resumes from them, so
	// the scheduler may stop it whole for a gang that starves
	// (preemption.go, defaults.go).
	Checkpointable bool
	// RestartCost: what one preemption of a --checkpointable job costs it
	// (paddleapi.RestartCostAnnotation); 0: paddleapi.DefaultRestartCost.
	RestartCost time.Duration
	// Elastic: elastic collective jobs (elastic.go).
	Elastic ElasticArgs
}

var argsPath = field.NewPath("spec", "plugins", PluginName)

func newFlagSet(a *Args) *flag.FlagSet {
	fs := flag.NewFlagSet(PluginName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.PServerTask, "ps-task", "", "task of the parameter servers (default: ps, else pserver)")
	fs.StringVar(&a.TrainerTask, "trainer-task", "", "task of the trainers (default: worker, else trainer)")
	fs.StringVar(&a.HeterTask, "heter-task", "", "task of the heter trainers (default: heter)")
	fs.StringVar(&a.Mode, "mode", modeAuto, "auto, ps, collective or heter-ps")
	fs.IntVar(&a.Port, "port", DefaultPort, "PADDLE_PORT, first port of each pod's range")
	fs.IntVar(&a.PortsPerPod, "ports-per-pod", DefaultPortsPerPod, "TRAINER_PORTS_NUM, ports each pod may use from --port on")
	fs.IntVar(&a.Gloo, "gloo", 0, "PADDLE_WITH_GLOO for PS jobs: 0, 1 or 2")
	fs.IntVar(&a.GlooPort, "gloo-port", 0, "port of pserver 0's gloo HTTP store (default: port+ports-per-pod-2)")
	fs.BoolVar(&a.Barrier, "barrier", true, "add an init container that waits until every peer name resolves")
	fs.StringVar(&a.BarrierImage, "barrier-image", DefaultBarrierImage, "image of the barrier init container")
	fs.DurationVar(&a.BarrierTimeout, "barrier-timeout", DefaultBarrierTimeout, "how long the barrier waits before failing the pod")
	fs.BoolVar(&a.HostNetwork, "host-network", false, "allow tasks with hostNetwork: true")
	fs.StringVar(&a.HeterDevice, "heter-device", heterDeviceAuto, "HETER_DEVICE_TYPE of heter trainers: auto, cpu, gpu or xpu")
	fs.BoolVar(&a.TrainerCompletesJob, "trainer-completes-job", true, "at admission, give a PS job's trainer task TaskCompleted -> CompleteJob when it has no TaskCompleted policy")
	fs.BoolVar(&a.Checkpointable, "checkpointable", false, "the job resumes from its checkpoints: the scheduler may stop it whole (preempt) for a gang that starves")
	fs.DurationVar(&a.RestartCost, "restart-cost", 0, "with --checkpointable: the run time one preemption costs the job (steps since its last checkpoint, restart); the scheduler stops it only after it ran that long and for a gang that waited that long (default "+paddleapi.DefaultRestartCost.String()+")")
	registerElasticFlags(fs, &a.Elastic)
	refuseRepeatedFlags(fs)
	return fs
}

// parseArgs parses and checks the plugin arguments on their own (checks
// that need the job's tasks are in ValidateJob).
func parseArgs(args []string) (*Args, field.ErrorList) {
	a := &Args{}
	fs := newFlagSet(a)
	if err := fs.Parse(args); err != nil {
		return nil, field.ErrorList{field.Invalid(argsPath, strings.Join(args, " "),
			fmt.Sprintf("%v; valid arguments are %s", err, flagNames(fs)))}
	}
	if fs.NArg() > 0 {
		return nil, field.ErrorList{field.Invalid(argsPath, strings.Join(fs.Args(), " "),
			fmt.Sprintf("unexpected argument %q: arguments are flags like --port=36000 (valid: %s)", fs.Arg(0), flagNames(fs)))}
	}
	return a, a.validate()
}

func flagNames(fs *flag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	return strings.Join(names, ", ")
}

func (a *Args) validate() field.ErrorList {
	var errs field.ErrorList
	switch a.Mode {
	case modeAuto, string(paddleapi.ModePS), string(paddleapi.ModeCollective), string(paddleapi.ModeHeterPS):
	default:
		errs = append(errs, field.NotSupported(argsPath.Key("--mode"), a.Mode,
			[]string{modeAuto, string(paddleapi.ModePS), string(paddleapi.ModeCollective), string(paddleapi.ModeHeterPS)}))
	}
	if a.Port < 1 || a.Port > 65535 {
		errs = append(errs, field.Invalid(argsPath.Key("--port"), a.Port, "must be a port between 1 and 65535"))
	}
	if a.PortsPerPod < 1 {
		errs = append(errs, field.Invalid(argsPath.Key("--ports-per-pod"), a.PortsPerPod,
			"must be at least 1 (a launcher needs one port per trainer process of the pod)"))
	} else if a.Port >= 1 && a.Port+a.PortsPerPod-1 > 65535 {
		errs = append(errs, field.Invalid(argsPath.Key("--ports-per-pod"), a.PortsPerPod,
			fmt.Sprintf("the range --port=%d .. %d goes past 65535; lower --port or --ports-per-pod", a.Port, a.Port+a.PortsPerPod-1)))
	}
	if a.Gloo < 0 || a.Gloo > 2 {
		errs = append(errs, field.NotSupported(argsPath.Key("--gloo"), a.Gloo, []string{"0", "1", "2"}))
	}
	if a.GlooPort != 0 {
		if a.Gloo == 0 {
			errs = append(errs, field.Invalid(argsPath.Key("--gloo-port"), a.GlooPort, "only meaningful with --gloo=1 or --gloo=2"))
		} else if a.GlooPort < a.Port || a.GlooPort >= a.Port+a.PortsPerPod || a.GlooPort == a.Port {
			errs = append(errs, field.Invalid(argsPath.Key("--gloo-port"), a.GlooPort,
				fmt.Sprintf("must lie in the pod's port range %d..%d and differ from --port (it is declared on pserver 0 next to PADDLE_PORT)", a.Port+1, a.Port+a.PortsPerPod-1)))
		}
	} else if a.Gloo > 0 && a.PortsPerPod < 2 {
		errs = append(errs, field.Invalid(argsPath.Key("--ports-per-pod"), a.PortsPerPod,
			"gloo needs a second port for pserver 0's HTTP store; use --ports-per-pod of at least 2"))
	}
	if a.Barrier {
		if strings.TrimSpace(a.BarrierImage) == "" {
			errs = append(errs, field.Required(argsPath.Key("--barrier-image"), "the paddle-barrier image, e.g. "+DefaultBarrierImage))
		}
		if a.BarrierTimeout < time.Second {
			errs = append(errs, field.Invalid(argsPath.Key("--barrier-timeout"), a.BarrierTimeout.String(), "must be at least 1s"))
		}
	}
	switch a.HeterDevice {
	case heterDeviceAuto, "cpu", "gpu", "xpu":
	default:
		errs = append(errs, field.NotSupported(argsPath.Key("--heter-device"), a.HeterDevice, []string{heterDeviceAuto, "cpu", "gpu", "xpu"}))
	}
	errs = append(errs, a.validateRestartCost()...)
	errs = append(errs, a.Elastic.validate()...)
	for _, t := range []struct{ flag, name string }{{"--ps-task", a.PServerTask}, {"--trainer-task", a.TrainerTask}, {"--heter-task", a.HeterTask}} {
		if t.name != "" && strings.TrimSpace(t.name) != t.name {
			errs = append(errs, field.Invalid(argsPath.Key(t.flag), t.name, "must not contain spaces"))
		}
	}
	return errs
}

func (a *Args) validateRestartCost() field.ErrorList {
	path := argsPath.Key("--restart-cost")
	switch {
	case a.RestartCost == 0:
		return nil
	case !a.Checkpointable:
		return field.ErrorList{field.Invalid(path, a.RestartCost.String(), "only meaningful for a job the scheduler may stop: add --checkpointable or drop --restart-cost")}
	case a.RestartCost < 0 || a.RestartCost > paddleapi.MaxRestartCost:
		return field.ErrorList{field.Invalid(path, a.RestartCost.String(),
			fmt.Sprintf("must be a duration above 0 and at most %s (the run time one preemption costs the job, e.g. 10m)", paddleapi.MaxRestartCost))}
	}
	return nil
}

// restartCost is the job's effective --restart-cost.
func (a *Args) restartCost() time.Duration {
	if a.RestartCost > 0 {
		return a.RestartCost
	}
	return paddleapi.DefaultRestartCost
}

// glooPort is the effective gloo HTTP store port.
func (a *Args) glooPort() int {
	if a.GlooPort != 0 {
		return a.GlooPort
	}
	// Port+18 with the default 20 ports, as Paddle's launch examples use;
	// never PADDLE_PORT itself.
	return max(a.Port+1, a.Port+a.PortsPerPod-2)
}

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

// BarrierImageRepository is where `make images` publishes paddle-barrier
// (cmd/paddle-barrier) next to the controller.
const BarrierImageRepository = "ghcr.io/volcano-paddle/paddle-barrier"

// DefaultBarrierImage is the paddle-barrier image of this controller's own
// release (a plain `go build` has no release and takes :latest).
var DefaultBarrierImage = BarrierImageRepository + ":" + barrierImageTag(version.Version)

func barrierImageTag(v string) string {
	if v == "" || v == "devel" {
		return "latest"
	}
	return v
}

// refuseRepeatedFlags makes every flag of fs fail when given a second time.
// Go's flag package keeps the last value silently, so "--port=1 --port=2"
// would hide a mistake in the job.
func refuseRepeatedFlags(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) { f.Value = &onceValue{Value: f.Value} })
}

type onceValue struct {
	flag.Value
	set bool
}

func (v *onceValue) Set(s string) error {
	if v.set {
		return fmt.Errorf("given more than once (first value %q); give each flag once", v.Value.String())
	}
	v.set = true
	return v.Value.Set(s)
}

// IsBoolFlag keeps "--barrier" (without "=true") working for bool flags.
func (v *onceValue) IsBoolFlag() bool {
	b, ok := v.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
