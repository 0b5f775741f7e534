package paddle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	vcschema "volcano.sh/volcano/pkg/webhooks/schema"
)

// Budget of one admission request. Validation is linear in the size of the
// job and the plugin bounds replicas and GPU counts before building
// anything (paddle.validateLimits), so an honest request takes
// milliseconds; these bounds are for the dishonest ones, including
// requests posted straight to the webhook port rather than by the API
// server.
const (
	// MaxRequestBytes bounds the AdmissionReview body: the API server
	// refuses objects over 3 MiB, and a review of an update carries two.
	MaxRequestBytes = 8 << 20
	// DefaultBudget applies when the request says no timeout; the API
	// server sends its webhook timeout as the `timeout` query parameter
	// (at most 30s, 10s in deploy/paddle/admission-paddle.yaml).
	DefaultBudget = 10 * time.Second
	maxBudget     = 30 * time.Second
)

// inFlight bounds the admissions that run at once, so that many large
// requests queue (and give up when their client does) instead of sharing
// the CPU and memory of the webhook manager.
var inFlight = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

type admitFunc func(context.Context, admissionv1.AdmissionReview) *admissionv1.AdmissionResponse

// Handler serves one admission like Volcano's router.Serve
// (volcano.sh/volcano pkg/webhooks/router/server.go), but reads at most
// MaxRequestBytes, gives the admission a context that ends when the client
// leaves or the budget is spent, and stops waiting for the result then.
func Handler(admit admitFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), budget(r))
		defer cancel()
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			http.Error(w, fmt.Sprintf("Content-Type %q, want application/json", ct), http.StatusUnsupportedMediaType)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, fmt.Sprintf("admission request over %d bytes", MaxRequestBytes), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var ar admissionv1.AdmissionReview
		if _, _, err := vcschema.Codecs.UniversalDeserializer().Decode(body, nil, &ar); err != nil || ar.Request == nil {
			http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		select {
		case inFlight <- struct{}{}:
		case <-ctx.Done():
			klog.V(2).InfoS("Dropped an admission request before it ran", "uid", ar.Request.UID, "err", ctx.Err())
			return
		}
		done := make(chan *admissionv1.AdmissionResponse, 1)
		go func() {
			defer func() { <-inFlight }()
			done <- admit(ctx, ar)
		}()
		var resp *admissionv1.AdmissionResponse
		select {
		case resp = <-done:
		case <-ctx.Done():
			if r.Context().Err() != nil {
				klog.V(2).InfoS("Client left; admission dropped", "uid", ar.Request.UID)
				return
			}
			resp = budgetExceeded("request "+string(ar.Request.UID), ctx.Err())
		}
		resp.UID = ar.Request.UID
		out, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Response: resp})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if _, err := w.Write(out); err != nil {
			klog.V(2).InfoS("Writing the admission response", "uid", ar.Request.UID, "err", err)
		}
	}
}

// budget is the request's own timeout (the API server's `timeout` query
// parameter), capped, or DefaultBudget.
func budget(r *http.Request) time.Duration {
	if d, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && d > 0 {
		return min(d, maxBudget)
	}
	return DefaultBudget
}
