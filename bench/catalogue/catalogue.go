// Package catalogue is what the trace replay runs, as data: the scheduler
// configurations it compares (each with its role, its scheduler file and
// the levers set on it), paddle's variants, the sweeps and the trace
// windows, read from catalogue.yaml, and the bench-only scheduler files
// composed from the fragments in conf/. Both are compiled in, so the bench
// and paddle-replay run away from the repository.
//
// A configuration's scheduler file is built as text and parsed by
// Volcano's own loader, so what Print shows is exactly what a replay runs.
package catalogue

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"volcano.sh/volcano/pkg/scheduler/framework"
)

//go:embed catalogue.yaml conf/*.conf
var embedded embed.FS

// The file the catalogue is read from and the folder of the fragments, as
// the error messages and Print name them.
const (
	sourceFile   = "bench/catalogue/catalogue.yaml"
	fragmentsDir = "bench/catalogue/conf"
)

// Roles of a configuration in a comparison (replay.Role's values).
const (
	RoleStock     = "stock"
	RolePaddle    = "paddle"
	RoleReference = "reference"
	RoleBound     = "bound"
)

// The product scheduler files an entry's file may name; the others are
// composed from the fragments (catalogue.yaml's files).
const (
	FileStock  = "stock"
	FilePaddle = "paddle"
)

// Workloads an entry may be limited to.
const (
	// WorkloadTrace: the trace as it is only.
	WorkloadTrace = "trace"
	// WorkloadFlex: the elastic and checkpoint workload only.
	WorkloadFlex = "flex"
)

// Entry is one configuration of the catalogue: catalogue.yaml says what
// each field means.
type Entry struct {
	Name           string                 `json:"name"`
	Role           string                 `json:"role"`
	Note           string                 `json:"note"`
	File           string                 `json:"file"`
	Workload       string                 `json:"workload,omitempty"`
	RequiresAction string                 `json:"requiresAction,omitempty"`
	Actions        []string               `json:"actions,omitempty"`
	GangAware      bool                   `json:"gangAware,omitempty"`
	SLAWait        string                 `json:"slaWait,omitempty"`
	Args           map[string]interface{} `json:"args,omitempty"`

	PriorityClasses bool `json:"priorityClasses,omitempty"`
	Queues          bool `json:"queues,omitempty"`
	TaskTopology    bool `json:"taskTopology,omitempty"`
	HyperNodes      bool `json:"hyperNodes,omitempty"`
	Remaining       bool `json:"remaining,omitempty"`
}

// slaDefault is the SLAWait of an entry that takes the catalogue's.
const slaDefault = "default"

// composed is a bench-only scheduler file: its actions and, per tier, the
// fragments (conf/NAME.conf) whose plugins it holds in order.
type composed struct {
	Actions []string   `json:"actions"`
	Tiers   [][]string `json:"tiers"`
}

// Sweep is one -sweep: what its page reads; its configurations are
// Catalogue.SweepEntries.
type Sweep struct {
	Name string
	// Out is its run folder under docs/bench.
	Out   string
	About string
	// AdoptMargin > 0: its rule adopts the paddle configuration with the
	// lowest mean ratio only if that is at least this below paddle's.
	AdoptMargin float64
	// PairedVerdicts: its rule reads each variant / paddle, paired by
	// seed, with intervals.
	PairedVerdicts bool
	items          []sweepItem
}

// rawSweep is a sweep as catalogue.yaml writes it.
type rawSweep struct {
	Name           string      `json:"name"`
	Out            string      `json:"out"`
	About          string      `json:"about"`
	AdoptMargin    float64     `json:"adoptMargin,omitempty"`
	PairedVerdicts bool        `json:"pairedVerdicts,omitempty"`
	Items          []sweepItem `json:"configurations"`
}

// sweepItem is a name (of a configuration, variant or group), an entry
// written out, or a series.
type sweepItem struct {
	name   string
	entry  *Entry
	series *series
}

func (s *sweepItem) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &s.name)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if _, ok := probe["series"]; ok {
		var it struct {
			Series *series `json:"series"`
		}
		if err := strict(b, &it); err != nil {
			return err
		}
		s.series = it.Series
		return nil
	}
	s.entry = &Entry{}
	return strict(b, s.entry)
}

