package paddleprobe

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/volcano-paddle/volcano-paddle/internal/dnsbarrier/dnstest"
)

// A PS job with gloo on loopback: names resolve through a DNS server to
// 127.0.0.x, pservers listen on their own endpoints, trainers reach each.
func TestPSJobOnLoopback(t *testing.T) {
	s := dnstest.Start(t)
	ips := map[string]string{"wd-ps-0.wd": "127.0.0.2", "wd-ps-1.wd": "127.0.0.3", "wd-worker-0.wd": "127.0.0.4", "wd-worker-1.wd": "127.0.0.5"}
	for h, ip := range ips {
		s.Set(h+".", ip)
	}
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.Addr)
	}}
	common := map[string]string{
		"PADDLE_PSERVERS_IP_PORT_LIST": "wd-ps-0.wd:36100,wd-ps-1.wd:36100",
		"PADDLE_PSERVERS":              "wd-ps-0.wd:36100,wd-ps-1.wd:36101",
		"PADDLE_TRAINER_ENDPOINTS":     "wd-worker-0.wd:36100,wd-worker-1.wd:36100",
		"PADDLE_TRAINERS_NUM":          "2", "PADDLE_PORT": "36100",
		"PADDLE_WITH_GLOO": "1", "PADDLE_GLOO_HTTP_ENDPOINT": "wd-ps-0.wd:36118",
	}
	env := func(pod, role, id string) func(string) string {
		m := map[string]string{"POD_IP": pod, "TRAINING_ROLE": role, "PROBE_POD_NAME": strings.SplitN(pod, ".", 2)[0], "PROBE_POD_UID": "uid-" + pod}
		if role == "PSERVER" {
			m["PADDLE_PSERVER_ID"] = id
		} else {
			m["PADDLE_TRAINER_ID"] = id
		}
		return func(k string) string {
			if v, ok := m[k]; ok {
				return v
			}
			return common[k]
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	pserverReports := make([]Report, 2)
	for i, h := range []string{"wd-ps-0.wd", "wd-ps-1.wd"} {
		wg.Add(1)
		go func(i int, h string) {
			defer wg.Done()
			pserverReports[i], _ = Run(ctx, Config{Env: env(h, "PSERVER", string(rune('0'+i))), Resolver: resolver, Timeout: 10 * time.Second})
		}(i, h)
	}
	for i, h := range []string{"wd-worker-0.wd", "wd-worker-1.wd"} {
		r, err := Run(context.Background(), Config{Env: env(h, "TRAINER", string(rune('0'+i))), Resolver: resolver, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("trainer %d: %v (%+v)", i, err, r)
		}
		// Every pserver endpoint of both lists (deduplicated) and the gloo store.
		want := map[string]string{"wd-ps-0.wd:36100": "wd-ps-0", "wd-ps-1.wd:36100": "wd-ps-1", "wd-ps-1.wd:36101": "wd-ps-1", "wd-ps-0.wd:36118": "wd-ps-0"}
		if len(r.Connections) != len(want) {
			t.Errorf("trainer %d made %d connections, want %d: %+v", i, len(r.Connections), len(want), r.Connections)
		}
		for _, c := range r.Connections {
			host := strings.Split(c.Endpoint, ":")[0]
			if c.Server.Pod != want[c.Endpoint] || c.Server.Endpoint != c.Endpoint || !strings.HasPrefix(c.Server.Addr, ips[host]+":") || !strings.HasPrefix(c.IP, ips[host]+":") {
				t.Errorf("trainer %d: connection %+v", i, c)
			}
		}
		if len(r.Resolved) != 4 {
			t.Errorf("trainer %d resolved %v", i, r.Resolved)
		}
	}
	cancel()
	wg.Wait()
	if got := len(pserverReports[0].Accepted); got != 4 {
		t.Errorf("pserver 0 accepted %d connections (2 trainers x PS + gloo), want 4", got)
	}
	if got := pserverReports[1].Listened; len(got) != 2 {
		t.Errorf("pserver 1 listened on %v, want its two endpoints", got)
	}
}

// A host that does not resolve ends the probe at once: one lookup, no retry.
func TestUnresolvableHostFailsOnce(t *testing.T) {
	s := dnstest.Start(t)
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.Addr)
	}}
	env := map[string]string{"PADDLE_TRAINER_ENDPOINTS": "c-worker-0.c:36000", "PADDLE_TRAINERS_NUM": "1", "PADDLE_TRAINER_ID": "0", "POD_IP": "c-worker-0.c"}
	start := time.Now()
	_, err := Run(context.Background(), Config{Env: func(k string) string { return env[k] }, Resolver: resolver, Timeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "resolving c-worker-0.c") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s: it retried", d)
	}
}
