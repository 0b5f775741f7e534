package catalogue

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// schedulerFile is a Volcano scheduler configuration as its file says it:
// the levers edit it, then it is written out (text) and parsed by
// Volcano's own loader, so the text printed is the text that runs.
type schedulerFile struct {
	actions []string
	tiers   [][]plugin
}

// plugin is one plugin of a tier: its name, the enable* switches its file
// sets (Volcano defaults the others to true) and its arguments.
type plugin struct {
	name  string
	flags map[string]bool
	args  map[string]interface{}
}

// rawFile and rawPlugin are the YAML of a scheduler configuration as
// sigs.k8s.io/yaml decodes it; a plugin's keys other than name and
// arguments are its enable* switches.
type rawFile struct {
	Actions string `json:"actions"`
	Tiers   []struct {
		Plugins []map[string]interface{} `json:"plugins"`
	} `json:"tiers"`
}

// parseFile reads a scheduler configuration. Keys Volcano would read that
// this model does not carry (configurations, metrics) are refused rather
// than dropped.
func parseFile(text []byte) (*schedulerFile, error) {
	var raw rawFile
	if err := yaml.UnmarshalStrict(text, &raw); err != nil {
		return nil, err
	}
	f := &schedulerFile{}
	for _, a := range strings.Split(raw.Actions, ",") {
		if a = strings.TrimSpace(a); a != "" {
			f.actions = append(f.actions, a)
		}
	}
	for _, t := range raw.Tiers {
		var tier []plugin
		for _, p := range t.Plugins {
			pl := plugin{flags: map[string]bool{}, args: map[string]interface{}{}}
			for k, v := range p {
				switch k {
				case "name":
					pl.name, _ = v.(string)
				case "arguments":
					args, ok := v.(map[string]interface{})
					if !ok && v != nil {
						return nil, fmt.Errorf("plugin %v: arguments are not a map", p["name"])
					}
					for a, x := range args {
						switch x.(type) {
						case string, bool, float64:
						default:
							return nil, fmt.Errorf("plugin %v: argument %s is not a string, number or boolean", p["name"], a)
						}
						pl.args[a] = x
					}
				default:
					b, ok := v.(bool)
					if !ok {
						return nil, fmt.Errorf("plugin %v: %s is not true or false", p["name"], k)
					}
					pl.flags[k] = b
				}
			}
			if pl.name == "" {
				return nil, fmt.Errorf("a plugin without a name")
			}
			tier = append(tier, pl)
		}
		f.tiers = append(f.tiers, tier)
	}
	return f, nil
}

func (p plugin) clone() plugin {
	out := plugin{name: p.name, flags: make(map[string]bool, len(p.flags)), args: make(map[string]interface{}, len(p.args))}
	for k, v := range p.flags {
		out.flags[k] = v
	}
	for k, v := range p.args {
		out.args[k] = v
	}
	return out
}

func (f *schedulerFile) clone() *schedulerFile {
	out := &schedulerFile{actions: slices.Clone(f.actions)}
	for _, t := range f.tiers {
		var nt []plugin
		for _, p := range t {
			nt = append(nt, p.clone())
		}
		out.tiers = append(out.tiers, nt)
	}
	return out
}

// evictingActions are the actions that evict running pods (Volcano v1.15's
// gang-aware ones included).
var evictingActions = []string{"preempt", "reclaim", "gangpreempt", "gangreclaim"}

// evicts: the file runs an action that evicts, so its tiers already say
// which plugins choose victims.
func (f *schedulerFile) evicts() bool {
	return slices.ContainsFunc(f.actions, func(a string) bool { return slices.Contains(evictingActions, a) })
}

// addAfterAllocate puts the actions the file lacks right after allocate,
// in the order given.
func (f *schedulerFile) addAfterAllocate(actions []string) error {
	k := slices.Index(f.actions, "allocate") + 1
	if k == 0 {
		return fmt.Errorf("no allocate action to put %s after", strings.Join(actions, ", "))
	}
	for _, a := range actions {
		if !slices.Contains(f.actions, a) {
			f.actions = slices.Insert(f.actions, k, a)
			k++
		}
	}
	return nil
}

// gangAware puts Volcano v1.15's gang-aware actions in place of preempt
// and reclaim.
func (f *schedulerFile) gangAware() {
	for k, a := range f.actions {
		switch a {
		case "preempt":
			f.actions[k] = "gangpreempt"
		case "reclaim":
			f.actions[k] = "gangreclaim"
		}
	}
}

