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
// the CPU and memory of the webhook manager. A request waits at most
// MaxQueueWait for a slot and is then refused as busy: with validation
// linear in the request and oversized jobs refused before they queue
// (precheck), a slot is held for milliseconds, so a full queue means an
// attack, and a quick "retry" beats holding every Job creation of the
// cluster until the API server's webhook timeout.
var inFlight = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// MaxQueueWait bounds how long a request waits for an admission slot.
const MaxQueueWait = 2 * time.Second

type admitFunc func(context.Context, admissionv1.AdmissionReview) *admissionv1.AdmissionResponse

// precheckFunc answers a request without a slot, or returns nil to queue
// it for the full admission.
type precheckFunc func(admissionv1.AdmissionReview) *admissionv1.AdmissionResponse

// Handler serves one admission like Volcano's router.Serve
// (volcano.sh/volcano pkg/webhooks/router/server.go), but reads at most
// MaxRequestBytes, gives the admission a context that ends when the client
// leaves or the budget is spent, and stops waiting for the result then.
func Handler(admit admitFunc) http.HandlerFunc { return HandlerWithPrecheck(nil, admit) }

// HandlerWithPrecheck is Handler that first runs pre (when not nil) outside
// the bounded slots: what it answers never waits for one.
func HandlerWithPrecheck(pre precheckFunc, admit admitFunc) http.HandlerFunc {
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
		resp := run(ctx, r, ar, pre, admit)
		if resp == nil {
			return
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

// run answers ar: pre's answer, else admit's in a slot; nil when the
// client left.
func run(ctx context.Context, r *http.Request, ar admissionv1.AdmissionReview, pre precheckFunc, admit admitFunc) *admissionv1.AdmissionResponse {
	if pre != nil {
		if resp := pre(ar); resp != nil {
			return resp
		}
	}
	wait := time.NewTimer(MaxQueueWait)
	defer wait.Stop()
	select {
	case inFlight <- struct{}{}:
	case <-wait.C:
		klog.InfoS("Paddle admission busy; refused a request", "uid", ar.Request.UID, "waited", MaxQueueWait)
		return busy(MaxQueueWait)
	case <-ctx.Done():
		klog.V(2).InfoS("Dropped an admission request before it ran", "uid", ar.Request.UID, "err", ctx.Err())
		return nil
	}
	done := make(chan *admissionv1.AdmissionResponse, 1)
	go func() {
		defer func() { <-inFlight }()
		done <- admit(ctx, ar)
	}()
	select {
	case resp := <-done:
		return resp
	case <-ctx.Done():
		if r.Context().Err() != nil {
			klog.V(2).InfoS("Client left; admission dropped", "uid", ar.Request.UID)
			return nil
		}
		return budgetExceeded("request "+string(ar.Request.UID), ctx.Err())
	}
}

// busy refuses a request that found every admission slot taken for
// waited: a quick answer the user can retry.
func busy(waited time.Duration) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Reason: metav1.StatusReasonTooManyRequests, Code: http.StatusTooManyRequests,
		Message: fmt.Sprintf("paddle admission is busy: every admission slot stayed taken for %v; retry in a few seconds", waited),
	}}
}

// budget is the request's own timeout (the API server's `timeout` query
// parameter), capped, or DefaultBudget.
func budget(r *http.Request) time.Duration {
	if d, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && d > 0 {
		return min(d, maxBudget)
	}
	return DefaultBudget
}