// strict decodes JSON refusing keys the target lacks (sigs.k8s.io/yaml's
// strict mode does not reach into a type's own UnmarshalJSON).
func strict(b []byte, v interface{}) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// series sets one lever (slaWait, or arg: a paddle argument) to each value
// in turn on each base.
type series struct {
	Lever  string   `json:"lever,omitempty"`
	Arg    string   `json:"arg,omitempty"`
	Values []string `json:"values"`
	Of     []struct {
		Base string `json:"base"`
		Name string `json:"name"`
		Note string `json:"note"`
	} `json:"of"`
}

// Catalogue is catalogue.yaml, checked.
type Catalogue struct {
	// SLAWait is the sla-waiting-time of the entries that take the
	// default.
	SLAWait time.Duration
	// Windows are the trace windows' parameters.
	Windows Windows
	// Sweeps are the -sweep values, in order.
	Sweeps []Sweep

	composed       map[string]composed
	configurations []Entry
	variants       []Entry
	groups         map[string][]string
	savedRoles     map[string][]string
	// fragments: conf/NAME.conf by NAME.
	fragments map[string]*schedulerFile
}

// rawCatalogue is catalogue.yaml as it is written.
type rawCatalogue struct {
	Files          map[string]composed `json:"files"`
	SLAWait        string              `json:"slaWait"`
	Configurations []Entry             `json:"configurations"`
	Variants       []Entry             `json:"variants"`
	Groups         map[string][]string `json:"groups"`
	Sweeps         []rawSweep          `json:"sweeps"`
	SavedRoles     map[string][]string `json:"savedRoles"`
	Windows        rawWindows          `json:"windows"`
}

// Load reads the catalogue compiled in and checks that every entry can be
// built: its file and fragments exist, its levers apply, the names it uses
// are defined, no two entries share a name. The file is compiled in, so it
// is read and checked once per process (every entry is composed and parsed
// by Volcano's loader); callers share the result and must not change it.
func Load() (*Catalogue, error) { return loadOnce() }

var loadOnce = sync.OnceValues(load)

func load() (*Catalogue, error) {
	raw, err := embedded.ReadFile("catalogue.yaml")
	if err != nil {
		return nil, err
	}
	var rc rawCatalogue
	if err := yaml.UnmarshalStrict(raw, &rc); err != nil {
		return nil, fmt.Errorf("%s: %w", sourceFile, err)
	}
	c := &Catalogue{composed: rc.Files, configurations: rc.Configurations, variants: rc.Variants, groups: rc.Groups, savedRoles: rc.SavedRoles}
	for _, s := range rc.Sweeps {
		c.Sweeps = append(c.Sweeps, Sweep{Name: s.Name, Out: s.Out, About: s.About, AdoptMargin: s.AdoptMargin, PairedVerdicts: s.PairedVerdicts, items: s.Items})
	}
	if err := c.check(rc); err != nil {
		return nil, fmt.Errorf("%s: %w", sourceFile, err)
	}
	return c, nil
}

