package paddleprobe

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volcano-paddle/volcano-paddle/internal/dnsbarrier/dnstest"
)

// gateway plays the calls of etcd's v3 JSON gateway an elastic launcher
// makes, over a map; the real etcd is test/e2e's (TestRealNodeElasticEtcd).
type gateway struct {
	mu     sync.Mutex
	kv     map[string]string
	leased map[string]string
	ranges int
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
		g.kv[b64("key")] = b64("value")
		g.leased[b64("key")] = field("lease")
	case "/v3/kv/range":
		g.ranges++
		var kvs []map[string]string
		for k, v := range g.kv {
			if k == b64("key") || (field("range_end") != "" && strings.HasPrefix(k, b64("key"))) {
				kvs = append(kvs, map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(k)), "value": base64.StdEncoding.EncodeToString([]byte(v))})
			}
		}
		resp = map[string]interface{}{"kvs": kvs}
	default:
		http.NotFound(w, r)
		return
	}
	_ = json.NewEncoder(w).Encode(resp)
}

func (g *gateway) get(k string) (value, lease string, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	value, ok = g.kv[k]
	return value, g.leased[k], ok
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
	}{
		{name: "our etcd name survives the strip", host: "paddle-etcd-el.ns.svc"},
		{name: "a name starting with etcd loses it", host: "etcd-client.ns.svc", wantErr: "resolving -client.ns.svc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gateway{kv: map[string]string{}, leased: map[string]string{}}
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
			// Registered (its keys written and read back: two ranges);
			// then the pod is stopped.
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
				g.mu.Lock()
				defer g.mu.Unlock()
				return g.ranges == 2, nil
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
