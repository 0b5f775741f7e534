package quality

import (
	"reflect"
	"testing"
)

// The embedded profiles, written out, load as the repository's do: every
// model Models knows, with the same step times.
func TestWriteProfiles(t *testing.T) {
	dir := t.TempDir()
	if err := WriteProfiles(dir); err != nil {
		t.Fatal(err)
	}
	got, err := Models(dir)
	if err != nil {
		t.Fatalf("Models of the written profiles: %v", err)
	}
	want, err := Models("testdata/pollux")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the written profiles load as %v, the repository's as %v", got, want)
	}
}