func (c *Catalogue) check(rc rawCatalogue) error {
	var err error
	if c.SLAWait, err = time.ParseDuration(rc.SLAWait); err != nil || c.SLAWait <= 0 {
		return fmt.Errorf("slaWait %q: want a duration like 1h", rc.SLAWait)
	}
	c.fragments = map[string]*schedulerFile{}
	names, err := embedded.ReadDir("conf")
	if err != nil {
		return err
	}
	for _, n := range names {
		text, err := embedded.ReadFile(path.Join("conf", n.Name()))
		if err != nil {
			return err
		}
		f, err := parseFile(text)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", fragmentsDir, n.Name(), err)
		}
		if len(f.tiers) != 1 || len(f.actions) != 0 {
			return fmt.Errorf("%s/%s: a fragment holds one tier and no actions", fragmentsDir, n.Name())
		}
		c.fragments[strings.TrimSuffix(n.Name(), ".conf")] = f
	}
	for name, f := range c.composed {
		if name == FileStock || name == FilePaddle {
			return fmt.Errorf("files: %s is a product file, not composed here", name)
		}
		for _, tier := range f.Tiers {
			for _, frag := range tier {
				if c.fragments[frag] == nil {
					return fmt.Errorf("files: %s: no fragment %s/%s.conf", name, fragmentsDir, frag)
				}
			}
		}
	}
	for k := range c.variants {
		// A variant is paddle with some arguments changed.
		v := &c.variants[k]
		if v.Role == "" {
			v.Role = RolePaddle
		}
		if v.File == "" {
			v.File = FilePaddle
		}
	}
	seen := map[string]bool{}
	for _, e := range slices.Concat(c.configurations, c.variants) {
		if seen[e.Name] {
			return fmt.Errorf("two entries named %s", e.Name)
		}
		seen[e.Name] = true
		if err := c.checkEntry(e); err != nil {
			return err
		}
	}
	for g, names := range c.groups {
		if seen[g] {
			return fmt.Errorf("group %s has the name of an entry", g)
		}
		for _, n := range names {
			if _, ok := c.named(n); !ok {
				return fmt.Errorf("group %s: no entry %s", g, n)
			}
		}
	}
	for _, s := range c.Sweeps {
		es, err := c.sweepEntries(s)
		if err != nil {
			return fmt.Errorf("sweep %s: %w", s.Name, err)
		}
		for _, e := range es {
			if err := c.checkEntry(e); err != nil {
				return fmt.Errorf("sweep %s: %w", s.Name, err)
			}
		}
		if s.Out == "" {
			return fmt.Errorf("sweep %s: no out folder", s.Name)
		}
	}
	for role, names := range c.savedRoles {
		if !slices.Contains([]string{RoleStock, RolePaddle, RoleReference, RoleBound}, role) {
			return fmt.Errorf("savedRoles: no role %s", role)
		}
		for _, n := range names {
			if _, ok := c.named(n); ok {
				return fmt.Errorf("savedRoles: %s is an entry, its role is its own", n)
			}
		}
	}
	c.Windows, err = rc.Windows.parse()
	return err
}

// checkEntry: e names a role, a file and levers that apply to it (Build
// runs them on a file of that kind; the product files' content is only
// known when Build is given them).
func (c *Catalogue) checkEntry(e Entry) error {
	if e.Name == "" {
		return fmt.Errorf("an entry without a name")
	}
	if !slices.Contains([]string{RoleStock, RolePaddle, RoleReference}, e.Role) {
		return fmt.Errorf("%s: role %q: want %s, %s or %s", e.Name, e.Role, RoleStock, RolePaddle, RoleReference)
	}
	if _, ok := c.composed[e.File]; !ok && e.File != FileStock && e.File != FilePaddle {
		return fmt.Errorf("%s: no file %q", e.Name, e.File)
	}
	if e.Workload != "" && e.Workload != WorkloadTrace && e.Workload != WorkloadFlex {
		return fmt.Errorf("%s: workload %q: want %s, %s or none (both)", e.Name, e.Workload, WorkloadTrace, WorkloadFlex)
	}
	if _, err := c.slaWait(e); err != nil {
		return err
	}
	if strings.TrimSpace(e.Note) == "" {
		return fmt.Errorf("%s: no note (the pages say what every configuration is)", e.Name)
	}
	return nil
}

// slaWait is e's sla-waiting-time (0: no sla plugin).
func (c *Catalogue) slaWait(e Entry) (time.Duration, error) {
	switch e.SLAWait {
	case "":
		return 0, nil
	case slaDefault:
		return c.SLAWait, nil
	}
	d, err := time.ParseDuration(e.SLAWait)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s: slaWait %q: want %s or a duration like 1h", e.Name, e.SLAWait, slaDefault)
	}
	return d, nil
}

