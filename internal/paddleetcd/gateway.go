// Package paddleetcd reads and writes what Paddle's elastic launchers keep
// in their job's etcd (keys.go), through etcd's v3 JSON gateway over HTTP.
// It imports nothing beyond the standard library, so that paddle-probe,
// which plays a launcher on the real node, stays small.
package paddleetcd

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Gateway talks to an etcd through its v3 JSON gateway (etcd serves it on
// the client port: POST /v3/kv/range, /v3/kv/deleterange with base64 keys
// and values, /v3/lease/grant, keepalive, timetolive and revoke). It needs no etcd Go client: that client's gRPC would have
// to follow the google.golang.org/grpc pin Volcano imposes on this binary,
// the pin that broke it inside kube-apiserver (design.md section 2).
type Gateway struct {
	// URL is the etcd client URL, http://host:port.
	URL    string
	Client *http.Client
	// RequestTimeout bounds one request; 0 is Timeout. Paddle's launcher
	// sets none (its etcd3 client waits as long as a stopped store
	// does), which paddle-probe plays with a long one.
	RequestTimeout time.Duration
}

// KV is one key, its value and its lease ("" or "0": none), and its
// version: the writes since the key was created (mvccpb.KeyValue.version),
// where GetKV read it.
type KV struct {
	Key, Value, Lease string
	Version           int64
}

// Timeout bounds one request: the loss notice is worth something
// only within the seconds before Paddle's lease expires on its own.
const Timeout = 2 * time.Second

func (g *Gateway) post(ctx context.Context, path string, req, resp interface{}) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	timeout := g.RequestTimeout
	if timeout == 0 {
		timeout = Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(g.URL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	c := g.Client
	if c == nil {
		c = http.DefaultClient
	}
	res, err := c.Do(r)
	if err != nil {
		return fmt.Errorf("etcd %s%s: %w", g.URL, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("etcd %s%s: %w", g.URL, path, err)
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s%s: %s: %s", g.URL, path, res.Status, bytes.TrimSpace(data))
	}
	return json.Unmarshal(data, resp)
}

// Base64 encodes a key or value as the gateway wants them.
func Base64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// FromBase64 decodes a key or value the gateway sent.
func FromBase64(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}

// PrefixEnd is the range end that makes a range request a prefix query
// (clientv3.GetPrefixRangeEnd).
func PrefixEnd(prefix string) string {
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return string(end[:i+1])
		}
	}
	return "\x00"
}

// Prefix returns the keys under prefix with their values.
func (g *Gateway) Prefix(ctx context.Context, prefix string) ([]KV, error) {
	return g.PrefixAt(ctx, prefix, 0)
}

// PrefixAt is Prefix as the keys were at revision rev (etcd's MVCC read,
// RangeRequest.revision; 0 is the latest): a write read back at its own
// revision, whatever was deleted since.
func (g *Gateway) PrefixAt(ctx context.Context, prefix string, rev int64) ([]KV, error) {
	var resp struct {
		KVs []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
			Lease string `json:"lease"`
		} `json:"kvs"`
	}
	req := map[string]string{"key": Base64(prefix), "range_end": Base64(PrefixEnd(prefix))}
	if rev > 0 {
		req["revision"] = strconv.FormatInt(rev, 10)
	}
	if err := g.post(ctx, "/v3/kv/range", req, &resp); err != nil {
		return nil, err
	}
	out := make([]KV, 0, len(resp.KVs))
	for _, kv := range resp.KVs {
		k, err := FromBase64(kv.Key)
		if err != nil {
			return nil, fmt.Errorf("etcd %s: key %q: %w", g.URL, kv.Key, err)
		}
		v, err := FromBase64(kv.Value)
		if err != nil {
			return nil, fmt.Errorf("etcd %s: value of %q: %w", g.URL, k, err)
		}
		out = append(out, KV{Key: k, Value: v, Lease: kv.Lease})
	}
	return out, nil
}

// Get returns a key's value and whether it exists.
func (g *Gateway) Get(ctx context.Context, key string) (string, bool, error) {
	var resp struct {
		KVs []struct {
			Value string `json:"value"`
		} `json:"kvs"`
	}
	if err := g.post(ctx, "/v3/kv/range", map[string]string{"key": Base64(key)}, &resp); err != nil {
		return "", false, err
	}
	if len(resp.KVs) == 0 {
		return "", false, nil
	}
	v, err := FromBase64(resp.KVs[0].Value)
	return v, err == nil, err
}

