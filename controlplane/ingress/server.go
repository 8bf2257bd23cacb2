package ingress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ql3/ql3/controlplane"
)

// Defaults and hard limits (DESIGN.md §8).
const (
	DefaultMaxInFlight      = 256
	HardMaxInFlight         = 1024
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultRequestTimeout   = 15 * time.Second
	DefaultReloadInterval   = 10 * time.Second
	// A certificate that fails authentication may fail this many times in
	// a burst, then once per failureRefill; beyond that it gets 429.
	failureBurst  = 10
	failureRefill = 6 * time.Second
	// Pre-authentication refusals (TLS) write at most this many audit rows
	// per peer address in a burst, then one per auditRefill.
	auditBurst  = 20
	auditRefill = 3 * time.Second
	limiterKeys = 8192
)

// Config wires a Server.
type Config struct {
	TLS      TLSFiles
	Sessions controlplane.SessionPort // required
	Leases   controlplane.LeasePort   // nil: offer and lease routes answer 503 (no injected dispatcher)
	// Pacer shortens empty pulls' pauses to the next scheduled occurrence;
	// nil: every empty pull gets the dispatcher's idle pause.
	Pacer controlplane.PullPacer
	// Scripts serves a leased Run's script tree (ADR 0052); nil: those
	// routes answer 503.
	Scripts controlplane.ScriptFetch
	// Notify queues a remote script's sendNotify (ADR 0053); nil: that
	// route answers 503.
	Notify controlplane.ScriptNotify
	Auth   controlplane.Authenticator // required
	Audit  controlplane.Auditor       // required
	Logger *slog.Logger

	MaxInFlight      int           // 0: DefaultMaxInFlight
	HandshakeTimeout time.Duration // 0: DefaultHandshakeTimeout
	RequestTimeout   time.Duration // per request, port calls included; 0: DefaultRequestTimeout
	ReloadInterval   time.Duration // file check cadence; 0: DefaultReloadInterval, < 0: off
	// ReloadTicks, when set, drives the file check instead of a ticker
	// (tests step it like a clock).
	ReloadTicks <-chan time.Time
	// Now is the clock certificates are verified against; nil: time.Now.
	Now func() time.Time
}

// Server is the worker ingress listener.
type Server struct {
	cfg      Config
	log      *slog.Logger
	trust    *trustStore
	srv      *http.Server
	inflight chan struct{}
	failures *failureLimiter // keyed by client certificate fingerprint
	audits   *failureLimiter // keyed by peer address, pre-authentication refusals

	connMu sync.Mutex
	conns  map[net.Conn]*connInfo // raw connection → what its handshake decided

	mu       sync.Mutex
	ln       net.Listener
	stop     chan struct{}
	loopDone chan struct{}
}

// connInfo is per connection: the trust generation it was verified under.
type connInfo struct {
	mu         sync.Mutex
	generation uint64
}

func (c *connInfo) gen() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.generation
}

type connKey struct{}

// New validates cfg and loads the TLS material (a failure here is fatal:
// the ingress never starts without good material).
func New(cfg Config) (*Server, error) {
	if cfg.Sessions == nil || cfg.Auth == nil || cfg.Audit == nil {
		return nil, errors.New("ingress: Sessions, Auth and Audit are required")
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.MaxInFlight < 1 || cfg.MaxInFlight > HardMaxInFlight {
		return nil, fmt.Errorf("ingress: max in-flight must be 1..%d, got %d", HardMaxInFlight, cfg.MaxInFlight)
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.ReloadInterval == 0 {
		cfg.ReloadInterval = DefaultReloadInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	trust, err := newTrustStore(cfg.TLS)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, trust: trust, inflight: make(chan struct{}, cfg.MaxInFlight),
		failures: newFailureLimiter(cfg.Now, failureBurst, failureRefill, limiterKeys),
		audits:   newFailureLimiter(cfg.Now, auditBurst, auditRefill, limiterKeys),
		conns:    make(map[net.Conn]*connInfo)}
	s.srv = &http.Server{
		Handler: s,
		// The handshake runs under the smallest of these (net/http), so
		// ReadHeaderTimeout bounds it.
		ReadHeaderTimeout: cfg.HandshakeTimeout,
		ReadTimeout:       cfg.RequestTimeout + cfg.HandshakeTimeout,
		WriteTimeout:      cfg.RequestTimeout + cfg.HandshakeTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    8 << 10,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
		ConnContext:       s.connContext,
		ConnState:         s.connState,
		TLSConfig: &tls.Config{
			MinVersion:         tls.VersionTLS13,
			GetConfigForClient: s.configForClient,
		},
	}
	return s, nil
}

// Start listens on addr and serves in the background.
func (s *Server) Start(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("ingress: listen on %s: %w", addr, err)
	}
	return s.StartListener(ln)
}

// StartListener serves on ln (a plain TCP listener; TLS is added here).
func (s *Server) StartListener(ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		return errors.New("ingress: already started")
	}
	s.ln = ln
	s.stop, s.loopDone = make(chan struct{}), make(chan struct{})
	tlsLn := tls.NewListener(ln, s.srv.TLSConfig)
	go func() {
		if err := s.srv.Serve(tlsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("worker ingress stopped serving", "err", err)
		}
	}()
	go s.reloadLoop(s.stop, s.loopDone)
	s.log.Info("worker ingress listening", "addr", ln.Addr().String(), "trustGeneration", s.trust.current().n)
	return nil
}

