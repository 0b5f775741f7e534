package paddleetcd

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The requests the loss notice makes, and the answers of a real etcd
// 3.6 gateway (recorded with curl against bin/etcd): a range of one key
// carries its lease; a revoke of a lease that is gone is 404 with
// "requested lease not found", which is no error to Revoke.
func TestGetKVAndRevoke(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]string
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("%s: %v", r.URL.Path, err)
		}
		got = append(got, r.URL.Path+" "+req["key"]+req["ID"])
		switch {
		case r.URL.Path == "/v3/kv/range" && req["key"] == Base64("/paddle/j/heartbeat/abcdef"):
			_, _ = w.Write([]byte(`{"header":{"revision":"2"},"kvs":[{"key":"` + Base64("/paddle/j/heartbeat/abcdef") + `","create_revision":"2","mod_revision":"2","version":"1","value":"` + Base64("abcdef") + `","lease":"7587899197189595654"}],"count":"1"}`))
		case r.URL.Path == "/v3/kv/range":
			_, _ = w.Write([]byte(`{"header":{"revision":"2"}}`))
		case r.URL.Path == "/v3/lease/revoke" && req["ID"] == "7587899197189595654":
			_, _ = w.Write([]byte(`{"header":{"revision":"3"}}`))
		case r.URL.Path == "/v3/lease/revoke":
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"code":5,"message":"etcdserver: requested lease not found"}`))
		default:
			http.Error(w, "unexpected", http.StatusTeapot)
		}
	}))
	defer srv.Close()
	g := &Gateway{URL: srv.URL}
	ctx := context.Background()
	kv, ok, err := g.GetKV(ctx, "/paddle/j/heartbeat/abcdef")
	if err != nil || !ok || kv.Value != "abcdef" || kv.Lease != "7587899197189595654" || !HasLease(kv.Lease) {
		t.Fatalf("GetKV = %+v, %v, %v", kv, ok, err)
	}
	if _, ok, err := g.GetKV(ctx, "/paddle/j/heartbeat/zzzzzz"); ok || err != nil {
		t.Fatalf("GetKV of a missing key = %v, %v", ok, err)
	}
	if revoked, err := g.Revoke(ctx, kv.Lease); !revoked || err != nil {
		t.Fatalf("Revoke = %v, %v", revoked, err)
	}
	if revoked, err := g.Revoke(ctx, "42"); revoked || err != nil {
		t.Fatalf("Revoke of a lease that is gone = %v, %v; want false, nil", revoked, err)
	}
	want := []string{"/v3/kv/range " + Base64("/paddle/j/heartbeat/abcdef"), "/v3/kv/range " + Base64("/paddle/j/heartbeat/zzzzzz"),
		"/v3/lease/revoke 7587899197189595654", "/v3/lease/revoke 42"}
	if len(got) != len(want) {
		t.Fatalf("requests %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: %q, want %q", i, got[i], want[i])
		}
	}
	if HasLease("") || HasLease("0") {
		t.Errorf("no lease taken for one")
	}
}
