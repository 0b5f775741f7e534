package volcanorelease

import (
	goflag "flag"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
)

// NewFlagSet is an empty flag set shaped as a Volcano main's command line is
// once cliflag.InitFlags ran: word separators normalised and klog's flags
// (-v, --logtostderr, ...) added. A test registers a main's own flags on it
// and parses the args a release starts that main with.
func NewFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	klogFlags := goflag.NewFlagSet(name, goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	InitKlog(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	return fs
}

// ParseArgs parses args as the main would and checks that every flag in
// them was set. pflag parses on past a plain argument such as the
// manifests' trailing "2>&1", which the mains ignore.
func ParseArgs(fs *pflag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, name := range FlagNames(args) {
		if !fs.Changed(name) {
			return fmt.Errorf("flag --%s was given but not parsed", name)
		}
	}
	return nil
}

// FlagNames are the names of the flags in args, without dashes or values.
func FlagNames(args []string) []string {
	var names []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name := strings.TrimLeft(a, "-")
		if i := strings.IndexByte(name, '='); i >= 0 {
			name = name[:i]
		}
		names = append(names, name)
	}
	return names
}

// ChartArgs are the args the Helm chart's template of the component passes
// with every optional flag switched on: one per flag the template names, with
// the value values gives it ("" for a bare boolean such as --logtostderr).
// A flag of the chart that values lacks is an error, so a new release's new
// flag cannot go unnoticed.
func (c Component) ChartArgs(values map[string]string) ([]string, error) {
	names, err := c.ChartFlags()
	if err != nil {
		return nil, err
	}
	var args, missing []string
	for _, n := range names {
		v, ok := values[n]
		if !ok {
			missing = append(missing, n)
			continue
		}
		dash := "--"
		if len(n) == 1 {
			dash = "-"
		}
		if v == "" {
			args = append(args, dash+n)
		} else {
			args = append(args, dash+n+"="+v)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the Helm chart's %s passes %s, which the test's values lack: add an example value (see the chart's values.yaml)", c.Template, strings.Join(missing, ", "))
	}
	return args, nil
}

// ArgList is one way a release starts a component: its args and the file of
// the Volcano module they come from.
type ArgList struct {
	Source string
	Args   []string
}

// ReleaseArgLists are the args the embedded release's manifest and Helm chart
// (with chartValues, see ChartArgs) start the component with.
func (c Component) ReleaseArgLists(chartValues map[string]string) ([]ArgList, error) {
	manifest, err := c.ManifestArgs()
	if err != nil {
		return nil, err
	}
	chart, err := c.ChartArgs(chartValues)
	if err != nil {
		return nil, err
	}
	return []ArgList{
		{Source: ReleaseManifest, Args: manifest},
		{Source: ChartTemplates + "/" + c.Template, Args: chart},
	}, nil
}