// withSLA puts Volcano's sla plugin before conformance in the tier that
// has it.
func (f *schedulerFile) withSLA(wait time.Duration) error {
	for t, tier := range f.tiers {
		if k := slices.IndexFunc(tier, func(p plugin) bool { return p.name == "conformance" }); k >= 0 {
			sla := plugin{name: "sla", flags: map[string]bool{}, args: map[string]interface{}{"sla-waiting-time": DurationArg(wait)}}
			f.tiers[t] = slices.Insert(tier, k, sla)
			return nil
		}
	}
	return fmt.Errorf("no conformance plugin to put sla before")
}

// withArgs sets arguments of the paddle plugin.
func (f *schedulerFile) withArgs(args map[string]interface{}) error {
	found := false
	for _, tier := range f.tiers {
		for _, p := range tier {
			if p.name == paddlePlugin {
				for k, v := range args {
					p.args[k] = v
				}
				found = true
			}
		}
	}
	if !found {
		return fmt.Errorf("no %s plugin to set %d arguments of", paddlePlugin, len(args))
	}
	return nil
}

// paddlePlugin is the paddle scheduler plugin's name
// (pkg/scheduler/plugins/paddle).
const paddlePlugin = "paddle"

// flexActions are what a configuration needs to use elastic and
// checkpointable jobs: preempt (a waiting job of higher priority evicts
// preemptable pods of its queue) and reclaim (across queues).
var flexActions = []string{"preempt", "reclaim"}

// forFlex is the file as it must be to use elastic and checkpointable
// jobs: the flex actions it lacks after its allocate (at the end without
// one), and gang's enablePreemptable on, so that gang offers pods above a
// job's minAvailable as victims (gang never takes a job below it). A file
// that already evicts chose its victim plugins itself and keeps its tiers.
// It says which of the two it did.
func (f *schedulerFile) forFlex() string {
	evicted := f.evicts()
	var missing []string
	for _, a := range flexActions {
		if !slices.Contains(f.actions, a) {
			missing = append(missing, a)
		}
	}
	k := slices.Index(f.actions, "allocate") + 1
	if k == 0 {
		k = len(f.actions)
	}
	f.actions = slices.Insert(f.actions, k, missing...)
	if evicted {
		return "victims as its configuration chooses them"
	}
	for _, tier := range f.tiers {
		for _, p := range tier {
			if p.name == "gang" {
				p.flags["enablePreemptable"] = true
			}
		}
	}
	return "gang enablePreemptable"
}

// text writes the file as Volcano reads it: plugins by name first, then
// their switches and arguments in key order.
func (f *schedulerFile) text() (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "actions: %q\ntiers:\n", strings.Join(f.actions, ", "))
	for _, tier := range f.tiers {
		b.WriteString("- plugins:\n")
		for _, p := range tier {
			name, err := scalar(p.name)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "  - name: %s\n", name)
			for _, k := range sortedKeys(p.flags) {
				fmt.Fprintf(&b, "    %s: %t\n", k, p.flags[k])
			}
			if len(p.args) == 0 {
				continue
			}
			b.WriteString("    arguments:\n")
			for _, k := range sortedKeys(p.args) {
				key, err := scalar(k)
				if err != nil {
					return "", err
				}
				v, err := scalar(p.args[k])
				if err != nil {
					return "", fmt.Errorf("%s: %s: %w", p.name, k, err)
				}
				fmt.Fprintf(&b, "      %s: %s\n", key, v)
			}
		}
	}
	return b.String(), nil
}

// scalar writes a value so that YAML reads it back as the same value and
// type: whole numbers as integers (as a file would write them), strings
// plain where that reads back as the same string, else quoted.
func scalar(v interface{}) (string, error) {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x), nil
	case int:
		return strconv.Itoa(x), nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10), nil
		}
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case string:
		for _, r := range x {
			if r < ' ' || r > '~' {
				return "", fmt.Errorf("%q: only printable ASCII is written", x)
			}
		}
		var back interface{}
		if plainSafe(x) && yaml.Unmarshal([]byte(x), &back) == nil && back == x {
			return x, nil
		}
		return strconv.Quote(x), nil
	}
	return "", fmt.Errorf("%v: not a string, number or boolean", v)
}

// plainSafe: s has none of the characters that can make a plain YAML
// scalar mean something else (comments, mappings, flow collections).
func plainSafe(s string) bool {
	if s == "" || strings.TrimSpace(s) != s {
		return false
	}
	return !strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`") && !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "?")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// DurationArg writes d as an operator would in a configuration (2h, 30m,
// 1h30m).
func DurationArg(d time.Duration) string {
	s := d.String() // 2h0m0s, 30m0s, 1h30m0s
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
