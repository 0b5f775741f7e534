package paddle

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/volcano-paddle/volcano-paddle/harness/admissiontest"
	"github.com/volcano-paddle/volcano-paddle/harness/testbuilders"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddleapi"
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
		// The mode label is the only default an example may leave to the
		// admission: it restates the spec, silently.
		if m := Mutate(context.Background(), admissiontest.JobReview(admissionv1.Create, &j, nil)); len(m.Warnings) != 0 {
			t.Errorf("%s: %s needs the default %s; write it in the example", f, j.Name, m.Patch)
		} else if m.Patch != nil {
			got := admissiontest.ApplyPatch(t, &j, m.Patch)
			gotS, _ := json.Marshal(got.Spec)
			wantS, _ := json.Marshal(j.Spec)
			if !bytes.Equal(gotS, wantS) || got.Labels[paddleapi.ModeLabel] == "" {
				t.Errorf("%s: %s: the admission changed more than the mode label: %s", f, j.Name, m.Patch)
			}
		}
	}
	if len(examples) < files {
		t.Errorf("%d jobs in %d example files", len(examples), files)
	}
}
