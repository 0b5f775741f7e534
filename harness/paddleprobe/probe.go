// Package paddleprobe does on the network what Paddle does when a
// distributed job starts, and reports it, for the real-node e2e tests (see
// docs/testing.md). It stands in for the trainer image of a Paddle job:
//
//   - it resolves every host named in the Paddle env exactly once, without
//     retrying, as Paddle's TCP store client and PS client do (a failed
//     lookup ends the process, as it crashes brpc);
//   - pservers listen on every endpoint of PADDLE_PSERVERS_IP_PORT_LIST and
//     PADDLE_PSERVERS whose host is their own POD_IP, bound to the address
//     that host resolves to (brpc binds the pod's own address, so a stale
//     record fails here); pserver 0 serves the gloo HTTP store at
//     PADDLE_GLOO_HTTP_ENDPOINT;
//   - in collective jobs, trainer 0 listens on PADDLE_MASTER (the TCP store)
//     and waits for every other trainer;
//   - trainers connect to every pserver (and the gloo store) or to the
//     master, retrying the connection to the address they resolved (as
//     brpc and the TCP store do) but never the lookup;
//   - in elastic jobs (PADDLE_MASTER=etcd://...), each pod registers with
//     the job's etcd as Paddle's elastic launcher does and keeps its
//     heartbeat (elastic.go).
//
// Every server answers a connection with who it is (pod name and UID from
// PROBE_POD_NAME and PROBE_POD_UID, set by the downward API). The report
// (JSON) is what harness/cmd/paddle-probe prints and writes to the termination
// message, where tests read it from the pod's status.
package paddleprobe

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Identity is what a server tells a client that connects.
type Identity struct {
	Pod      string `json:"pod"`
	UID      string `json:"uid"`
	Endpoint string `json:"endpoint"`
	// Addr is the server's own address of the connection.
	Addr string `json:"addr"`
}

// Connection is one connection a client made.
type Connection struct {
	Endpoint string   `json:"endpoint"`
	IP       string   `json:"ip"`
	Attempts int      `json:"attempts"`
	Server   Identity `json:"server"`
}

// Report is what the probe writes when it ends.
type Report struct {
	Pod  string `json:"pod"`
	UID  string `json:"uid"`
	Role string `json:"role"`
	// JobVersion is the incarnation the pod belongs to (PROBE_JOB_VERSION).
	JobVersion string `json:"jobVersion,omitempty"`
	// Resolved maps each host of the env to the address its one lookup gave.
	Resolved    map[string]string `json:"resolved"`
	Listened    []string          `json:"listened,omitempty"`
	Connections []Connection      `json:"connections,omitempty"`
	// Accepted are the client addresses servers saw.
	Accepted []string `json:"accepted,omitempty"`
	// Etcd is what an elastic launcher did on its job's etcd.
	Etcd  *EtcdReport `json:"etcd,omitempty"`
	Error string      `json:"error,omitempty"`
}

// Config is what a run needs.
type Config struct {
	// Env reads the Paddle env (os.Getenv in a pod).
	Env func(string) string
	// Timeout bounds how long clients retry connecting and the master
	// waits for its trainers.
	Timeout time.Duration
	// Resolver looks hosts up (net.DefaultResolver in a pod).
	Resolver *net.Resolver
	// FailUntilVersion makes trainer 0 exit with an error after its
	// connections while the job's version (PROBE_JOB_VERSION, the pod's
	// volcano.sh/job-version annotation) is below it: an injected failure
	// that a RestartJob policy answers, FailUntilVersion times in a row.
	FailUntilVersion int
	// FluidCTR plays seed 000's CTR image (elasticdeeplearning/edl
	// example/ctr/ctr/train.py: train) instead of fleet: a pserver's own
	// endpoint is POD_IP:(PADDLE_PORT+PADDLE_PSERVER_ID), which must be an
	// entry of PADDLE_PSERVERS (the Fluid DistributeTranspiler looks it up
	// there), and trainers connect to the PADDLE_PSERVERS entries.
	FluidCTR bool
	// WipeOnStart makes an elastic launcher delete its job's keys when it
	// starts, as Paddle's does (controllers/master.py:
	// ETCDMaster.register_heartbeat deletes /paddle/<job_id>, every
	// launcher's heartbeat included). The re-form benchmark plays it; the
	// e2e tests leave it off, so that a replacement's wipe does not race
	// their checks of the loss notice's removals.
	WipeOnStart bool
}

