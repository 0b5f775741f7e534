package paddlejob

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/volcano-paddle/volcano-paddle/hack/filelinks/links"
)

// pkg/paddlejob is what a Paddle job is, as pure functions of the Job, its
// arguments and its incarnation: nothing it depends on can reach an API
// server, and importing it registers nothing (no init). The API calls are
// pkg/paddlekube's, the Volcano hooks the job plugin's.
func TestNoAPIClientAndNoInit(t *testing.T) {
	cfg := links.PackagesConfig(packages.NeedName | packages.NeedImports | packages.NeedDeps)
	pkgs, err := packages.Load(cfg, "github.com/volcano-paddle/volcano-paddle/pkg/paddlejob")
	if err != nil || len(pkgs) != 1 {
		t.Fatalf("loading the package: %v", err)
	}
	forbidden := []string{
		"k8s.io/client-go/kubernetes",        // client-go's clientset
		"k8s.io/client-go/rest",              // any REST client
		"volcano.sh/apis/pkg/client",         // Volcano's clientset
		"sigs.k8s.io/controller-runtime",     // controller-runtime's client
		"volcano.sh/volcano/pkg/controllers", // Volcano's controllers and job plugin factory
		"github.com/volcano-paddle/volcano-paddle/pkg/paddlekube",
	}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, f := range forbidden {
			if p.PkgPath == f || strings.HasPrefix(p.PkgPath, f+"/") {
				t.Errorf("pkg/paddlejob depends on %s", p.PkgPath)
			}
		}
	})

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
				t.Errorf("%s: func init", fset.Position(fn.Pos()))
			}
		}
	}
}
