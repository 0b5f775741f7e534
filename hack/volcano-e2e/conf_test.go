package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

type testConf struct {
	Actions string `json:"actions"`
	Tiers   []struct {
		Plugins []map[string]interface{} `json:"plugins"`
	} `json:"tiers"`
}

func parseTestConf(t *testing.T, b []byte) testConf {
	t.Helper()
	var c testConf
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// The second run's configuration is the first minus paddle's entry:
// same actions, every other plugin with its settings in the same order.
func TestWithoutPluginKeepsEverythingElse(t *testing.T) {
	conf := []byte(`actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
- plugins:
  - name: paddle
    arguments:
      paddle.affinity.weight: 10
  - name: drf
    enablePreemptable: false
  - name: proportion
- plugins:
  - name: paddle
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: "true"
`)
	got, err := withoutPlugin(conf, "paddle")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), "paddle") {
		t.Fatalf("paddle is still there:\n%s", got)
	}
	in, out := parseTestConf(t, conf), parseTestConf(t, got)
	if in.Actions != out.Actions {
		t.Errorf("actions %q, want %q", out.Actions, in.Actions)
	}
	want := [][]map[string]interface{}{
		in.Tiers[0].Plugins,
		{in.Tiers[1].Plugins[1], in.Tiers[1].Plugins[2]},
	}
	var have [][]map[string]interface{}
	for _, tier := range out.Tiers {
		have = append(have, tier.Plugins)
	}
	if !reflect.DeepEqual(have, want) {
		t.Errorf("tiers %v, want %v (the emptied third tier dropped)", have, want)
	}
	if !strings.Contains(string(got), "enableTopologyAwarePreemption") {
		t.Errorf("the action configurations were lost:\n%s", got)
	}
}

func TestWithoutPluginRefusesAConfigurationWithoutIt(t *testing.T) {
	if _, err := withoutPlugin([]byte("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"), "paddle"); err == nil {
		t.Fatal("no error for a configuration without paddle: both runs would test the same thing")
	}
}

// The project's own configuration has paddle, and loses nothing else.
func TestWithoutPluginOnTheDeployedConfiguration(t *testing.T) {
	conf, err := os.ReadFile(filepath.Join("..", "..", "deploy", "paddle", "volcano-scheduler.conf"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := withoutPlugin(conf, "paddle")
	if err != nil {
		t.Fatal(err)
	}
	in, out := parseTestConf(t, conf), parseTestConf(t, got)
	names := func(c testConf) (n []interface{}) {
		for _, tier := range c.Tiers {
			for _, p := range tier.Plugins {
				if p["name"] != "paddle" {
					n = append(n, p["name"])
				}
			}
		}
		return n
	}
	if in.Actions != out.Actions || !reflect.DeepEqual(names(in), names(out)) {
		t.Errorf("without paddle: actions %q, plugins %v; want %q, %v", out.Actions, names(out), in.Actions, names(in))
	}
}

func TestReadReport(t *testing.T) {
	report := `[{"SuiteDescription":"Volcano Scheduler Test Suite","SuiteSucceeded":false,"RunTime":5000000000,
"SpecReports":[
 {"ContainerHierarchyTexts":["Job E2E Test"],"LeafNodeType":"It","LeafNodeText":"b passes","State":"passed","RunTime":2000000000,"Failure":{}},
 {"ContainerHierarchyTexts":["Job E2E Test"],"LeafNodeType":"It","LeafNodeText":"a fails","State":"failed","RunTime":3000000000,
  "Failure":{"Message":"Expected\n    <*errors.errorString>: timed out","Location":{"FileName":"/root/go/pkg/mod/volcano.sh/volcano@v1.15.1/test/e2e/schedulingaction/preempt.go","LineNumber":139}}},
 {"ContainerHierarchyTexts":["Reclaim E2E Test"],"LeafNodeType":"It","LeafNodeText":"skips itself","State":"skipped","Failure":{"Message":"skip: the case has some problem"}},
 {"ContainerHierarchyTexts":["Reclaim E2E Test"],"LeafNodeType":"It","LeafNodeText":"not selected","State":"skipped","Failure":{}},
 {"LeafNodeType":"ReportAfterSuite","LeafNodeText":"","State":"passed"}
]}]`
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	specs, err := readReport(path)
	if err != nil {
		t.Fatal(err)
	}
	r := &runResult{Specs: specs}
	check := func(what string, n int, names []string, want ...string) {
		t.Helper()
		if n != len(want) || !reflect.DeepEqual(names, want) {
			t.Errorf("%s: %d %v, want %v", what, n, names, want)
		}
	}
	n, names := r.passed()
	check("passed", n, names, "Job E2E Test b passes")
	n, names = r.failed()
	check("failed", n, names, "Job E2E Test a fails")
	n, names = r.skippedBySpec()
	check("skipped by the spec", n, names, "Reclaim E2E Test skips itself")
	n, names = r.skippedBySelection()
	check("skipped by selection", n, names, "Reclaim E2E Test not selected")
	if loc := specs[0].Location; loc != "volcano.sh/volcano@v1.15.1/test/e2e/schedulingaction/preempt.go:139" {
		t.Errorf("location %q", loc)
	}
}
