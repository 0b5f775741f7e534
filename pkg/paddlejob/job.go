package paddlejob

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// Spec is a job's paddle plugin arguments parsed once: Args, and the
// errors that reject the job (Args is nil when the flags do not parse,
// set when only their values are refused). Callers keep the one value
// instead of parsing the arguments again where they need them.
type Spec struct {
	Args *Args
	Errs field.ErrorList
}

// Read parses the job's plugin arguments; ok is false for a job that does
// not use the plugin.
func Read(job *batch.Job) (s Spec, ok bool) {
	raw, ok := job.Spec.Plugins[PluginName]
	if !ok {
		return Spec{}, false
	}
	return ReadArgs(raw), true
}

// ReadArgs parses plugin arguments given apart from their job, as Volcano
// hands them to a job plugin's builder.
func ReadArgs(raw []string) Spec {
	a, errs := parseArgs(raw)
	return Spec{Args: a, Errs: errs}
}

// Elastic says the arguments parsed and declare an elastic job (without
// validating the job).
func (s Spec) Elastic() bool { return s.Args != nil && len(s.Errs) == 0 && s.Args.Elastic.Enabled() }
