package volcanorelease

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Where a Volcano release says how its components are started, relative to
// the module folder.
const (
	// ReleaseManifest is the rendered install manifest of the release
	// (`kubectl apply -f` of the tag's installer/volcano-development.yaml).
	ReleaseManifest = "installer/volcano-development.yaml"
	// ChartTemplates holds the Helm chart's templates; their args carry
	// the optional flags a values file can switch on.
	ChartTemplates = "installer/helm/chart/volcano/templates"
)

// The Volcano components our three binaries replace: the container name in
// the release manifest and the chart template that starts it.
var (
	Scheduler         = Component{Container: "volcano-scheduler", Template: "scheduler.yaml"}
	ControllerManager = Component{Container: "volcano-controllers", Template: "controllers.yaml"}
	WebhookManager    = Component{Container: "admission", Template: "admission.yaml"}
)

// Component is one Volcano binary as its release starts it.
type Component struct {
	Container string
	Template  string
}

// ManifestArgs are the container args the release manifest starts the
// component with, in order.
func (c Component) ManifestArgs() ([]string, error) {
	dir, err := ModuleDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ReleaseManifest)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj struct {
			Kind string `json:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Name string   `json:"name"`
							Args []string `json:"args"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%s has no Deployment container %q", path, c.Container)
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if obj.Kind != "Deployment" {
			continue
		}
		for _, ctr := range obj.Spec.Template.Spec.Containers {
			if ctr.Name == c.Container {
				return ctr.Args, nil
			}
		}
	}
}

// ChartFlags are the names of every flag the Helm chart's template of the
// component may pass (the values file switches some on), without dashes and
// in template order. The template is Go-template YAML, so it is read as text:
// the list items of the one `args:` block.
func (c Component) ChartFlags() ([]string, error) {
	dir, err := ModuleDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ChartTemplates, c.Template)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		names      []string
		blocks     int
		argsIndent = -1
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		switch {
		case trimmed == "args:" || trimmed == "- args:":
			blocks++
			argsIndent = indent
			if trimmed == "- args:" {
				// The container's first key: its siblings sit two further in.
				argsIndent += 2
			}
		case argsIndent < 0 || trimmed == "" || strings.HasPrefix(trimmed, "{{"):
			// Outside the block, or a template directive inside it.
		case indent <= argsIndent:
			argsIndent = -1
		case strings.HasPrefix(trimmed, "- -"):
			flag := strings.TrimLeft(strings.TrimPrefix(trimmed, "- "), "-")
			if i := strings.IndexByte(flag, '='); i >= 0 {
				flag = flag[:i]
			}
			names = append(names, flag)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if blocks != 1 || len(names) == 0 {
		return nil, fmt.Errorf("%s: want one args block with flags, found %d blocks and %d flags", path, blocks, len(names))
	}
	return names, nil
}
