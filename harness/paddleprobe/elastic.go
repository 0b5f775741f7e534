package paddleprobe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/volcano-paddle/volcano-paddle/internal/paddleetcd"
)

// The elastic launcher. With PADDLE_MASTER=etcd://HOST:PORT Paddle's
// launcher talks only to its job's etcd (controllers/master.py:
// ETCDMaster): it takes HOST:PORT as PADDLE_MASTER.strip("etcd://"),
// which removes the characters e, t, c, d, ':' and '/' from both ends, not
// the prefix (so a host like etcd-client.ns.svc loses its "etcd"), resolves
// it once, and keeps there a rendezvous record with its endpoint
// (controllers/collective.py: _build_pod_with_master, ETCDMaster.sync_peers)
// and a heartbeat key bound to a 10 s lease that it refreshes every 5 s
// (ETCDMaster.register_heartbeat). The probe does the same through etcd's
// v3 JSON gateway (internal/paddleetcd), reads its keys back, and keeps
// beating until it is stopped. Unlike Paddle it neither wipes the job's
// heartbeats when it starts nor puts back a heartbeat key someone deleted:
// the tests check the deletions of our controller's loss notice, which
// either would race.

// EtcdReport is what an elastic launcher did on its job's etcd.
type EtcdReport struct {
	// Endpoint is PADDLE_MASTER after Paddle's strip("etcd://").
	Endpoint string `json:"endpoint"`
	// IP is the address its one lookup gave, with the port.
	IP string `json:"ip"`
	// Health is etcd's answer to GET /health.
	Health string `json:"health"`
	// Name is the launcher's random name, which its keys hold.
	Name string `json:"name"`
	// Keys are the launcher's keys and values as a range read them back
	// after it wrote them.
	Keys map[string]string `json:"keys"`
	// Beats counts the lease refreshes.
	Beats int `json:"beats"`
}

// etcdScheme is the scheme of PADDLE_MASTER that selects ETCDMaster.
const etcdScheme = "etcd://"

// heartbeatTTL is Paddle's heartbeat lease (register_heartbeat's ttl=10);
// the launcher refreshes it every ttl/2.
const heartbeatTTL = 10

// masterEndpoint is what Paddle connects to for PADDLE_MASTER: for an etcd
// master, the value after Python's str.strip("etcd://"), which
// strings.Trim reproduces.
func masterEndpoint(v string) string {
	if strings.HasPrefix(v, etcdScheme) {
		return strings.Trim(v, etcdScheme)
	}
	return v
}

// elastic registers the launcher with its job's etcd and beats until ctx
// ends.
func (p *probe) elastic(ctx context.Context) error {
	ep := masterEndpoint(p.Env("PADDLE_MASTER"))
	a, err := p.addr(ep)
	if err != nil {
		return err
	}
	rep := &EtcdReport{Endpoint: ep, IP: a, Name: launcherName(), Keys: map[string]string{}}
	p.mu.Lock()
	p.report.Etcd = rep
	p.mu.Unlock()
	jobID := p.Env("PADDLE_JOB_ID")
	if jobID == "" {
		return fmt.Errorf("PADDLE_MASTER=%s without PADDLE_JOB_ID", p.Env("PADDLE_MASTER"))
	}
	// The etcd may still be starting: retry the address resolved once, as
	// the etcd3 client's connection does.
	var health string
	if _, err := p.retry(ctx, func(ctx context.Context) (err error) {
		health, err = etcdHealth(ctx, "http://"+a)
		return err
	}); err != nil {
		return fmt.Errorf("etcd at %s (%s): %w", ep, a, err)
	}
	rep.Health = health
	g := &paddleetcd.Gateway{URL: "http://" + a}
	lease, err := g.Grant(ctx, heartbeatTTL)
	if err != nil {
		return err
	}
	// Paddle's record (_build_pod_with_master); the probe serves nothing
	// at the candidate: only the etcd side is played.
	candidate := net.JoinHostPort(p.Env("POD_IP"), "45000")
	record, _ := json.Marshal(map[string]interface{}{
		"name": rep.Name, "rank": -1, "replicas": 1, "dtype": "cpu", "candidate": candidate, "endpoints": candidate,
	})
	info := paddleetcd.InfoPrefix(jobID) + rep.Name + "/-1"
	beat := paddleetcd.HeartbeatKey(jobID, rep.Name)
	if _, err := g.Put(ctx, info, string(record), ""); err != nil {
		return err
	}
	rev, err := g.Put(ctx, beat, rep.Name, lease)
	if err != nil {
		return err
	}
	// Read back as of the second write: once the keys are there, the pod
	// may be deleted and the job plugin may delete its heartbeat (the loss
	// notice) before this read, which must not count as a bad write.
	for _, prefix := range []string{info, beat} {
		kvs, err := g.PrefixAt(ctx, prefix, rev)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			rep.Keys[kv.Key] = kv.Value
		}
	}
	if rep.Keys[info] != string(record) || rep.Keys[beat] != rep.Name {
		return fmt.Errorf("etcd at %s read back %v, not what the launcher wrote", a, rep.Keys)
	}
	klog.InfoS("registered with the job's etcd", "endpoint", ep, "addr", a, "name", rep.Name, "heartbeat", beat)
	tick := time.NewTicker(heartbeatTTL / 2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		ttl, err := g.KeepAlive(ctx, lease)
		if err != nil {
			return fmt.Errorf("refreshing the heartbeat lease: %w", err)
		}
		if ttl == 0 {
			return fmt.Errorf("the heartbeat lease %s expired", lease)
		}
		rep.Beats++
	}
}

// launcherName is a random name of 6 lowercase letters, as Paddle names a
// launcher's pod (job/pod.py).
func launcherName() string {
	b := make([]byte, 6)
	for i := range b {
		b[i] = byte('a' + rand.IntN(26))
	}
	return string(b)
}

// etcdHealth is etcd's answer to GET /health ({"health":"true",...}).
func etcdHealth(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 4096))
	if err != nil {
		return "", err
	}
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /health: %s: %s", res.Status, b)
	}
	return strings.TrimSpace(string(b)), nil
}
