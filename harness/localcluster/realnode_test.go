package localcluster

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/vp-realnode/a`:         "/tmp/vp-realnode/a",
		`/tmp/vp-realnode/with\040x`: "/tmp/vp-realnode/with x",
		`/a\011b\134c`:               "/a\tb\\c",
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// Without kubelet and CoreDNS in the bin folder the requirements name them
// and how to build them.
func TestRealNodeRequirementsNameWhatIsMissing(t *testing.T) {
	missing := strings.Join(RealNodeRequirements(t.TempDir()), "\n")
	for _, want := range []string{"make bin/kubelet", "make bin/coredns"} {
		if !strings.Contains(missing, want) {
			t.Errorf("requirements %q do not name %q", missing, want)
		}
	}
}

// The configurations carry the settings the real node depends on.
func TestRealNodeConfigurations(t *testing.T) {
	var b bytes.Buffer
	if err := corefile.Execute(&b, map[string]interface{}{"Domain": "cluster.local", "IP": RealNodeIP, "Health": 1, "Ready": 2, "Kubeconfig": "/k", "TTL": 30, "Cache": 30}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bind 198.18.0.1", "ttl 30", "cache 30", "pods insecure"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Corefile lacks %q:\n%s", want, b.String())
		}
	}
	if regexp.MustCompile(`(?m)^\s*forward\b`).MatchString(b.String()) {
		t.Errorf("Corefile forwards to another resolver:\n%s", b.String())
	}
	b.Reset()
	if err := containerdConfig.Execute(&b, map[string]string{"Dir": "/tmp/vp-realnode", "Sock": "/s", "Pause": pauseRef, "Closed": closedPort}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"restrict_oom_score_adj = true", `endpoint = ["http://127.0.0.1:1"]`, `mirrors."*"`, "netns_mounts_under_state_dir = true", `Root = "/tmp/vp-realnode/runc"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("containerd config lacks %q", want)
		}
	}
	b.Reset()
	if err := kubeletConfig.Execute(&b, map[string]interface{}{"IP": RealNodeIP, "Port": 1, "Healthz": 2, "CgroupRoot": cgroupRoot, "Sock": "/s", "Domain": "cluster.local", "Dir": "/d", "Taint": RealNodeTaint}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cgroupDriver: cgroupfs", "failCgroupV1: false", `resolvConf: ""`, "key: " + RealNodeTaint, "clusterDNS: [198.18.0.1]"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("kubelet config lacks %q", want)
		}
	}
}
