// Package catalogtest gives tests the bench's catalogue, failing the test
// when it cannot be read.
package catalogtest

import (
	"testing"

	"github.com/volcano-paddle/volcano-paddle/bench/catalogue"
)

// Load is the bench's compiled-in catalogue.
func Load(t testing.TB) *catalogue.Catalogue {
	t.Helper()
	cat, err := catalogue.Load()
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// Files are the scheduler files of this checkout the catalogue's entries
// build on (catalogue.RepoFiles).
func Files(t testing.TB) catalogue.Files {
	t.Helper()
	files, err := catalogue.RepoFiles()
	if err != nil {
		t.Fatal(err)
	}
	return files
}
