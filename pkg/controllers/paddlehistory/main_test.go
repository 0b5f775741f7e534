package paddlehistory

import (
	"testing"

	"github.com/volcano-paddle/volcano-paddle/harness/fakeclients"
)

// TestMain: the informers here run over fake clientsets, which cannot stream
// a watch list (harness/fakeclients).
func TestMain(m *testing.M) { fakeclients.RunTests(m) }