type probe struct {
	Config

	mu     sync.Mutex
	report Report
}

// Run does what Paddle does at start-up for the role the env gives, and
// returns when that role is done (a pserver: when ctx ends). The report
// says what happened, also on error.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	p := &probe{Config: cfg}
	err := p.run(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil && !errors.Is(err, context.Canceled) {
		p.report.Error = err.Error()
	}
	r := p.report
	r.Listened = append([]string(nil), r.Listened...)
	r.Connections = append([]Connection(nil), r.Connections...)
	r.Accepted = append([]string(nil), r.Accepted...)
	return r, err
}

func (p *probe) run(ctx context.Context) error {
	role := p.Env("TRAINING_ROLE")
	if role == "" {
		role = p.Env("PADDLE_TRAINING_ROLE")
	}
	p.report = Report{Pod: p.Env("PROBE_POD_NAME"), UID: p.Env("PROBE_POD_UID"), Role: role, JobVersion: p.Env("PROBE_JOB_VERSION"), Resolved: map[string]string{}}
	if err := p.resolveAll(ctx); err != nil {
		return err
	}
	ps := list(p.Env("PADDLE_PSERVERS_IP_PORT_LIST"))
	fluid := list(p.Env("PADDLE_PSERVERS"))
	switch {
	case strings.HasPrefix(p.Env("PADDLE_MASTER"), etcdScheme):
		return p.elastic(ctx)
	case p.FluidCTR:
		if role == "PSERVER" {
			return p.ctrPserver(ctx, fluid)
		}
		if err := p.psTrainer(ctx, fluid); err != nil {
			return err
		}
		return p.injectedFailure()
	case len(ps) > 0 || len(fluid) > 0:
		if role == "PSERVER" {
			return p.pserver(ctx, append(ps, fluid...))
		}
		if err := p.psTrainer(ctx, append(ps, fluid...)); err != nil {
			return err
		}
		return p.injectedFailure()
	case p.Env("PADDLE_TRAINER_ENDPOINTS") != "":
		if err := p.collective(ctx); err != nil {
			return err
		}
		return p.injectedFailure()
	}
	return errors.New("no Paddle endpoints in the env (PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_PSERVERS, PADDLE_TRAINER_ENDPOINTS or an etcd:// PADDLE_MASTER)")
}

// injectedFailure fails trainer 0 while the job's version is below
// FailUntilVersion.
func (p *probe) injectedFailure() error {
	if p.FailUntilVersion == 0 || p.Env("PADDLE_TRAINER_ID") != "0" {
		return nil
	}
	v, err := strconv.Atoi(p.Env("PROBE_JOB_VERSION"))
	if err != nil {
		return fmt.Errorf("PROBE_JOB_VERSION=%q: set it from the volcano.sh/job-version annotation", p.Env("PROBE_JOB_VERSION"))
	}
	if v < p.FailUntilVersion {
		return fmt.Errorf("injected failure: job version %d < %d", v, p.FailUntilVersion)
	}
	return nil
}

// endpointVars are the env variables holding host:port lists; hostVars hold
// bare hosts.
var (
	endpointVars = []string{"PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_PSERVERS", "PADDLE_TRAINER_ENDPOINTS", "PADDLE_CURRENT_ENDPOINT", "PADDLE_MASTER", "PADDLE_GLOO_HTTP_ENDPOINT"}
	hostVars     = []string{"PADDLE_TRAINERS", "POD_IP", "PADDLE_TRAINER_IPS", "PADDLE_CURRENT_IP"}
)

// resolveAll looks up every host of the env once.
func (p *probe) resolveAll(ctx context.Context) error {
	var hosts []string
	for _, v := range endpointVars {
		for _, ep := range list(p.Env(v)) {
			if v == "PADDLE_MASTER" {
				ep = masterEndpoint(ep)
			}
			h, _, err := net.SplitHostPort(ep)
			if err != nil {
				return fmt.Errorf("%s: %q is not host:port: %w", v, ep, err)
			}
			hosts = append(hosts, h)
		}
	}
	for _, v := range hostVars {
		hosts = append(hosts, list(p.Env(v))...)
	}
	for _, h := range hosts {
		if _, done := p.report.Resolved[h]; done {
			continue
		}
		addrs, err := p.Resolver.LookupHost(ctx, h)
		if err != nil {
			return fmt.Errorf("resolving %s (once, as Paddle does): %w", h, err)
		}
		p.report.Resolved[h] = addrs[0]
		klog.V(1).InfoS("resolved", "host", h, "addr", addrs[0])
	}
	return nil
}