// Addr is the listen address ("" before Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// TrustGeneration is the current trust generation (1 at start).
func (s *Server) TrustGeneration() uint64 { return s.trust.current().n }

// Shutdown stops accepting, waits for in-flight requests until ctx ends,
// then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	stop, done := s.stop, s.loopDone
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	return err
}

// Reload re-reads the TLS files now (SIGHUP). Bad material keeps the old
// context and is reported; a trust change starts a new generation, and
// every connection verified under an older one answers its next request
// with 421 and Connection: close (idle ones end at the idle timeout).
func (s *Server) Reload() error {
	changed, err := s.trust.reload()
	if err != nil {
		s.log.Error("worker ingress TLS reload refused; keeping the previous material", "err", err)
		return err
	}
	if changed {
		s.log.Info("worker ingress trust changed; older connections are refused", "trustGeneration", s.trust.current().n)
	}
	return nil
}

func (s *Server) reloadLoop(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	ticks := s.cfg.ReloadTicks
	if ticks == nil {
		if s.cfg.ReloadInterval < 0 {
			<-stop
			return
		}
		t := time.NewTicker(s.cfg.ReloadInterval)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-stop:
			return
		case <-ticks:
			if s.trust.changedOnDisk() {
				_ = s.Reload()
			}
		}
	}
}

// connContext runs when a connection is accepted, before its handshake.
func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	info := &connInfo{}
	raw := c
	if tc, ok := c.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	s.connMu.Lock()
	s.conns[raw] = info
	s.connMu.Unlock()
	return context.WithValue(ctx, connKey{}, info)
}

func (s *Server) connState(c net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	raw := c
	if tc, ok := c.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	s.connMu.Lock()
	delete(s.conns, raw)
	s.connMu.Unlock()
}

// configForClient picks the current generation for a new handshake. TLS
// session tickets are off, so no connection resumes across generations.
func (s *Server) configForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	addr := peerHost(hello.Conn.RemoteAddr())
	if !offersTLS13(hello.SupportedVersions) {
		s.denyHandshake(hello.Context(), addr, controlplane.ReasonTLSVersion, nil)
		return nil, errors.New("ingress: TLS 1.3 is required")
	}
	g := s.trust.current()
	s.connMu.Lock()
	info := s.conns[hello.Conn]
	s.connMu.Unlock()
	if info != nil {
		info.mu.Lock()
		info.generation = g.n
		info.mu.Unlock()
	}
	return &tls.Config{
		MinVersion:             tls.VersionTLS13,
		Certificates:           []tls.Certificate{g.m.cert},
		ClientAuth:             tls.RequestClientCert, // verified below, so a refusal can be audited
		SessionTicketsDisabled: true,
		NextProtos:             []string{"http/1.1"},
		VerifyConnection: func(cs tls.ConnectionState) error {
			if reason := g.m.verifyClient(cs.PeerCertificates, s.cfg.Now()); reason != "" {
				s.denyHandshake(hello.Context(), addr, reason, cs.PeerCertificates)
				return errors.New("ingress: client certificate refused")
			}
			return nil
		},
	}, nil
}

func offersTLS13(versions []uint16) bool {
	for _, v := range versions {
		if v == tls.VersionTLS13 {
			return true
		}
	}
	return false
}

func peerHost(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