// GetKV returns a key with its value and lease, and whether it exists.
func (g *Gateway) GetKV(ctx context.Context, key string) (KV, bool, error) {
	var resp struct {
		KVs []struct {
			Value   string `json:"value"`
			Lease   string `json:"lease"`
			Version string `json:"version"`
		} `json:"kvs"`
	}
	if err := g.post(ctx, "/v3/kv/range", map[string]string{"key": Base64(key)}, &resp); err != nil {
		return KV{}, false, err
	}
	if len(resp.KVs) == 0 {
		return KV{}, false, nil
	}
	v, err := FromBase64(resp.KVs[0].Value)
	if err != nil {
		return KV{}, false, fmt.Errorf("etcd %s: value of %q: %w", g.URL, key, err)
	}
	version, _ := strconv.ParseInt(resp.KVs[0].Version, 10, 64)
	return KV{Key: key, Value: v, Lease: resp.KVs[0].Lease, Version: version}, true, nil
}

// HasLease says whether a KV's lease field names a lease (the gateway
// omits it, or writes "0", for a key without one).
func HasLease(lease string) bool { return lease != "" && lease != "0" }

// Revoke revokes a lease, which deletes every key bound to it in the same
// revision (etcd's LeaseRevoke), and reports whether the lease existed:
// false, without an error, when it had expired or was revoked already
// (etcd answers "requested lease not found"). A key put later with the
// revoked lease is refused with that same error.
func (g *Gateway) Revoke(ctx context.Context, lease string) (bool, error) {
	var resp struct{}
	err := g.post(ctx, "/v3/lease/revoke", map[string]string{"ID": lease}, &resp)
	if err != nil && IsLeaseNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// IsLeaseNotFound says whether err is etcd's refusal of a lease that does
// not exist (expired or revoked): ErrGRPCLeaseNotFound, which the gateway
// sends as 404 with "etcdserver: requested lease not found".
func IsLeaseNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), "requested lease not found")
}

// Delete deletes one key and returns how many keys went (0 or 1).
func (g *Gateway) Delete(ctx context.Context, key string) (int, error) {
	var resp struct {
		// int64 fields come as JSON strings (grpc-gateway's proto3 JSON).
		Deleted string `json:"deleted"`
	}
	if err := g.post(ctx, "/v3/kv/deleterange", map[string]string{"key": Base64(key)}, &resp); err != nil {
		return 0, err
	}
	if resp.Deleted == "" {
		return 0, nil
	}
	return strconv.Atoi(resp.Deleted)
}

// Put sets a key, bound to a lease unless lease is "" (tests write
// Paddle-shaped records with it), and returns the store's revision after
// the write (the gateway writes etcd's int64s as strings).
func (g *Gateway) Put(ctx context.Context, key, value, lease string) (int64, error) {
	req := map[string]string{"key": Base64(key), "value": Base64(value)}
	if lease != "" {
		req["lease"] = lease
	}
	var resp struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := g.post(ctx, "/v3/kv/put", req, &resp); err != nil {
		return 0, err
	}
	if resp.Header.Revision == "" {
		return 0, nil
	}
	rev, err := strconv.ParseInt(resp.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd %s: put %q: revision %q: %w", g.URL, key, resp.Header.Revision, err)
	}
	return rev, nil
}

// DeletePrefix deletes every key under prefix, as Paddle's launchers do
// (etcd3 delete_prefix).
func (g *Gateway) DeletePrefix(ctx context.Context, prefix string) error {
	var resp struct{}
	return g.post(ctx, "/v3/kv/deleterange", map[string]string{"key": Base64(prefix), "range_end": Base64(PrefixEnd(prefix))}, &resp)
}

// Grant creates a lease of ttl seconds and returns its id.
func (g *Gateway) Grant(ctx context.Context, ttl int) (string, error) {
	var resp struct {
		ID string `json:"ID"`
	}
	if err := g.post(ctx, "/v3/lease/grant", map[string]int{"TTL": ttl}, &resp); err != nil {
		return "", err
	}
	return resp.ID, nil
}

// KeepAlive refreshes a lease once, as a Paddle launcher's heartbeat does
// every ttl/2 (controllers/master.py: register_heartbeat, etcd3's
// Lease.refresh), and returns the lease's TTL in seconds: 0 once it has
// expired. The gateway streams the answers of etcd's LeaseKeepAlive; one
// request gets one answer.
func (g *Gateway) KeepAlive(ctx context.Context, lease string) (int, error) {
	var resp struct {
		Result struct {
			TTL string `json:"TTL"`
		} `json:"result"`
	}
	if err := g.post(ctx, "/v3/lease/keepalive", map[string]string{"ID": lease}, &resp); err != nil {
		return 0, err
	}
	if resp.Result.TTL == "" {
		return 0, nil
	}
	return strconv.Atoi(resp.Result.TTL)
}

// TimeToLive is how many seconds a lease has left (-1 once it has
// expired), etcd's LeaseTimeToLive.
func (g *Gateway) TimeToLive(ctx context.Context, lease string) (int, error) {
	var resp struct {
		TTL string `json:"TTL"`
	}
	if err := g.post(ctx, "/v3/lease/timetolive", map[string]string{"ID": lease}, &resp); err != nil {
		return 0, err
	}
	return strconv.Atoi(resp.TTL)
}
