package catalogue

import (
	"fmt"
	"os"
	"strings"

	"github.com/volcano-paddle/volcano-paddle/bench/simsched"
	"github.com/volcano-paddle/volcano-paddle/harness/localcluster"
	"github.com/volcano-paddle/volcano-paddle/internal/volcanorelease"
)

// Files are the product scheduler files an entry's file may name, and
// where they were read.
type Files struct {
	// Stock is Volcano's Helm chart default, Paddle deploy/paddle's file.
	Stock, Paddle         []byte
	StockFrom, PaddleFrom string
}

// RepoFiles reads them as the bench does: the Helm chart's file of the
// Volcano module this binary is built with, deploy/paddle's from the
// repository.
func RepoFiles() (Files, error) {
	stockPath, paddlePath, err := localcluster.SchedulerConfs()
	if err != nil {
		return Files{}, err
	}
	f := Files{StockFrom: "Volcano " + volcanorelease.Version() + "'s Helm chart default (" + stockPath + ")", PaddleFrom: "deploy/paddle/volcano-scheduler.conf"}
	if f.Stock, err = os.ReadFile(stockPath); err != nil {
		return Files{}, err
	}
	if f.Paddle, err = os.ReadFile(paddlePath); err != nil {
		return Files{}, err
	}
	return f, nil
}

// Configuration is an entry built: its note as the pages give it, the
// scheduler configuration it runs (Text) and that text parsed by Volcano's
// loader (Sched).
type Configuration struct {
	Entry
	// Flex: built for the elastic and checkpoint workload.
	Flex  bool
	Text  string
	Sched *simsched.Config
	// steps say how the text was put together, for Print.
	steps []string
}

// Build is the configuration an entry describes, on these product files,
// for the elastic and checkpoint workload if flex.
func (c *Catalogue) Build(e Entry, f Files, flex bool) (Configuration, error) {
	if !inBuild(e) {
		return Configuration{}, fmt.Errorf("%s needs Volcano's %s action, which Volcano %s lacks", e.Name, e.RequiresAction, volcanorelease.Version())
	}
	if err := c.checkEntry(e); err != nil {
		return Configuration{}, err
	}
	out := Configuration{Entry: e, Flex: flex}
	var file *schedulerFile
	var err error
	switch e.File {
	case FileStock:
		file, err = parseFile(f.Stock)
		out.steps = append(out.steps, "file: "+f.StockFrom)
	case FilePaddle:
		file, err = parseFile(f.Paddle)
		out.steps = append(out.steps, "file: "+f.PaddleFrom)
	default:
		file, err = c.compose(e.File)
		out.steps = append(out.steps, "file: "+c.describeComposed(e.File))
	}
	if err != nil {
		return Configuration{}, fmt.Errorf("%s: file %s: %w", e.Name, e.File, err)
	}
	if len(e.Actions) > 0 {
		if err := file.addAfterAllocate(e.Actions); err != nil {
			return Configuration{}, fmt.Errorf("%s: %w", e.Name, err)
		}
		out.steps = append(out.steps, "actions: "+strings.Join(e.Actions, ", ")+" after allocate where absent")
	}
	if e.GangAware {
		file.gangAware()
		out.steps = append(out.steps, "gangAware: gangpreempt and gangreclaim in place of preempt and reclaim")
	}
	wait, err := c.slaWait(e)
	if err != nil {
		return Configuration{}, err
	}
	if wait > 0 {
		if err := file.withSLA(wait); err != nil {
			return Configuration{}, fmt.Errorf("%s: %w", e.Name, err)
		}
		out.steps = append(out.steps, "slaWait: the sla plugin before conformance, sla-waiting-time "+DurationArg(wait))
	}
	if len(e.Args) > 0 {
		if err := file.withArgs(e.Args); err != nil {
			return Configuration{}, fmt.Errorf("%s: %w", e.Name, err)
		}
		var set []string
		for _, k := range sortedKeys(e.Args) {
			v, _ := scalar(e.Args[k])
			set = append(set, k+": "+v)
		}
		out.steps = append(out.steps, "args: "+strings.Join(set, ", "))
	}
	out.Note = strings.ReplaceAll(e.Note, "{slaWait}", DurationArg(wait))
	if flex {
		how := file.forFlex()
		out.Note += "; preempt and reclaim actions, " + how
		out.steps = append(out.steps, "the elastic and checkpoint workload: preempt and reclaim after allocate where absent, "+how)
	}
	if out.Text, err = file.text(); err != nil {
		return Configuration{}, fmt.Errorf("%s: %w", e.Name, err)
	}
	if out.Sched, err = simsched.ParseConfig(e.Name, out.Text); err != nil {
		return Configuration{}, err
	}
	return out, nil
}