// addr is the resolved address of an endpoint.
func (p *probe) addr(ep string) (string, error) {
	h, port, err := net.SplitHostPort(ep)
	if err != nil {
		return "", err
	}
	ip, ok := p.report.Resolved[h]
	if !ok {
		return "", fmt.Errorf("%s was not resolved", h)
	}
	return net.JoinHostPort(ip, port), nil
}

func (p *probe) own(ep string) bool {
	h, _, err := net.SplitHostPort(ep)
	return err == nil && h == p.Env("POD_IP")
}

func (p *probe) pserver(ctx context.Context, endpoints []string) error {
	var mine []string
	for _, ep := range endpoints {
		if p.own(ep) {
			mine = append(mine, ep)
		}
	}
	if len(mine) == 0 {
		return fmt.Errorf("no pserver endpoint has this pod's host %q", p.Env("POD_IP"))
	}
	if id, _ := strconv.Atoi(p.Env("PADDLE_PSERVER_ID")); id == 0 && p.Env("PADDLE_GLOO_HTTP_ENDPOINT") != "" && glooOn(p.Env("PADDLE_WITH_GLOO")) {
		if err := p.serveGloo(ctx, p.Env("PADDLE_GLOO_HTTP_ENDPOINT")); err != nil {
			return err
		}
	}
	for _, ep := range dedupe(mine) {
		if err := p.serve(ctx, ep, -1, nil); err != nil {
			return err
		}
	}
	// A pserver serves until the job stops it.
	<-ctx.Done()
	return ctx.Err()
}

// ctrPserver listens where the CTR example's pserver does.
func (p *probe) ctrPserver(ctx context.Context, fluid []string) error {
	port, err := strconv.Atoi(p.Env("PADDLE_PORT"))
	if err != nil {
		return fmt.Errorf("PADDLE_PORT=%q", p.Env("PADDLE_PORT"))
	}
	id, err := strconv.Atoi(p.Env("PADDLE_PSERVER_ID"))
	if err != nil {
		return fmt.Errorf("PADDLE_PSERVER_ID=%q", p.Env("PADDLE_PSERVER_ID"))
	}
	own := net.JoinHostPort(p.Env("POD_IP"), strconv.Itoa(port+id))
	if !slices.Contains(fluid, own) {
		return fmt.Errorf("the CTR pserver's endpoint %s (POD_IP:PADDLE_PORT+PADDLE_PSERVER_ID) is not in PADDLE_PSERVERS=%s", own, strings.Join(fluid, ","))
	}
	if err := p.serve(ctx, own, -1, nil); err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

func (p *probe) psTrainer(ctx context.Context, endpoints []string) error {
	for _, ep := range dedupe(endpoints) {
		if err := p.connect(ctx, ep); err != nil {
			return err
		}
	}
	if glooOn(p.Env("PADDLE_WITH_GLOO")) && p.Env("PADDLE_GLOO_HTTP_ENDPOINT") != "" {
		return p.connect(ctx, p.Env("PADDLE_GLOO_HTTP_ENDPOINT"))
	}
	return nil
}

func glooOn(v string) bool { return v == "1" || v == "2" }

// collective: trainer 0 hosts the store at PADDLE_MASTER (else the first
// trainer endpoint, as paddle.distributed does) and waits for the others;
// the others connect to it.
func (p *probe) collective(ctx context.Context) error {
	master := p.Env("PADDLE_MASTER")
	if master == "" {
		master = list(p.Env("PADDLE_TRAINER_ENDPOINTS"))[0]
	}
	n, err := strconv.Atoi(p.Env("PADDLE_TRAINERS_NUM"))
	if err != nil || n < 1 {
		return fmt.Errorf("PADDLE_TRAINERS_NUM=%q", p.Env("PADDLE_TRAINERS_NUM"))
	}
	if p.Env("PADDLE_TRAINER_ID") != "0" {
		return p.connect(ctx, master)
	}
	if !p.own(master) {
		return fmt.Errorf("trainer 0 is not the master: PADDLE_MASTER=%s, POD_IP=%s", master, p.Env("POD_IP"))
	}
	done := make(chan struct{})
	if err := p.serve(ctx, master, n-1, done); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(p.Timeout):
		p.mu.Lock()
		got := len(p.report.Accepted)
		p.mu.Unlock()
		return fmt.Errorf("the master saw %d of %d trainers in %s", got, n-1, p.Timeout)
	}
}

