package paddleapi

import (
	"testing"
	"time"
)

// A pod's restart cost: the declared one when it is a duration within
// (0, MaxRestartCost], else the default; the restarts left before Volcano
// fails the job: maxRetry - retryCount - 1, never below 0, unknown without
// maxRetry.
func TestStopAnnotations(t *testing.T) {
	cases := []struct {
		ann      map[string]string
		cost     time.Duration
		left     int
		leftKnow bool
	}{
		{ann: nil, cost: DefaultRestartCost},
		{ann: map[string]string{RestartCostAnnotation: "12m", MaxRetryAnnotation: "3"}, cost: 12 * time.Minute, left: 2, leftKnow: true},
		{ann: map[string]string{RestartCostAnnotation: "0s", MaxRetryAnnotation: "3", RetryCountAnnotation: "1"}, cost: DefaultRestartCost, left: 1, leftKnow: true},
		{ann: map[string]string{RestartCostAnnotation: "25h", MaxRetryAnnotation: "3", RetryCountAnnotation: "2"}, cost: DefaultRestartCost, left: 0, leftKnow: true},
		{ann: map[string]string{RestartCostAnnotation: "-1m", MaxRetryAnnotation: "1", RetryCountAnnotation: "5"}, cost: DefaultRestartCost, left: 0, leftKnow: true},
		{ann: map[string]string{MaxRetryAnnotation: "three", RetryCountAnnotation: "x"}, cost: DefaultRestartCost},
	}
	for _, tc := range cases {
		if got := RestartCostOf(tc.ann); got != tc.cost {
			t.Errorf("%v: restart cost %s, want %s", tc.ann, got, tc.cost)
		}
		if left, ok := RestartsLeft(tc.ann); left != tc.left || ok != tc.leftKnow {
			t.Errorf("%v: restarts left %d (%t), want %d (%t)", tc.ann, left, ok, tc.left, tc.leftKnow)
		}
	}
}
