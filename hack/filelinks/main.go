// Command filelinks shows how the files of a Go package use each other: a
// link a -> b is a use in a.go of a package-level name (function, type,
// variable, constant, or a method of the package's types) declared in b.go.
// Files that use each other, directly or round a longer cycle, are not
// layered; docs/architecture.md asks pkg/paddlejob's files to form layers.
//
//	go run ./hack/filelinks [-tests] [-v] PACKAGE...
//
// prints, per package, its files, links, two-way pairs, cycles and exported
// names; with -check it exits 1 when a package has a cycle.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/volcano-paddle/volcano-paddle/hack/filelinks/links"
)

func main() {
	tests := flag.Bool("tests", false, "count the package's _test.go files too")
	verbose := flag.Bool("v", false, "list every link")
	check := flag.Bool("check", false, "exit 1 when a package's files are not layered (a cycle)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: filelinks [-tests] [-v] [-check] PACKAGE...")
		os.Exit(2)
	}
	graphs, err := links.Load(*tests, flag.Args()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "filelinks:", err)
		os.Exit(1)
	}
	failed := false
	for _, g := range graphs {
		report(g, *verbose)
		if len(g.Cycles()) > 0 {
			failed = true
		}
	}
	if *check && failed {
		os.Exit(1)
	}
}

func report(g *links.Graph, verbose bool) {
	two := g.TwoWay()
	cycles := g.Cycles()
	fmt.Printf("%s: %d files, %d links between files, %d two-way pairs, %d cycles, %d exported names\n",
		g.Package, len(g.Files), g.LinkCount(), len(two), len(cycles), len(g.Exported))
	for _, p := range two {
		fmt.Printf("  two-way: %s <-> %s\n", p[0], p[1])
	}
	for _, c := range cycles {
		fmt.Printf("  cycle: %s\n", strings.Join(c, " -> "))
	}
	if verbose {
		from := make([]string, 0, len(g.Links))
		for f := range g.Links {
			from = append(from, f)
		}
		sort.Strings(from)
		for _, f := range from {
			to := make([]string, 0, len(g.Links[f]))
			for t := range g.Links[f] {
				to = append(to, filepath.Base(t))
			}
			sort.Strings(to)
			fmt.Printf("  %s -> %s\n", f, strings.Join(to, ", "))
		}
		fmt.Printf("  exported: %s\n", strings.Join(g.Exported, " "))
	}
}
