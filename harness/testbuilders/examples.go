package testbuilders

import (
	"bytes"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
	batch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// ExampleJob is one Volcano Job of the example files users copy.
type ExampleJob struct {
	// File is the YAML file it came from.
	File string
	Job  batch.Job
}

// ExampleJobs reads every Volcano Job of the YAML files in dir
// (deploy/examples; other kinds in a file, a PVC say, are skipped) and
// says how many files it read.
func ExampleJobs(dir string) ([]ExampleJob, int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, 0, err
	}
	var out []ExampleJob
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, 0, err
		}
		for _, doc := range bytes.Split(b, []byte("\n---")) {
			var j batch.Job
			if err := yaml.Unmarshal(doc, &j); err != nil || j.Kind != "Job" {
				continue
			}
			out = append(out, ExampleJob{File: f, Job: j})
		}
	}
	return out, len(files), nil
}
