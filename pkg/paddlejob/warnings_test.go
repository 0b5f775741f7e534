package paddlejob

import (
	"strings"
	"testing"

	bus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
)

// Silent drops become warnings (issue 28, item 6): a template port that
// takes the name or number of the plugin's port, and fewer ports per pod
// than GPUs.
func TestPortWarnings(t *testing.T) {
	collective := func(args []string, task *testbuilders.TaskWrapper) *testbuilders.JobWrapper {
		return testbuilders.MakeJob("ml", "w").Plugin(PluginName, args...).Task(task)
	}
	cases := []struct {
		name string
		job  *testbuilders.JobWrapper
		want string // "" = no port warning
	}{
		{"port named paddle", collective(nil, testbuilders.MakeTask("trainer", 2).Port("paddle", 8080)),
			`spec.tasks[0].template.spec.containers[0].ports[0]: port "paddle" (8080) has the name or the number of the plugin's port "paddle" (36000)`},
		{"plugin's number under another name", collective(nil, testbuilders.MakeTask("trainer", 2).Port("metrics", DefaultPort)),
			`port "metrics" (36000) has the name or the number of the plugin's port "paddle" (36000)`},
		{"exactly the plugin's port", collective(nil, testbuilders.MakeTask("trainer", 2).Port("paddle", DefaultPort)), ""},
		{"unrelated port", collective(nil, testbuilders.MakeTask("trainer", 2).Port("metrics", 9100)), ""},
		{"gloo port name on pservers", testbuilders.MakeJob("ml", "w").Plugin(PluginName, "--gloo=1").
			Task(testbuilders.MakeTask("pserver", 2).Port("paddle-gloo", 1234)).
			Task(testbuilders.MakeTask("trainer", 2).Policy(bus.TaskCompletedEvent, bus.CompleteJobAction)),
			`plugin's port "paddle-gloo"`},
		{"fewer ports than GPUs", collective([]string{"--ports-per-pod=4"}, testbuilders.MakeTask("trainer", 2).GPUs(8)),
			"spec.tasks[0]: pods ask for 8 GPUs but --ports-per-pod is 4"},
		{"ports for every GPU", collective([]string{"--ports-per-pod=8"}, testbuilders.MakeTask("trainer", 2).GPUs(8)), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job.Obj()
			a, errs := parseArgs(job.Spec.Plugins[PluginName])
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			l, errs := ValidateJob(job, a)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			all := strings.Join(Warnings(job, l), "\n")
			if tc.want == "" {
				if strings.Contains(all, "port") {
					t.Errorf("port warnings for a job without a clash:\n%s", all)
				}
				return
			}
			if !strings.Contains(all, tc.want) {
				t.Errorf("warnings lack %q:\n%s", tc.want, all)
			}
		})
	}
}
