package localcluster

import (
	"sync"

	"k8s.io/client-go/rest"
	vcclient "volcano.sh/apis/pkg/client/clientset/versioned"
)

// Warnings collects the warning headers of API responses: what kubectl
// prints after `apply`, admission webhooks' warnings included.
type Warnings struct {
	mu   sync.Mutex
	list []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *Warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// List is every warning so far, oldest first.
func (w *Warnings) List() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// VolcanoRecordingWarnings is a Volcano client of the cluster whose
// responses' warnings go to the returned Warnings instead of the log.
func (c *Cluster) VolcanoRecordingWarnings() (vcclient.Interface, *Warnings, error) {
	w := &Warnings{}
	cfg := rest.CopyConfig(c.Config)
	cfg.WarningHandler = w
	vc, err := vcclient.NewForConfig(cfg)
	return vc, w, err
}
