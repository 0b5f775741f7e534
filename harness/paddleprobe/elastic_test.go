package paddleprobe

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volcano-paddle/volcano-paddle/internal/dnsbarrier/dnstest"
)

// gateway plays the calls of etcd's v3 JSON gateway an elastic launcher
// makes, over a history of writes (etcd's MVCC, enough for a read at a
// revision); the real etcd is test/e2e's (TestRealNodeElasticEtcd).
type gateway struct {
	mu      sync.Mutex
	history []write
	ranges  int
	// dropAfterPut: a key put under this prefix is deleted at once, in
	// the next revision (the job plugin's loss notice of a deleted pod).
	dropAfterPut string
}

// write is one revision: a put, or the deletion of key.
type write struct {
	key, value, lease string
	deleted           bool
}

// at is the store as of revision rev (0: the latest); revision r is
// history[r-1].
func (g *gateway) at(rev int) map[string]write {
	if rev <= 0 || rev > len(g.history) {
		rev = len(g.history)
	}
	out := map[string]write{}
	for _, w := range g.history[:rev] {
		if w.deleted {
			delete(out, w.key)
		} else {
			out[w.key] = w
		}
	}
	return out
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" {
		_, _ = w.Write([]byte(`{"health":"true","reason":""}`))
		return
	}
	var req map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	field := func(k string) string {
		var s string
		_ = json.Unmarshal(req[k], &s)
		return s
	}
	b64 := func(k string) string { b, _ := base64.StdEncoding.DecodeString(field(k)); return string(b) }
	g.mu.Lock()
	defer g.mu.Unlock()
	var resp interface{} = map[string]string{}
	switch r.URL.Path {
	case "/v3/lease/grant":
		resp = map[string]string{"ID": "7", "TTL": "10"}
	case "/v3/lease/keepalive":
		resp = map[string]interface{}{"result": map[string]string{"ID": field("ID"), "TTL": "10"}}
	case "/v3/kv/put":
		g.history = append(g.history, write{key: b64("key"), value: b64("value"), lease: field("lease")})
		resp = map[string]interface{}{"header": map[string]string{"revision": strconv.Itoa(len(g.history))}}
		if g.dropAfterPut != "" && strings.HasPrefix(b64("key"), g.dropAfterPut) {
			g.history = append(g.history, write{key: b64("key"), deleted: true})
		}
	case "/v3/kv/range":
		g.ranges++
		rev, _ := strconv.Atoi(field("revision"))
		var kvs []map[string]string
		for k, x := range g.at(rev) {
			if k == b64("key") || (field("range_end") != "" && strings.HasPrefix(k, b64("key"))) {
				kvs = append(kvs, map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(k)), "value": base64.StdEncoding.EncodeToString([]byte(x.value))})
			}
		}
		resp = map[string]interface{}{"kvs": kvs}
	default:
		http.NotFound(w, r)
		return
	}
	_ = json.NewEncoder(w).Encode(resp)
}

// get is a key as it was last written, deleted or not.
func (g *gateway) get(k string) (value, lease string, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := len(g.history) - 1; i >= 0; i-- {
		if w := g.history[i]; w.key == k && !w.deleted {
			return w.value, w.lease, true
		}
	}
	return "", "", false
}

// An elastic launcher finds its etcd at the name of PADDLE_MASTER as
// Paddle's strip("etcd://") leaves it, and leaves there its rendezvous
// record and its lease-bound heartbeat; a name that strip mangles fails
// the one lookup.
func TestElasticLauncher(t *testing.T) {
	dns := dnstest.Start(t)
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", dns.Addr)
	}}
	// Both names exist; what Paddle's strip makes of the second does not.
	dns.Set("paddle-etcd-el.ns.svc.", "127.0.0.1")
	dns.Set("etcd-client.ns.svc.", "127.0.0.1")
	for _, tc := range []struct {
		name, host, wantErr string
		// dropBeat: the heartbeat is deleted right after it is written,
		// as the job plugin's loss notice does once the pod is deleted;
		// the read-back is as of the write and still finds it.
		dropBeat bool
	}{
		{name: "our etcd name survives the strip", host: "paddle-etcd-el.ns.svc"},
		{name: "a name starting with etcd loses it", host: "etcd-client.ns.svc", wantErr: "resolving -client.ns.svc"},
		{name: "a heartbeat deleted before the read-back", host: "paddle-etcd-el.ns.svc", dropBeat: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gateway{}
			if tc.dropBeat {
				g.dropAfterPut = "/paddle/ns-el/heartbeat/"
			}
			srv := httptest.NewServer(g)
			defer srv.Close()
			_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
			env := map[string]string{"PADDLE_MASTER": "etcd://" + tc.host + ":" + port, "PADDLE_JOB_ID": "ns-el", "POD_IP": "127.0.0.9", "PROBE_POD_NAME": "el-worker-0"}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				r   Report
				err error
			}
			done := make(chan result, 1)
			go func() {
				r, err := Run(ctx, Config{Env: func(k string) string { return env[k] }, Resolver: resolver, Timeout: 5 * time.Second})
				done <- result{r, err}
			}()
			if tc.wantErr != "" {
				res := <-done
				if res.err == nil || !strings.Contains(res.err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", res.err, tc.wantErr)
				}
				return
			}
			// Registered (its keys written and read back: two ranges, then
			// the first beat reads the heartbeats: a third range, sent
			// only once the read-back is in the report); then the pod is
			// stopped. Stopped after the second range only, the read-back
			// may be cut short by the stop.
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
				g.mu.Lock()
				defer g.mu.Unlock()
				return g.ranges >= 3, nil
			}); err != nil {
				t.Fatalf("the launcher did not read its keys back: %v", err)
			}
			cancel()
			res := <-done
			if !errors.Is(res.err, context.Canceled) {
				t.Fatalf("err = %v, want the stop", res.err)
			}
			e := res.r.Etcd
			if e == nil || e.Endpoint != tc.host+":"+port || e.IP != "127.0.0.1:"+port || !strings.Contains(e.Health, `"health":"true"`) || len(e.Name) != 6 {
				t.Fatalf("report %+v", e)
			}
			if v, lease, _ := g.get("/paddle/ns-el/heartbeat/" + e.Name); v != e.Name || lease != "7" {
				t.Errorf("heartbeat %q with lease %q, want %q with the granted lease 7", v, lease, e.Name)
			}
			rec, _, _ := g.get("/ns-el/info/" + e.Name + "/-1")
			var r struct{ Name, Candidate string }
			if err := json.Unmarshal([]byte(rec), &r); err != nil || r.Name != e.Name || r.Candidate != "127.0.0.9:45000" {
				t.Errorf("rendezvous record %q", rec)
			}
			if len(e.Keys) != 2 {
				t.Errorf("read back %v, want the record and the heartbeat", e.Keys)
			}
		})
	}
}
