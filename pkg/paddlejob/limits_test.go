package paddlejob

import (
	"strings"
	"testing"
)

func TestJobNameFix(t *testing.T) {
	errs := validateJobName("1paddle")
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, `e.g. "paddle-paddle"`) {
		t.Errorf("errors = %v", errs)
	}
	if errs := validateJobName("wd-2"); len(errs) != 0 {
		t.Errorf("valid name refused: %v", errs)
	}
}
