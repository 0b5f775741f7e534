// Package links computes which files of a Go package use names declared in
// which others (see hack/filelinks).
package links

import (
	"fmt"
	"go/ast"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Graph is one package's files and the links between them, by base name.
type Graph struct {
	Package  string
	Files    []string
	Links    map[string]map[string]bool
	Exported []string
}

// PackagesConfig is a go/packages configuration that loads in this
// module's build, the Volcano v1.15.1 one included: go/packages probes the
// Go version with GO111MODULE=off, where the go command refuses a -modfile
// in GOFLAGS, so that one is passed as a build flag instead.
func PackagesConfig(mode packages.LoadMode) *packages.Config {
	cfg := &packages.Config{Mode: mode}
	var goflags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if strings.HasPrefix(f, "-modfile=") {
			cfg.BuildFlags = append(cfg.BuildFlags, f)
		} else {
			goflags = append(goflags, f)
		}
	}
	cfg.Env = append(os.Environ(), "GOFLAGS="+strings.Join(goflags, " "))
	return cfg
}

// Load type-checks the packages (with their _test.go files when tests is
// set; an external _test package is left out) and returns their graphs.
func Load(tests bool, patterns ...string) ([]*Graph, error) {
	cfg := PackagesConfig(packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo)
	cfg.Tests = tests
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	var out []*Graph
	seen := map[string]bool{}
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			return nil, fmt.Errorf("%s: %v", p.PkgPath, p.Errors[0])
		}
		// With tests, go/packages returns the plain package, the package
		// with its tests, the external test package and the test main: keep
		// one per import path, the one with the most files of its own path.
		if p.Name == "main" && len(p.GoFiles) > 0 && filepath.Base(p.GoFiles[0]) == "_testmain.go" {
			continue
		}
		if tests && !containsTestFile(p) && hasTestVariant(pkgs, p) {
			continue
		}
		if p.Types == nil || seen[p.Types.Path()+p.Name] {
			continue
		}
		if tests && len(p.Name) > 5 && p.Name[len(p.Name)-5:] == "_test" {
			continue
		}
		seen[p.Types.Path()+p.Name] = true
		out = append(out, build(p))
	}
	return out, nil
}

func containsTestFile(p *packages.Package) bool {
	for _, f := range p.GoFiles {
		if len(f) > 8 && f[len(f)-8:] == "_test.go" {
			return true
		}
	}
	return false
}

func hasTestVariant(all []*packages.Package, p *packages.Package) bool {
	for _, q := range all {
		if q != p && q.PkgPath == p.PkgPath && q.Name == p.Name && containsTestFile(q) {
			return true
		}
	}
	return false
}

func build(p *packages.Package) *Graph {
	g := &Graph{Package: p.PkgPath, Links: map[string]map[string]bool{}}
	fset := p.Fset
	declFile := func(obj types.Object) string {
		return filepath.Base(fset.Position(obj.Pos()).Filename)
	}
	// ours reports whether obj is a package-level name of p or a method of
	// one of its types (fields are left out: a struct's fields live with it).
	ours := func(obj types.Object) bool {
		if obj == nil || obj.Pkg() != p.Types || !obj.Pos().IsValid() {
			return false
		}
		if obj.Parent() == p.Types.Scope() {
			return true
		}
		if fn, ok := obj.(*types.Func); ok {
			if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
				return true
			}
		}
		return false
	}
	for _, f := range p.Syntax {
		name := filepath.Base(fset.Position(f.Pos()).Filename)
		g.Files = append(g.Files, name)
		ast.Inspect(f, func(n ast.Node) bool {
			id, ok := n.(*ast.Ident)
			if !ok {
				return true
			}
			obj := p.TypesInfo.Uses[id]
			if !ours(obj) {
				return true
			}
			if to := declFile(obj); to != name {
				if g.Links[name] == nil {
					g.Links[name] = map[string]bool{}
				}
				g.Links[name][to] = true
			}
			return true
		})
	}
	sort.Strings(g.Files)
	scope := p.Types.Scope()
	for _, n := range scope.Names() {
		if obj := scope.Lookup(n); obj.Exported() {
			g.Exported = append(g.Exported, n)
			if tn, ok := obj.(*types.TypeName); ok {
				if named, ok := tn.Type().(*types.Named); ok {
					for i := 0; i < named.NumMethods(); i++ {
						if m := named.Method(i); m.Exported() {
							g.Exported = append(g.Exported, n+"."+m.Name())
						}
					}
				}
			}
		}
	}
	return g
}

// LinkCount is the number of (from, to) file pairs with a use.
func (g *Graph) LinkCount() int {
	n := 0
	for _, to := range g.Links {
		n += len(to)
	}
	return n
}

// TwoWay lists the pairs of files that use each other, sorted.
func (g *Graph) TwoWay() [][2]string {
	var out [][2]string
	for a, to := range g.Links {
		for b := range to {
			if a < b && g.Links[b][a] {
				out = append(out, [2]string{a, b})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0] != out[j][0] {
			return out[i][0] < out[j][0]
		}
		return out[i][1] < out[j][1]
	})
	return out
}

// Cycles lists the strongly connected groups of more than one file (Tarjan),
// each sorted; a layered package has none.
func (g *Graph) Cycles() [][]string {
	index := map[string]int{}
	low := map[string]int{}
	on := map[string]bool{}
	var stack []string
	var out [][]string
	next := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		on[v] = true
		succ := make([]string, 0, len(g.Links[v]))
		for w := range g.Links[v] {
			succ = append(succ, w)
		}
		sort.Strings(succ)
		for _, w := range succ {
			if _, ok := index[w]; !ok {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var group []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				group = append(group, w)
				if w == v {
					break
				}
			}
			if len(group) > 1 {
				sort.Strings(group)
				out = append(out, group)
			}
		}
	}
	for _, f := range g.Files {
		if _, ok := index[f]; !ok {
			visit(f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
