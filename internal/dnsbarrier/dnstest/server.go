// Package dnstest runs an in-process DNS server that answers like CoreDNS's
// kubernetes plugin behind its cache plugin, for tests of the barrier:
//
//   - records: A for names that exist; NODATA for any other type of an
//     existing name and NXDOMAIN for a missing one (plugin/kubernetes/
//     handler.go: ServeDNS, whose default branch does a fake A lookup);
//   - cache: answers are kept per (lower-cased name, type, DO, CD)
//     (plugin/cache/cache.go: key, hash), positive ones for PositiveTTL and
//     NXDOMAIN/NODATA for NegativeTTL, and served from there until they
//     expire, whatever happened to the records meanwhile.
package dnstest

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Query is one question the backend (not the cache) answered.
type Query struct {
	Name  string
	Type  uint16
	Rcode int
	At    time.Time
}

// Server is the fake DNS server.
type Server struct {
	// Addr is host:port (UDP on loopback).
	Addr string

	PositiveTTL, NegativeTTL time.Duration

	mu      sync.Mutex
	records map[string][]net.IP
	cache   map[cacheKey]cached
	asked   []Query
	srv     *dns.Server
}

type cacheKey struct {
	name   string
	qtype  uint16
	do, cd bool
}

type cached struct {
	msg     *dns.Msg
	expires time.Time
}

// Start serves on a free loopback UDP port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{
		Addr: pc.LocalAddr().String(), PositiveTTL: 30 * time.Second, NegativeTTL: 30 * time.Second,
		records: map[string][]net.IP{}, cache: map[cacheKey]cached{},
	}
	started := make(chan struct{})
	s.srv = &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serve), NotifyStartedFunc: func() { close(started) }}
	go func() { _ = s.srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = s.srv.Shutdown() })
	return s
}

// Set makes name (absolute, any case) resolve to ips; no ips removes it.
func (s *Server) Set(name string, ips ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name = strings.ToLower(dns.Fqdn(name))
	if len(ips) == 0 {
		delete(s.records, name)
		return
	}
	var parsed []net.IP
	for _, ip := range ips {
		parsed = append(parsed, net.ParseIP(ip))
	}
	s.records[name] = parsed
}

// Asked returns the questions that reached the backend, in order.
func (s *Server) Asked() []Query {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Query(nil), s.asked...)
}

// CachedRcode says what the cache holds for (name, qtype) without DO/CD:
// the rcode and whether the answer had records; ok is false when nothing
// (unexpired) is cached.
func (s *Server) CachedRcode(name string, qtype uint16) (rcode int, answers int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, found := s.cache[cacheKey{name: strings.ToLower(dns.Fqdn(name)), qtype: qtype}]
	if !found || time.Now().After(c.expires) {
		return 0, 0, false
	}
	return c.msg.Rcode, len(c.msg.Answer), true
}

func (s *Server) serve(w dns.ResponseWriter, r *dns.Msg) {
	if len(r.Question) != 1 {
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeFormatError)
		_ = w.WriteMsg(m)
		return
	}
	q := r.Question[0]
	do := false
	if o := r.IsEdns0(); o != nil {
		do = o.Do()
	}
	k := cacheKey{name: strings.ToLower(q.Name), qtype: q.Qtype, do: do, cd: r.CheckingDisabled}

	s.mu.Lock()
	now := time.Now()
	if c, ok := s.cache[k]; ok && now.Before(c.expires) {
		m := c.msg.Copy()
		m.Id = r.Id
		s.mu.Unlock()
		_ = w.WriteMsg(m)
		return
	}
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	ips, exists := s.records[k.name]
	switch {
	case !exists:
		m.Rcode = dns.RcodeNameError
	case q.Qtype == dns.TypeA:
		for _, ip := range ips {
			if v4 := ip.To4(); v4 != nil {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: uint32(s.PositiveTTL.Seconds())}, A: v4})
			}
		}
	}
	ttl := s.NegativeTTL
	if len(m.Answer) > 0 {
		ttl = s.PositiveTTL
	}
	s.cache[k] = cached{msg: m.Copy(), expires: now.Add(ttl)}
	s.asked = append(s.asked, Query{Name: k.name, Type: q.Qtype, Rcode: m.Rcode, At: now})
	s.mu.Unlock()
	_ = w.WriteMsg(m)
}
