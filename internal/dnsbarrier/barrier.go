// Package dnsbarrier waits until every peer host name of a Paddle job has an
// address in the cluster DNS, without ever letting a "no such name" answer
// stick in the DNS cache.
//
// CoreDNS's cache (plugin/cache/cache.go: key, hash) keys an answer on the
// lower-cased question name, the question type and the DO and CD bits, and
// keeps a negative answer (NXDOMAIN) for up to its negative TTL (30 s with
// the usual Kubernetes Corefile `cache 30`). A barrier that asks for A while
// a peer's record is still being created gets NXDOMAIN, and so does every A
// question for that name for the next 30 s: the barrier itself and, worse,
// Paddle's own getaddrinfo after it, which resolves once and fails.
//
// So the barrier first asks whether the name exists with question types
// nobody else asks: CoreDNS's kubernetes plugin (plugin/kubernetes/handler.go:
// ServeDNS, default branch) answers a type it has no records for by a fake A
// lookup, NODATA when the name exists and NXDOMAIN when it does not. Every
// probe uses a type from the private-use range (RFC 6895 section 3.1) not
// used before for that name, so no probe can be answered from its own cached
// NXDOMAIN; the rotation takes longer than any negative TTL before it comes
// round again. Only after NOERROR does it ask A (and AAAA if there is no A),
// whose positive answer is then what the cache holds for Paddle.
package dnsbarrier

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/miekg/dns"
	"k8s.io/klog/v2"
)

// Probe question types: RFC 6895's private-use range 65280-65534. Each name
// gets them in turn; with the default interval one round takes 51 s, longer
// than CoreDNS's negative TTL (`cache 30`; its maximum default is 30 min but
// Kubernetes' Corefile and the kubernetes plugin's SOA minimum say 30 s or
// less, and the DO bit doubles the key space for longer caches).
const (
	firstProbeType = 65280
	probeTypes     = 255
)

// Config says what to wait for and where to ask.
type Config struct {
	// Hosts are the peers' names as Paddle's env has them (e.g.
	// "wd-ps-0.wd"): relative names, tried under Search like a pod's
	// resolver does with its search list.
	Hosts []string
	// Search is the first search domain of the pod's resolv.conf
	// (<namespace>.svc.<cluster domain>); empty means the hosts are absolute.
	Search string
	// Servers are the name servers, host:port.
	Servers []string
	// Timeout bounds the whole wait.
	Timeout time.Duration
	// Interval between two rounds of questions (default 200ms).
	Interval time.Duration
	// QueryTimeout bounds one question (default 1s).
	QueryTimeout time.Duration
}

// Result is what the barrier found.
type Result struct {
	// Addresses by host, as the A (or AAAA) answer gave them.
	Addresses map[string][]string
	// Questions is how many questions were sent in all.
	Questions int
	// Elapsed is the time from start to the last address.
	Elapsed time.Duration
}

// Report is what paddle-barrier writes to its termination message (visible
// in the pod's status) when it passes.
type Report struct {
	// Passed is when the last peer got its address (RFC 3339, nanoseconds).
	Passed    string              `json:"passed"`
	Elapsed   string              `json:"elapsed"`
	Questions int                 `json:"questions"`
	Addresses map[string][]string `json:"addresses"`
}

// NotResolvedError names the hosts that had no address when time ran out.
type NotResolvedError struct {
	Names   []string
	Timeout time.Duration
	Last    map[string]string
}

