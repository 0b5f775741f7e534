package replay

import (
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
	"github.com/volcano-paddle/volcano-paddle/bench/catalogue/catalogtest"
	"github.com/volcano-paddle/volcano-paddle/pkg/scheduler/plugins/paddle"
)

// built is an entry as the bench replays it.
func built(t *testing.T, e catalogue.Entry, flex bool) Config {
	t.Helper()
	cat, files := catalogtest.Load(t), catalogtest.Files(t)
	c, err := cat.Build(e, files, flex)
	if err != nil {
		t.Fatal(err)
	}
	return ConfigOf(c)
}

// entry is the catalogue's entry of that name.
func entry(t *testing.T, name string) catalogue.Entry {
	t.Helper()
	cat := catalogtest.Load(t)
	e, ok := cat.Lookup(name)
	if !ok {
		t.Fatalf("no entry %s in the catalogue", name)
	}
	return e
}

// stockConfigs are the stock configurations a comparison of the trace as
// it is replays, the sla ones with slaWait (0: the catalogue's).
func stockConfigs(t *testing.T, slaWait time.Duration) []Config {
	t.Helper()
	cat := catalogtest.Load(t)
	es, err := cat.Comparison(false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []Config
	for _, e := range es {
		if e.Role != catalogue.RoleStock {
			continue
		}
		if e.SLAWait != "" && slaWait > 0 {
			e.SLAWait = slaWait.String()
		}
		out = append(out, built(t, e, false))
	}
	return out
}

// paddleConfig is deploy/paddle's configuration.
func paddleConfig(t *testing.T) Config {
	t.Helper()
	return built(t, entry(t, Paddle), false)
}

// paddleFlexConfig is deploy/paddle's configuration for the Flex workload.
func paddleFlexConfig(t *testing.T) Config {
	t.Helper()
	return built(t, entry(t, Paddle), true)
}

// referenceConfig is the clairvoyant reference.
func referenceConfig(t *testing.T) Config {
	t.Helper()
	return built(t, entry(t, Clairvoyant), false)
}

// WithPaddleArgs is a paddle configuration with some plugin arguments
// changed, under another name (the catalogue's variants, for a
// configuration a test changed further).
func WithPaddleArgs(c Config, name, note string, args map[string]interface{}) Config {
	sc := *c.Sched
	sc.Name, sc.Tiers = name, paddle.WithArgs(c.Sched.Tiers, args)
	c.Sched, c.Note = &sc, note
	return c
}
