package dnsbarrier

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volcano-paddle/volcano-paddle/internal/dnsbarrier/dnstest"
)

const search = "ml.svc.cluster.local"

// lookupA asks what Paddle's getaddrinfo asks after the barrier: A, through
// the cache.
func lookupA(t *testing.T, server, name string) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	r, err := dns.Exchange(m, server)
	if err != nil {
		t.Fatalf("A %s: %v", name, err)
	}
	return r
}

// The model of CoreDNS's cache is what makes the other tests mean anything:
// an A question asked before the record exists pins NXDOMAIN for the
// negative TTL, which is how the old nslookup barrier waited 30 s.
func TestCacheModelPinsNegativeAnswers(t *testing.T) {
	s := dnstest.Start(t)
	name := FQDN("wd-ps-0.wd", search)
	if r := lookupA(t, s.Addr, name); r.Rcode != dns.RcodeNameError {
		t.Fatalf("missing name: rcode %s, want NXDOMAIN", dns.RcodeToString[r.Rcode])
	}
	s.Set(name, "198.18.0.7")
	if r := lookupA(t, s.Addr, name); r.Rcode != dns.RcodeNameError {
		t.Fatalf("after the record appeared the cache answered %s; a CoreDNS-like cache keeps NXDOMAIN", dns.RcodeToString[r.Rcode])
	}
	// A type nobody asked yet reaches the backend: NODATA.
	m := new(dns.Msg)
	m.SetQuestion(name, firstProbeType)
	r, err := dns.Exchange(m, s.Addr)
	if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
		t.Fatalf("probe type on an existing name: %v %v, want NOERROR without answers", r, err)
	}
}

func TestWaitNeverCachesANegativeAddressAnswer(t *testing.T) {
	s := dnstest.Start(t)
	hosts := []string{"wd-ps-0.wd", "wd-ps-1.wd", "wd-worker-0.wd"}
	ips := []string{"198.18.0.10", "198.18.0.11", "198.18.0.12"}
	// The records appear one by one, each only after the barrier has been
	// told at least once that it does not exist (the race of a fresh job:
	// its first lookups come before the peers' records), so every probe
	// before that is answered NXDOMAIN and cached.
	appeared := make(chan error, 1)
	go func() {
		for i, h := range hosts {
			name := FQDN(h, search)
			err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true,
				func(context.Context) (bool, error) { return askedAndDenied(s, name), nil })
			if err != nil {
				appeared <- fmt.Errorf("the barrier never asked about %s: %w", name, err)
				return
			}
			s.Set(name, ips[i])
		}
		appeared <- nil
	}()
	start := time.Now()
	res, err := Wait(context.Background(), Config{Hosts: hosts, Search: search, Servers: []string{s.Addr}, Timeout: 20 * time.Second, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if err := <-appeared; err != nil {
		t.Fatal(err)
	}
	// Far below the 30 s a cached NXDOMAIN would cost, with room for a
	// loaded machine.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("passed %s after start although every record appeared right after its first NXDOMAIN", d)
	}
	for i, h := range hosts {
		if got := res.Addresses[h]; len(got) != 1 || got[0] != ips[i] {
			t.Errorf("%s: addresses %v, want [%s]", h, got, ips[i])
		}
	}
	for _, q := range s.Asked() {
		if (q.Type == dns.TypeA || q.Type == dns.TypeAAAA) && q.Rcode != dns.RcodeSuccess {
			t.Errorf("asked %s for %s and got %s: that negative answer now sits in the cache", dns.TypeToString[q.Type], q.Name, dns.RcodeToString[q.Rcode])
		}
	}
	// What Paddle asks next is answered from the cache, positively.
	for i, h := range hosts {
		rcode, n, ok := s.CachedRcode(FQDN(h, search), dns.TypeA)
		if !ok || rcode != dns.RcodeSuccess || n != 1 {
			t.Errorf("cache for A %s: rcode %d, %d answers, cached %v; want the address", h, rcode, n, ok)
		}
		if r := lookupA(t, s.Addr, FQDN(h, search)); len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != ips[i] {
			t.Errorf("A %s after the barrier: %v", h, r.Answer)
		}
	}
}