// serve listens on ep at the address its host resolved to, answering each
// connection with the identity; after want connections (want >= 0) it
// closes done.
func (p *probe) serve(ctx context.Context, ep string, want int, done chan struct{}) error {
	l, err := p.listen(ctx, ep)
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			// Recorded before answering: once a client has its answer it
			// may end the test or the pod, and the report must hold it.
			p.mu.Lock()
			p.report.Accepted = append(p.report.Accepted, c.RemoteAddr().String())
			n := len(p.report.Accepted)
			p.mu.Unlock()
			answer(c, Identity{Pod: p.report.Pod, UID: p.report.UID, Endpoint: ep, Addr: c.LocalAddr().String()})
			if want >= 0 && n == want {
				close(done)
			}
		}
	}()
	return nil
}

// answer reads the client's request (up to its empty line) before writing
// the identity: closing a socket with unread input sends a reset, which can
// discard the answer before the client reads it.
func answer(c net.Conn, id Identity) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReader(c)
	for {
		line, err := rd.ReadString('\n')
		if err != nil || strings.TrimSpace(line) == "" {
			break
		}
	}
	b, _ := json.Marshal(id)
	_, _ = c.Write(append(b, '\n'))
}

// serveGloo serves the gloo HTTP store endpoint: GET answers the identity.
func (p *probe) serveGloo(ctx context.Context, ep string) error {
	l, err := p.listen(ctx, ep)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := Identity{Pod: p.report.Pod, UID: p.report.UID, Endpoint: ep, Addr: r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()}
		p.mu.Lock()
		p.report.Accepted = append(p.report.Accepted, r.RemoteAddr)
		p.mu.Unlock()
		b, _ := json.Marshal(id)
		_, _ = w.Write(append(b, '\n'))
	})}
	go func() { _ = srv.Serve(l) }()
	return nil
}

// listen binds ep's resolved address (the pod's own, or it fails as brpc
// would) until ctx ends.
func (p *probe) listen(ctx context.Context, ep string) (net.Listener, error) {
	a, err := p.addr(ep)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", a)
	if err != nil {
		return nil, fmt.Errorf("listening on %s (%s): %w", ep, a, err)
	}
	p.mu.Lock()
	p.report.Listened = append(p.report.Listened, ep)
	p.mu.Unlock()
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	return l, nil
}

// connect dials the resolved address of ep until a server answers or the
// timeout passes, and records who answered.
func (p *probe) connect(ctx context.Context, ep string) error {
	a, err := p.addr(ep)
	if err != nil {
		return err
	}
	var id Identity
	attempts, err := p.retry(ctx, func(ctx context.Context) (err error) {
		id, err = hello(ctx, a)
		return err
	})
	switch {
	case err == nil:
		p.mu.Lock()
		p.report.Connections = append(p.report.Connections, Connection{Endpoint: ep, IP: a, Attempts: attempts, Server: id})
		p.mu.Unlock()
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("connecting to %s (%s): %w after %d attempts", ep, a, err, attempts)
}

// retry calls f every 100 ms until it succeeds, ctx ends or the probe's
// timeout passes, and returns how many calls it made and f's last error
// (ctx's when ctx ended).
func (p *probe) retry(ctx context.Context, f func(context.Context) error) (int, error) {
	deadline := time.Now().Add(p.Timeout)
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil || time.Now().After(deadline) {
			return attempt, err
		}
		select {
		case <-ctx.Done():
			return attempt, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// hello connects to a and reads the server's identity: the TCP protocol of
// serve, or HTTP for the gloo store (which answers a request, not a
// connection).
func hello(ctx context.Context, a string) (Identity, error) {
	var id Identity
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", a)
	if err != nil {
		return id, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	// Both servers answer this: the TCP one ignores it and speaks first,
	// the HTTP one answers the request.
	if _, err := io.WriteString(c, "GET / HTTP/1.0\r\n\r\n"); err != nil {
		return id, err
	}
	rd := bufio.NewReader(c)
	line, err := rd.ReadString('\n')
	if err != nil {
		return id, err
	}
	if strings.HasPrefix(line, "HTTP/") {
		resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader(line), rd)), nil)
		if err != nil {
			return id, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return id, err
		}
		line = string(b)
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &id); err != nil {
		return id, fmt.Errorf("the server at %s answered %q: %w", a, line, err)
	}
	return id, nil
}

func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
