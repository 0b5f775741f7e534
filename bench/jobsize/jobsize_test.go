package jobsize

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// The measured job is one the plugin accepts at every reported size.
func TestJobIsValidAtEverySize(t *testing.T) {
	for _, n := range []int{100, 2000, 10000} {
		job := Job("ns", n)
		s, _ := paddlejob.Read(job)
		if len(s.Errs) > 0 {
			t.Fatal(s.Errs)
		}
		if _, errs := paddlejob.ValidateJob(job, s.Args); len(errs) > 0 {
			t.Errorf("%d trainers: %v", n, errs.ToAggregate())
		}
	}
}

// The section replaces the previous one and leaves the rest of the report.
func TestWriteSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := os.WriteFile(path, []byte("# Benchmarks\n\nother parts\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := Markdown([]Result{{Trainers: 100, PServers: 2, PodBytesMax: 3000, Admission: 40 * time.Millisecond}}, "cmd")
	second := Markdown([]Result{{Trainers: 200, PServers: 2, PodBytesMax: 40000, Err: "not running after 1s"}}, "cmd")
	for _, s := range []string{first, second} {
		if err := WriteSection(path, s); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	doc := string(b)
	if !strings.HasPrefix(doc, "# Benchmarks\n\nother parts\n") || strings.Count(doc, beginMarker) != 1 ||
		strings.Contains(doc, "| 100 |") || !strings.Contains(doc, "| not running after 1s |") || !strings.Contains(doc, "**no**") {
		t.Errorf("report:\n%s", doc)
	}
}
