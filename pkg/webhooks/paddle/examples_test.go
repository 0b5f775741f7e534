package paddle

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/yaml"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// The examples users copy are admitted without a single warning: gang
// size, restartPolicy Never, RestartJob only, CompleteJob on the trainers
// and `exec` in every shell command.
func TestExamplesHaveNoWarnings(t *testing.T) {
	files, err := filepath.Glob("../../../deploy/examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	jobs := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(b, []byte("\n---")) {
			var j batch.Job
			if err := yaml.Unmarshal(doc, &j); err != nil || j.Kind != "Job" {
				continue
			}
			jobs++
			resp := Admit(context.Background(), review(admissionv1.Create, &j, nil))
			if !resp.Allowed {
				t.Errorf("%s: %s denied: %v", f, j.Name, resp.Result)
			}
			for _, w := range resp.Warnings {
				t.Errorf("%s: %s: warning %s", f, j.Name, w)
			}
			if m := Mutate(context.Background(), review(admissionv1.Create, &j, nil)); m.Patch != nil {
				t.Errorf("%s: %s needs the default %s; write it in the example", f, j.Name, m.Patch)
			}
		}
	}
	if jobs < len(files) {
		t.Errorf("%d jobs in %d example files", jobs, len(files))
	}
}
