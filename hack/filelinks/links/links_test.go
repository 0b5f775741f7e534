package links

import (
	"reflect"
	"testing"
)

func TestRingFixture(t *testing.T) {
	gs, err := Load(false, "./testdata/ring")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 {
		t.Fatalf("got %d packages, want 1", len(gs))
	}
	g := gs[0]
	wantLinks := map[string]map[string]bool{
		"a.go": {"b.go": true},
		"b.go": {"c.go": true},
		"c.go": {"a.go": true},
		"d.go": {"a.go": true, "c.go": true},
	}
	if !reflect.DeepEqual(g.Links, wantLinks) {
		t.Errorf("links = %v, want %v", g.Links, wantLinks)
	}
	if got, want := g.Cycles(), [][]string{{"a.go", "b.go", "c.go"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("cycles = %v, want %v", got, want)
	}
	if got := g.TwoWay(); len(got) != 0 {
		t.Errorf("two-way pairs = %v, want none", got)
	}
	if got, want := g.Exported, []string{"A", "D", "D.Twice", "E"}; !reflect.DeepEqual(got, want) {
		t.Errorf("exported = %v, want %v", got, want)
	}
}

// pkg/paddlejob's files form layers: none uses a file that uses it back,
// directly (a two-way pair) or round a longer cycle.
func TestPaddlejobIsLayered(t *testing.T) {
	gs, err := Load(false, "github.com/volcano-paddle/volcano-paddle/pkg/paddlejob")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 {
		t.Fatalf("got %d packages, want 1", len(gs))
	}
	g := gs[0]
	for _, p := range g.TwoWay() {
		t.Errorf("%s and %s use each other", p[0], p[1])
	}
	for _, c := range g.Cycles() {
		t.Errorf("cycle: %v", c)
	}
}
