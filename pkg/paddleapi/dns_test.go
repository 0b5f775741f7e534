package paddleapi

import (
	"math"
	"strings"
	"testing"
)

func TestHostPerIncarnation(t *testing.T) {
	cases := []struct {
		incarnation int
		host        string
	}{
		{0, "wd-worker-3.wd"},
		{1, "wd-worker-3-v1.wd"},
		{12, "wd-worker-3-v12.wd"},
	}
	for _, tc := range cases {
		if got := Host("wd", "worker", 3, tc.incarnation); got != tc.host {
			t.Errorf("incarnation %d: %s, want %s", tc.incarnation, got, tc.host)
		}
	}
	// The suffix never makes a name another pod's: its last dash-token is
	// not a number, and validation reserves exactly its longest form.
	h := Hostname("wd", "worker", 3, math.MaxInt32)
	if tok := h[strings.LastIndexByte(h, '-')+1:]; tok[0] != 'v' {
		t.Errorf("last token %q", tok)
	}
	if got := len(h) - len(PodName("wd", "worker", 3)); got != MaxIncarnationSuffixLen {
		t.Errorf("longest suffix %d characters, MaxIncarnationSuffixLen %d", got, MaxIncarnationSuffixLen)
	}
}
