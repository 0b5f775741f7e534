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
// beating until it is stopped, putting its heartbeat key back with its
// lease whenever it is missing, as Paddle's heartbeat thread does
// (Heartbeat): the loss notice must keep it away by revoking the lease.
// It then runs Paddle's elastic loop (rendezvous.go), and exits as Paddle
// does on its store's faults. It wipes the job's keys when it starts only
// when asked (Config.WipeOnStart).

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
	// Worlds are the worlds the launcher formed, in order (launcher.run).
	Worlds []World `json:"worlds,omitempty"`
	// StoreLost is the store's error the launcher exited on (a failed
	// call, or an interruption its watch saw), if it did.
	StoreLost string `json:"storeLost,omitempty"`
}

// etcdScheme is the scheme of PADDLE_MASTER that selects ETCDMaster.
const etcdScheme = "etcd://"

// storeWait is how long the probe waits for one answer of its store.
const storeWait = 10 * time.Minute

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
func (p *probe) elastic(ctx context.Context) (err error) {
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
	// From here on, any failed call to the store ends the launcher, as an
	// exception of the etcd3 client ends Paddle's.
	defer func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil && ctx.Err() == nil && rep.StoreLost == "" {
			rep.StoreLost = err.Error()
		}
	}()
	// No practical bound on a request, as Paddle's etcd3 client sets none:
	// a stopped store makes the launcher wait, a gone one fails at once.
	g := &paddleetcd.Gateway{URL: "http://" + a, RequestTimeout: storeWait}
	if p.WipeOnStart {
		if err := g.DeletePrefix(ctx, paddleetcd.StatusKey(jobID)); err != nil {
			return err
		}
	}
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
	bounds, err := worldBoundsOf(p.Env("PADDLE_NNODES"), p.Env("PADDLE_ELASTIC_TIMEOUT"))
	if err != nil {
		return err
	}
	beatCtx, stopBeats := context.WithCancel(ctx)
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		Heartbeat(beatCtx, g, jobID, rep.Name, lease, heartbeatTTL/2*time.Second, func() {
			p.mu.Lock()
			rep.Beats++
			p.mu.Unlock()
		})
	}()
	err = (&launcher{g: g, jobID: jobID, name: rep.Name, record: string(record), bounds: bounds, worlds: func(w World) {
		p.mu.Lock()
		rep.Worlds = append(rep.Worlds, w)
		p.mu.Unlock()
	}}).run(ctx)
	stopBeats()
	<-beating
	if err != nil {
		return err
	}
	return ctx.Err()
}

// Heartbeat plays the heartbeat thread of Paddle's launcher
// (controllers/master.py: ETCDMaster.register_heartbeat, its _heartbeat
// loop, the same in v2.6.2 and v3.0.0-beta2) until ctx ends, which is the
// launcher's SIGTERM (controllers/controller.py: signal_handler stops it
// and exits): every interval (ttl/2 in Paddle) it refreshes the one lease
// granted at registration, and when no heartbeat under the job's prefix
// holds the launcher's name (fetch_peer_alive) it puts its key back with
// that same lease. Paddle catches and logs every exception of a beat and
// goes on: it never grants another lease, so once the lease is revoked
// or expired, etcd refuses the put ("requested lease not found") at every
// beat and the key stays away. beat, if not nil, is called after each
// refresh that found the lease alive.
func Heartbeat(ctx context.Context, g *paddleetcd.Gateway, jobID, name, lease string, interval time.Duration, beat func()) {
	key := paddleetcd.HeartbeatKey(jobID, name)
	for ctx.Err() == nil {
		err := func() error {
			ttl, err := g.KeepAlive(ctx, lease)
			if err != nil {
				return err
			}
			if ttl > 0 && beat != nil {
				beat()
			}
			kvs, err := g.Prefix(ctx, paddleetcd.HeartbeatPrefix(jobID))
			if err != nil {
				return err
			}
			for _, kv := range kvs {
				if kv.Value == name {
					return nil
				}
			}
			if _, err := g.Put(ctx, key, name, lease); err != nil {
				return err
			}
			klog.V(2).InfoS("Heartbeat register again", "key", key)
			return nil
		}()
		if err != nil && ctx.Err() == nil {
			klog.InfoS("Heartbeat error", "key", key, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
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