func (e *NotResolvedError) Error() string {
	verb := "do not resolve"
	if len(e.Names) == 1 {
		verb = "does not resolve"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s after %s; is the job's headless Service there and are its pods scheduled?", strings.Join(e.Names, ", "), verb, e.Timeout)
	for _, n := range e.Names {
		if l := e.Last[n]; l != "" {
			fmt.Fprintf(&b, " (%s: %s)", n, l)
		}
	}
	return b.String()
}

// FQDN is the name the barrier asks for host.
func FQDN(host, search string) string {
	host = strings.TrimSuffix(host, ".")
	if search = strings.Trim(search, "."); search != "" {
		return dns.Fqdn(host + "." + search)
	}
	return dns.Fqdn(host)
}

type peer struct {
	name   string
	exists bool
	probes int
	last   string
}

// Wait asks, every Interval, each name that has no address yet, until all
// have one or Timeout passes.
func Wait(ctx context.Context, cfg Config) (*Result, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("no name server configured")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 200 * time.Millisecond
	}
	if cfg.QueryTimeout <= 0 {
		cfg.QueryTimeout = time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	start := time.Now()
	res := &Result{Addresses: map[string][]string{}}
	// In the order of the env (pods are created in that order), each host
	// once.
	var pending []string
	peers := map[string]*peer{}
	for _, h := range cfg.Hosts {
		if h = strings.TrimSpace(h); h != "" && peers[h] == nil {
			peers[h] = &peer{name: FQDN(h, cfg.Search)}
			pending = append(pending, h)
		}
	}
	client := &dns.Client{Net: "udp", Timeout: cfg.QueryTimeout}
	tick := time.NewTicker(cfg.Interval)
	defer tick.Stop()
	for {
		// A round goes down the pending hosts and stops at the first that
		// does not resolve yet: the others most likely do not either, and
		// every pod of a large gang asking for every peer five times a
		// second would flood the DNS server. Once the names exist, one
		// round resolves them all.
		for len(pending) > 0 {
			p := peers[pending[0]]
			addrs, err := step(ctx, client, cfg.Servers, p, &res.Questions)
			if err != nil {
				p.last = err.Error()
				klog.V(2).InfoS("peer not resolved yet", "name", p.name, "reason", p.last)
				break
			}
			res.Addresses[pending[0]] = addrs
			klog.V(1).InfoS("peer resolves", "name", p.name, "addresses", addrs, "probes", p.probes)
			pending = pending[1:]
		}
		if len(pending) == 0 {
			res.Elapsed = time.Since(start)
			return res, nil
		}
		select {
		case <-ctx.Done():
			e := &NotResolvedError{Timeout: cfg.Timeout, Last: map[string]string{}}
			for _, h := range pending {
				n := strings.TrimSuffix(peers[h].name, ".")
				e.Names = append(e.Names, n)
				e.Last[n] = peers[h].last
			}
			sort.Strings(e.Names)
			return res, e
		case <-tick.C:
		}
	}
}

// step moves one peer on: an existence probe until the name exists, then
// the address question. It returns the addresses once there are some.
func step(ctx context.Context, c *dns.Client, servers []string, p *peer, questions *int) ([]string, error) {
	if !p.exists {
		qtype := uint16(firstProbeType + p.probes%probeTypes)
		p.probes++
		r, err := ask(ctx, c, servers, p.name, qtype, questions)
		if err != nil {
			return nil, err
		}
		switch r.Rcode {
		case dns.RcodeSuccess:
			p.exists = true
		case dns.RcodeNameError:
			return nil, errors.New("no such name yet")
		default:
			return nil, fmt.Errorf("server answered %s", dns.RcodeToString[r.Rcode])
		}
	}
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		r, err := ask(ctx, c, servers, p.name, qtype, questions)
		if err != nil {
			return nil, err
		}
		if r.Rcode != dns.RcodeSuccess {
			// The name existed a moment ago: it went again (a pod was
			// deleted); start over with existence probes.
			p.exists = false
			return nil, fmt.Errorf("%s question answered %s after the name existed", dns.TypeToString[qtype], dns.RcodeToString[r.Rcode])
		}
		var addrs []string
		for _, rr := range r.Answer {
			switch a := rr.(type) {
			case *dns.A:
				addrs = append(addrs, a.A.String())
			case *dns.AAAA:
				addrs = append(addrs, a.AAAA.String())
			}
		}
		if len(addrs) > 0 {
			return addrs, nil
		}
	}
	return nil, errors.New("the name exists but has no address")
}

// ask sends one question to each server in turn until one answers.
func ask(ctx context.Context, c *dns.Client, servers []string, name string, qtype uint16, questions *int) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	var errs []error
	for _, s := range servers {
		*questions++
		r, _, err := c.ExchangeContext(ctx, m, s)
		if err == nil {
			return r, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", s, err))
	}
	return nil, errors.Join(errs...)
}

// FromResolvConf reads the name servers and the first search domain the way
// a pod's resolver would.
func FromResolvConf(path string) (servers []string, search string, err error) {
	cc, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", path, err)
	}
	for _, s := range cc.Servers {
		servers = append(servers, net.JoinHostPort(s, cc.Port))
	}
	if len(cc.Search) > 0 {
		search = cc.Search[0]
	}
	return servers, search, nil
}
