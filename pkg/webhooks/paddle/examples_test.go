package paddle

import (
	"context"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/volcano-paddle/volcano-paddle/harness/admissiontest"
	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
)

// The examples users copy are admitted without a single warning: gang
// size, restartPolicy Never, RestartJob only, CompleteJob on the trainers
// and `exec` in every shell command.
func TestExamplesHaveNoWarnings(t *testing.T) {
	examples, files, err := testbuilders.ExampleJobs("../../../deploy/examples")
	if err != nil || files == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, ex := range examples {
		f, j := ex.File, ex.Job
		resp := Admit(context.Background(), admissiontest.JobReview(admissionv1.Create, &j, nil))
		if !resp.Allowed {
			t.Errorf("%s: %s denied: %v", f, j.Name, resp.Result)
		}
		for _, w := range resp.Warnings {
			t.Errorf("%s: %s: warning %s", f, j.Name, w)
		}
		if m := Mutate(context.Background(), admissiontest.JobReview(admissionv1.Create, &j, nil)); m.Patch != nil {
			t.Errorf("%s: %s needs the default %s; write it in the example", f, j.Name, m.Patch)
		}
	}
	if len(examples) < files {
		t.Errorf("%d jobs in %d example files", len(examples), files)
	}
}