func TestWaitNeverReusesAProbeTypeWithinANegativeTTL(t *testing.T) {
	s := dnstest.Start(t)
	// No record ever appears: every probe is NXDOMAIN, each with a fresh
	// type, so none is answered from the cache.
	_, err := Wait(context.Background(), Config{Hosts: []string{"a.wd"}, Search: search, Servers: []string{s.Addr}, Timeout: 1500 * time.Millisecond, Interval: 50 * time.Millisecond})
	var nr *NotResolvedError
	if !errors.As(err, &nr) {
		t.Fatalf("Wait: %v, want a NotResolvedError", err)
	}
	seen := map[uint16]bool{}
	asked := s.Asked()
	if len(asked) < 10 {
		t.Fatalf("only %d probes reached the server in 1.5 s", len(asked))
	}
	for _, q := range asked {
		if q.Type == dns.TypeA || q.Type == dns.TypeAAAA {
			t.Errorf("asked %s for a name that does not exist", dns.TypeToString[q.Type])
		}
		if seen[q.Type] {
			t.Errorf("probe type %d used twice", q.Type)
		}
		seen[q.Type] = true
	}
	if probeTypes*200*time.Millisecond <= 30*time.Second {
		t.Errorf("a round of %d probe types at the default interval takes %s, not longer than a 30 s negative TTL", probeTypes, probeTypes*200*time.Millisecond)
	}
}

func TestWaitTimesOutNamingTheMissingPeers(t *testing.T) {
	s := dnstest.Start(t)
	s.Set(FQDN("wd-ps-0.wd", search), "198.18.0.10")
	start := time.Now()
	_, err := Wait(context.Background(), Config{Hosts: []string{"wd-ps-0.wd", "wd-worker-0.wd"}, Search: search, Servers: []string{s.Addr}, Timeout: time.Second})
	if err == nil {
		t.Fatal("passed although wd-worker-0.wd never resolves")
	}
	want := "wd-worker-0.wd.ml.svc.cluster.local does not resolve after 1s; is the job's headless Service there"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
	if strings.Contains(err.Error(), "wd-ps-0") {
		t.Errorf("error names a peer that resolved: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s with a 1 s timeout", d)
	}
}

// A round stops at the first name that does not resolve: the names after it
// are not asked until it does.
func TestWaitAsksInOrderAndStopsAtTheFirstMissingName(t *testing.T) {
	s := dnstest.Start(t)
	hosts := []string{"wd-ps-0.wd", "wd-ps-1.wd", "wd-worker-0.wd"}
	s.Set(FQDN(hosts[0], search), "198.18.0.10")
	s.Set(FQDN(hosts[2], search), "198.18.0.12")
	_, err := Wait(context.Background(), Config{Hosts: hosts, Search: search, Servers: []string{s.Addr}, Timeout: 600 * time.Millisecond, Interval: 50 * time.Millisecond})
	if err == nil {
		t.Fatal("passed although wd-ps-1.wd never resolves")
	}
	for _, q := range s.Asked() {
		if q.Name == FQDN(hosts[2], search) {
			t.Errorf("asked %s (type %d) while %s, before it, did not resolve", q.Name, q.Type, hosts[1])
		}
	}
}

func TestWaitStartsOverWhenANameGoesAway(t *testing.T) {
	s := dnstest.Start(t)
	s.NegativeTTL = 0 // no caching: the backend sees every question
	s.PositiveTTL = 0
	name := FQDN("wd-ps-0.wd", search)
	p := &peer{name: name}
	c := &dns.Client{Timeout: time.Second}
	var n int
	s.Set(name, "198.18.0.10")
	if _, err := step(context.Background(), c, []string{s.Addr}, p, &n); err != nil || !p.exists {
		t.Fatalf("first step: %v, exists %v", err, p.exists)
	}
	// The pod went between the probe and the A question.
	p2 := &peer{name: name, exists: true}
	s.Set(name)
	if addrs, err := step(context.Background(), c, []string{s.Addr}, p2, &n); err == nil || p2.exists || addrs != nil {
		t.Fatalf("A after the name went: addrs %v, err %v, exists %v; want an error and probing again", addrs, err, p2.exists)
	}
}

func TestFQDNAndResolvConf(t *testing.T) {
	if got := FQDN("wd-ps-0.wd", "ml.svc.cluster.local"); got != "wd-ps-0.wd.ml.svc.cluster.local." {
		t.Errorf("FQDN = %q", got)
	}
	if got := FQDN("wd-ps-0.wd.", ""); got != "wd-ps-0.wd." {
		t.Errorf("FQDN without search = %q", got)
	}
	p := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(p, []byte("nameserver 198.18.0.1\nsearch ml.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	servers, s, err := FromResolvConf(p)
	if err != nil || len(servers) != 1 || servers[0] != "198.18.0.1:53" || s != "ml.svc.cluster.local" {
		t.Errorf("FromResolvConf = %v %q %v", servers, s, err)
	}
}

// askedAndDenied reports whether the server has answered a question about
// name with NXDOMAIN.
func askedAndDenied(s *dnstest.Server, name string) bool {
	for _, q := range s.Asked() {
		if strings.EqualFold(q.Name, name) && q.Rcode == dns.RcodeNameError {
			return true
		}
	}
	return false
}
