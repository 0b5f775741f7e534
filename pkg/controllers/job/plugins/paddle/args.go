package paddle

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
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
	// pservers stop when training ends (mutate.go).
	TrainerCompletesJob bool
	// Checkpointable: the job saves checkpoints and resumes from them, so
	// the scheduler may stop it whole for a gang that starves
	// (preemption.go).
	Checkpointable bool
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
	registerElasticFlags(fs, &a.Elastic) // elastic.go
	refuseRepeatedFlags(fs)              // limits.go
	return fs
}

// ParseArgs parses and checks the plugin arguments on their own (checks
// that need the job's tasks are in ValidateJob).
func ParseArgs(args []string) (*Args, field.ErrorList) {
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
	errs = append(errs, a.Elastic.validate()...) // elastic.go
	for _, t := range []struct{ flag, name string }{{"--ps-task", a.PServerTask}, {"--trainer-task", a.TrainerTask}, {"--heter-task", a.HeterTask}} {
		if t.name != "" && strings.TrimSpace(t.name) != t.name {
			errs = append(errs, field.Invalid(argsPath.Key(t.flag), t.name, "must not contain spaces"))
		}
	}
	return errs
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
