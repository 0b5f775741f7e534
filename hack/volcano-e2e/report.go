package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// ginkgoReport is the part of Ginkgo v2's JSON report (types.Report, written
// by --ginkgo.json-report) that the comparison reads. Ginkgo's own types stay
// out of our module: the suite is built in tools/volcano-e2e.
type ginkgoReport struct {
	SuiteDescription string
	SuiteSucceeded   bool
	RunTime          time.Duration
	SpecReports      []struct {
		ContainerHierarchyTexts []string
		LeafNodeType            string
		LeafNodeText            string
		State                   string
		RunTime                 time.Duration
		Failure                 struct {
			Message  string
			Location struct {
				FileName   string
				LineNumber int
			}
			FailureNodeType string
		}
	}
}

// specResult is one spec of the suite in one run.
type specResult struct {
	Name  string
	State string // passed, failed, skipped, ... (Ginkgo's SpecState)
	// Selected is false for a spec the selection's skip patterns left out;
	// a selected spec may still skip itself (Ginkgo's Skip), with Message
	// saying why.
	Selected bool
	RunTime  time.Duration
	Message  string
	Location string
}

// failed reports whether Ginkgo counts the state as a failure.
func (r specResult) failed() bool {
	switch r.State {
	case "failed", "aborted", "panicked", "interrupted", "timedout":
		return true
	}
	return false
}

// runResult is one configuration's run of the suite.
type runResult struct {
	Label    string
	Specs    []specResult
	SuiteErr error // the suite binary's exit, nil when it exited 0
	Wall     time.Duration
	Total    time.Duration // with the cluster's start and stop
	Dir      string
}

func (r *runResult) count(pred func(specResult) bool) (n int, names []string) {
	for _, s := range r.Specs {
		if pred(s) {
			n++
			names = append(names, s.Name)
		}
	}
	return n, names
}

func (r *runResult) passed() (int, []string) {
	return r.count(func(s specResult) bool { return s.State == "passed" })
}

func (r *runResult) failed() (int, []string) {
	return r.count(specResult.failed)
}

// skippedBySelection are the specs the skip patterns left out;
// skippedBySpec those that were selected and called Skip themselves.
func (r *runResult) skippedBySelection() (int, []string) {
	return r.count(func(s specResult) bool { return s.State == "skipped" && !s.Selected })
}

func (r *runResult) skippedBySpec() (int, []string) {
	return r.count(func(s specResult) bool { return s.State == "skipped" && s.Selected })
}

// readReport reads the It specs of a Ginkgo JSON report.
func readReport(path string) ([]specResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []ginkgoReport
	if err := json.Unmarshal(b, &reports); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []specResult
	for _, rep := range reports {
		for _, s := range rep.SpecReports {
			if s.LeafNodeType != "It" {
				continue
			}
			name := strings.TrimSpace(strings.Join(append(append([]string(nil), s.ContainerHierarchyTexts...), s.LeafNodeText), " "))
			r := specResult{Name: name, State: s.State, RunTime: s.RunTime, Message: strings.TrimSpace(s.Failure.Message)}
			// Ginkgo records no failure for a spec its filters skipped, and the
			// reason for one that skipped itself.
			r.Selected = !(s.State == "skipped" && r.Message == "")
			if s.Failure.Location.FileName != "" {
				r.Location = fmt.Sprintf("%s:%d", trimModulePath(s.Failure.Location.FileName), s.Failure.Location.LineNumber)
			}
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// trimModulePath shortens a module-cache path to module@version/path.
func trimModulePath(p string) string {
	if i := strings.Index(p, "/pkg/mod/"); i >= 0 {
		return p[i+len("/pkg/mod/"):]
	}
	return p
}
