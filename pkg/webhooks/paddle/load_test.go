package paddle

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/volcano-paddle/volcano-paddle/harness/admissiontest"
	"github.com/volcano-paddle/volcano-paddle/pkg/paddlejob"
)

// hostileBody is a review of a 3,000-replica task whose container sets
// n variables named name (with the plugin's own value). With PADDLE_PORT
// 1,000 times it is the request of issue 28: about 40 KB of
// AdmissionReview that cost 29 s of CPU to check.
func hostileBody(t testing.TB, name string, n int) []byte {
	j := job(map[string][]string{"paddle": nil}, map[string]int32{"ps": 1, "worker": 3000})
	env := make([]v1.EnvVar, n)
	for i := range env {
		env[i] = v1.EnvVar{Name: name, Value: strconv.Itoa(paddlejob.DefaultPort)}
	}
	j.Spec.Tasks[1].Template.Spec.Containers[0].Env = env
	b, err := json.Marshal(admissiontest.JobReview(admissionv1.Create, j, nil))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type answer struct {
	took time.Duration
	resp *admissionv1.AdmissionResponse
	err  error
}

func postReview(url string, body []byte) answer {
	start := time.Now()
	c := &http.Client{Timeout: 30 * time.Second}
	r, err := c.Post(url+Path+"?timeout=10s", "application/json", bytes.NewReader(body))
	if err != nil {
		return answer{took: time.Since(start), err: err}
	}
	defer r.Body.Close()
	var out admissionv1.AdmissionReview
	err = json.NewDecoder(r.Body).Decode(&out)
	return answer{took: time.Since(start), resp: out.Response, err: err}
}

// While three hostile reviews are posted straight to the webhook at once,
// a small Paddle job is still admitted within 2 s, and each hostile one is
// refused, naming the field, within 5 s (issue 28, item 1).
func TestAdmissionUnderLoad(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		n         int
		refusal   string
	}{
		{"PADDLE_PORT 1,000 times", paddlejob.EnvPort, 1000, "PADDLE_PORT is given 1000 times"},
		{"too many env entries", "OTHER", paddlejob.MaxEnvPerContainer + 1, "must have at most 1024 items"},
	} {
		t.Run(tc.name, func(t *testing.T) { admitUnderLoad(t, hostileBody(t, tc.env, tc.n), tc.refusal) })
	}
}

func admitUnderLoad(t *testing.T, big []byte, refusal string) {
	h := HandlerWithPrecheck(func(ar admissionv1.AdmissionReview) *admissionv1.AdmissionResponse { return precheck(ar, false) }, Admit)
	// arrived tells when a request has reached the webhook, so the small
	// job is posted only once the hostile ones are in flight.
	arrived := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		h(w, r)
	}))
	defer srv.Close()
	small, _ := json.Marshal(admissiontest.JobReview(admissionv1.Create, job(map[string][]string{"paddle": nil}, map[string]int32{"ps": 1, "worker": 2}), nil))
	t.Logf("hostile review: %d bytes", len(big))

	var wg sync.WaitGroup
	bigs := make([]answer, 3)
	for i := range bigs {
		wg.Add(1)
		go func() { defer wg.Done(); bigs[i] = postReview(srv.URL, big) }()
	}
	deadline := time.After(5 * time.Second)
	for range bigs {
		select {
		case <-arrived:
		case <-deadline:
			t.Fatal("the hostile requests did not reach the webhook within 5s")
		}
	}
	s := postReview(srv.URL, small)
	wg.Wait()

	t.Logf("small job: %v (allowed %v, err %v)", s.took, s.resp != nil && s.resp.Allowed, s.err)
	if s.err != nil || s.resp == nil || !s.resp.Allowed || s.took > 2*time.Second {
		t.Errorf("small job under load: took %v, err %v, response %+v", s.took, s.err, s.resp)
	}
	for i, b := range bigs {
		msg := ""
		if b.resp != nil && b.resp.Result != nil {
			msg = b.resp.Result.Message
		}
		t.Logf("hostile %d: %v: %.200s", i, b.took, msg)
		if b.err != nil || b.resp == nil || b.resp.Allowed || b.took > 5*time.Second ||
			!bytes.Contains([]byte(msg), []byte("spec.tasks[1].template.spec.containers[0].env")) || !bytes.Contains([]byte(msg), []byte(refusal)) {
			t.Errorf("hostile request %d: took %v, err %v, message %q", i, b.took, b.err, msg)
		}
	}
}

// A request that finds every admission slot taken is refused as busy
// after MaxQueueWait, well before the API server's webhook timeout.
func TestBusyRefusedQuickly(t *testing.T) {
	for i := 0; i < cap(inFlight); i++ {
		inFlight <- struct{}{}
	}
	defer func() {
		for i := 0; i < cap(inFlight); i++ {
			<-inFlight
		}
	}()
	srv := httptest.NewServer(Handler(Admit))
	defer srv.Close()
	small, _ := json.Marshal(admissiontest.JobReview(admissionv1.Create, job(map[string][]string{"paddle": nil}, map[string]int32{"ps": 1, "worker": 2}), nil))
	a := postReview(srv.URL, small)
	if a.err != nil || a.resp == nil || a.resp.Allowed || a.resp.Result.Code != http.StatusTooManyRequests || a.took > MaxQueueWait+time.Second {
		t.Errorf("with every slot taken: took %v, err %v, response %+v", a.took, a.err, a.resp)
	}
}