// compose is a bench-only file: its actions, each tier the plugins of its
// fragments in order.
func (c *Catalogue) compose(name string) (*schedulerFile, error) {
	spec, ok := c.composed[name]
	if !ok {
		return nil, fmt.Errorf("no file %s", name)
	}
	out := &schedulerFile{actions: append([]string(nil), spec.Actions...)}
	for _, tier := range spec.Tiers {
		var plugins []plugin
		for _, frag := range tier {
			for _, p := range c.fragments[frag].tiers[0] {
				plugins = append(plugins, p.clone())
			}
		}
		out.tiers = append(out.tiers, plugins)
	}
	return out, nil
}

func (c *Catalogue) describeComposed(name string) string {
	spec := c.composed[name]
	var tiers []string
	for k, tier := range spec.Tiers {
		var fs []string
		for _, frag := range tier {
			fs = append(fs, frag+".conf")
		}
		tiers = append(tiers, fmt.Sprintf("tier %d %s", k+1, strings.Join(fs, " + ")))
	}
	return fmt.Sprintf("%s, composed from %s: %s", name, fragmentsDir, strings.Join(tiers, "; "))
}

// Print is the configuration as one Volcano scheduler configuration file,
// headed by comments saying what it is, how it was put together and what
// the replay does for it besides the file.
func (c Configuration) Print() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s (role %s): %s\n", c.Name, c.Role, c.Note)
	for _, s := range c.steps {
		fmt.Fprintf(&b, "# %s\n", s)
	}
	for _, s := range c.replayLevers() {
		fmt.Fprintf(&b, "# the replay: %s\n", s)
	}
	b.WriteString(c.Text)
	return b.String()
}

// replayLevers say what the replay does for the configuration besides its
// scheduler file.
func (c Configuration) replayLevers() []string {
	var out []string
	if c.PriorityClasses {
		out = append(out, "a PriorityClass per GPU count (gpus-le-1, gpus-le-2, gpus-le-4, ... fewer GPUs higher), named by every PodGroup")
	}
	if c.Queues {
		out = append(out, "a queue per virtual cluster of the trace, weighted by its share of the 30 days before the window")
	}
	if c.TaskTopology {
		out = append(out, "task-topology's PodGroup annotations (PS jobs ps,worker; collective jobs trainer)")
	}
	if c.HyperNodes {
		out = append(out, "the racks as HyperNodes, every PodGroup hard-limited to tier 2")
	}
	if c.Remaining {
		out = append(out, "every job's remaining GPU-seconds on its PodGroup before each cycle")
	}
	return out
}

// Print builds the entry of that name (flex: for the elastic and
// checkpoint workload; an entry replayed only with it is built so
// anyway) and prints it.
func (c *Catalogue) Print(name string, f Files, flex bool) (string, error) {
	e, ok := c.Lookup(name)
	if !ok {
		return "", fmt.Errorf("no configuration %q in %s (%s)", name, sourceFile, strings.Join(c.Names(), ", "))
	}
	if flex && e.Workload == WorkloadTrace {
		return "", fmt.Errorf("%s is replayed only with the trace as it is", name)
	}
	built, err := c.Build(e, f, flex || e.Workload == WorkloadFlex)
	if err != nil {
		return "", err
	}
	return built.Print(), nil
}
