package main

import "testing"

// The images of the v1.15.1 build keep the release's tag (GOFLAGS from the
// Makefile) beside netgo and osusergo.
func TestImageTags(t *testing.T) {
	for goflags, want := range map[string]string{
		"": "netgo,osusergo",
		"-modfile=/x/go.volcano-v1.15.1.mod -tags=volcano_v1_15": "netgo,osusergo,volcano_v1_15",
		"-mod=mod -tags=a,b": "netgo,osusergo,a,b",
	} {
		if got := imageTags(goflags); got != want {
			t.Errorf("imageTags(%q) = %q, want %q", goflags, got, want)
		}
	}
}
