package paddlejob

import (
	"strings"
	"testing"
	"time"
)

func TestParseArgsDefaults(t *testing.T) {
	a, errs := parseArgs(nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := Args{Mode: "auto", Port: 36000, PortsPerPod: 20, Barrier: true, BarrierImage: DefaultBarrierImage,
		BarrierTimeout: 5 * time.Minute, HeterDevice: "auto", TrainerCompletesJob: true,
		Elastic: ElasticArgs{Timeout: DefaultElasticTimeout, MaxRestart: DefaultElasticMaxRestart, MaxFailures: DefaultElasticMaxFailures, EtcdImage: DefaultEtcdImage}}
	if *a != want {
		t.Errorf("defaults = %+v, want %+v", *a, want)
	}
	if a.glooPort() != 36018 {
		t.Errorf("default gloo port = %d, want 36018", a.glooPort())
	}
}

func TestParseArgsValid(t *testing.T) {
	a, errs := parseArgs([]string{"--ps-task=servers", "--trainer-task=workers", "--mode=ps", "--port=40000",
		"--ports-per-pod=2", "--gloo=2", "--barrier=false", "--host-network", "--heter-device=xpu"})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if a.PServerTask != "servers" || a.TrainerTask != "workers" || a.Port != 40000 || a.Gloo != 2 || a.Barrier || !a.HostNetwork || a.HeterDevice != "xpu" {
		t.Errorf("parsed %+v", *a)
	}
	if a.glooPort() != 40001 {
		t.Errorf("gloo port with 2 ports per pod = %d, want 40001", a.glooPort())
	}
}

// Every argument is validated; each error names the argument.
func TestParseArgsInvalid(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--prot=1"}, "flag provided but not defined: -prot"},
		{[]string{"--port=36000", "extra"}, `unexpected argument "extra"`},
		{[]string{"--port=abc"}, "invalid value"},
		{[]string{"--port=0"}, "--port"},
		{[]string{"--port=70000"}, "--port"},
		{[]string{"--port=65530", "--ports-per-pod=20"}, "goes past 65535"},
		{[]string{"--ports-per-pod=0"}, "--ports-per-pod"},
		{[]string{"--mode=hybrid"}, `--mode`},
		{[]string{"--gloo=3"}, "--gloo"},
		{[]string{"--gloo-port=36005"}, "only meaningful with --gloo"},
		{[]string{"--gloo=1", "--gloo-port=36000"}, "differ from --port"},
		{[]string{"--gloo=1", "--gloo-port=50000"}, "port range"},
		{[]string{"--gloo=1", "--ports-per-pod=1"}, "second port"},
		{[]string{"--barrier-image="}, "--barrier-image"},
		{[]string{"--barrier-timeout=10ms"}, "at least 1s"},
		{[]string{"--barrier-timeout=soon"}, "invalid value"},
		{[]string{"--heter-device=tpu"}, "--heter-device"},
		{[]string{"--ps-task= ps"}, "spaces"},
		// Go's flag package would keep the last value of a repeated flag.
		{[]string{"--port=30000", "--port=40000"}, `given more than once (first value "30000")`},
		{[]string{"--barrier", "--barrier=false"}, "given more than once"},
		{[]string{"--trainer-completes-job=maybe"}, "invalid boolean value"},
	}
	for _, tc := range cases {
		_, errs := parseArgs(tc.args)
		if len(errs) == 0 {
			t.Errorf("%v: accepted", tc.args)
			continue
		}
		if got := errs.ToAggregate().Error(); !strings.Contains(got, tc.want) || !strings.Contains(got, "spec.plugins.paddle") {
			t.Errorf("%v: error %q does not mention %q and the field", tc.args, got, tc.want)
		}
	}
}

func TestDefaultBarrierImageFollowsTheRelease(t *testing.T) {
	for v, want := range map[string]string{"devel": "latest", "": "latest", "v0.3.0": "v0.3.0", "v0.3.0-2-gabc1234-dirty": "v0.3.0-2-gabc1234-dirty"} {
		if got := barrierImageTag(v); got != want {
			t.Errorf("barrierImageTag(%q) = %q, want %q", v, got, want)
		}
	}
	if !strings.HasPrefix(DefaultBarrierImage, BarrierImageRepository+":") {
		t.Errorf("DefaultBarrierImage = %s", DefaultBarrierImage)
	}
}