// named is the configuration or variant of that name.
func (c *Catalogue) named(name string) (Entry, bool) {
	for _, e := range slices.Concat(c.configurations, c.variants) {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// Lookup is the entry of that name: a configuration, a variant or one a
// sweep makes.
func (c *Catalogue) Lookup(name string) (Entry, bool) {
	if e, ok := c.named(name); ok {
		return e, true
	}
	for _, s := range c.Sweeps {
		es, _ := c.sweepEntries(s)
		for _, e := range es {
			if e.Name == name {
				return e, true
			}
		}
	}
	return Entry{}, false
}

// Names are every entry's name: the configurations, the variants, then
// what each sweep adds, each once.
func (c *Catalogue) Names() []string {
	var out []string
	add := func(es []Entry) {
		for _, e := range es {
			if !slices.Contains(out, e.Name) {
				out = append(out, e.Name)
			}
		}
	}
	add(c.configurations)
	add(c.variants)
	for _, s := range c.Sweeps {
		es, _ := c.sweepEntries(s)
		add(es)
	}
	return out
}

// RoleOf is the role of a configuration a report names (for runs saved
// before reports recorded roles): the entry's, else the savedRoles list's;
// "" when neither knows it.
func (c *Catalogue) RoleOf(name string) string {
	if e, ok := c.Lookup(name); ok {
		return e.Role
	}
	for role, names := range c.savedRoles {
		if slices.Contains(names, name) {
			return role
		}
	}
	return ""
}

// Variants are the paddle variants' names, in the catalogue's order.
func (c *Catalogue) Variants() []string {
	var out []string
	for _, v := range c.variants {
		out = append(out, v.Name)
	}
	return out
}

// SweepNamed is the sweep of that name.
func (c *Catalogue) SweepNamed(name string) (*Sweep, bool) {
	for k := range c.Sweeps {
		if c.Sweeps[k].Name == name {
			return &c.Sweeps[k], true
		}
	}
	return nil, false
}

// SweepNames are the sweeps' names, in the catalogue's order.
func (c *Catalogue) SweepNames() []string {
	var out []string
	for _, s := range c.Sweeps {
		out = append(out, s.Name)
	}
	return out
}

// inBuild: the Volcano this binary is built with has what e requires.
func inBuild(e Entry) bool {
	if e.RequiresAction == "" {
		return true
	}
	_, ok := framework.GetAction(e.RequiresAction)
	return ok
}

// Comparison is what a comparison replays, in order: every configuration
// for the workload (flex: the elastic and checkpoint one) that this build
// can run, then the variants named.
func (c *Catalogue) Comparison(flex bool, variants []string) ([]Entry, error) {
	skip := WorkloadFlex
	if flex {
		skip = WorkloadTrace
	}
	var out []Entry
	for _, e := range c.configurations {
		if e.Workload != skip && inBuild(e) {
			out = append(out, e)
		}
	}
	for _, name := range variants {
		if !slices.Contains(c.Variants(), name) {
			return nil, fmt.Errorf("no paddle variant %q (variants: %s)", name, strings.Join(c.Variants(), ", "))
		}
	}
	for _, v := range c.variants {
		if slices.Contains(variants, v.Name) && inBuild(v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// SweepEntries are a sweep's configurations that this build can run, in
// order.
func (c *Catalogue) SweepEntries(name string) ([]Entry, error) {
	s, ok := c.SweepNamed(name)
	if !ok {
		return nil, fmt.Errorf("no sweep %q (sweeps: %s)", name, strings.Join(c.SweepNames(), ", "))
	}
	es, err := c.sweepEntries(*s)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range es {
		if inBuild(e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// sweepEntries are a sweep's configurations, whatever the build.
func (c *Catalogue) sweepEntries(s Sweep) ([]Entry, error) {
	var out []Entry
	for _, it := range s.items {
		switch {
		case it.entry != nil:
			out = append(out, *it.entry)
		case it.series != nil:
			es, err := c.seriesEntries(*it.series)
			if err != nil {
				return nil, err
			}
			out = append(out, es...)
		case c.groups[it.name] != nil:
			for _, n := range c.groups[it.name] {
				e, _ := c.named(n)
				out = append(out, e)
			}
		default:
			e, ok := c.named(it.name)
			if !ok {
				return nil, fmt.Errorf("no configuration, variant or group %q", it.name)
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// seriesEntries: for each value, each base with the lever set to it.
func (c *Catalogue) seriesEntries(s series) ([]Entry, error) {
	if (s.Lever == "") == (s.Arg == "") || (s.Lever != "" && s.Lever != "slaWait") {
		return nil, fmt.Errorf("a series sets lever: slaWait or arg: a paddle argument")
	}
	var out []Entry
	for _, v := range s.Values {
		for _, of := range s.Of {
			e, ok := c.named(of.Base)
			if !ok {
				return nil, fmt.Errorf("series: no base %q", of.Base)
			}
			e.Name, e.Note = strings.ReplaceAll(of.Name, "{value}", v), strings.ReplaceAll(of.Note, "{value}", v)
			if s.Lever != "" {
				e.SLAWait = v
			} else {
				args := map[string]interface{}{}
				for k, x := range e.Args {
					args[k] = x
				}
				args[s.Arg] = v
				e.Args = args
			}
			out = append(out, e)
		}
	}
	return out, nil
}
