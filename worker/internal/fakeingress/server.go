package fakeingress

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/lease"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/worker/clock"
)

// Lease lengths of the fake authority: the lease policy's defaults
// (core/lease), as the real one grants them.
const (
	UnstartedLease = lease.DefaultUnstartedMs * time.Millisecond
	StartedLease   = lease.DefaultStartedMs * time.Millisecond
	SessionLease   = lease.DefaultSessionMs * time.Millisecond
	Heartbeat      = lease.DefaultHeartbeatMs * time.Millisecond
)

// Run is one run the fake authority offers (one attempt, no retries).
type Run struct {
	ID, AttemptID  string
	Spec           spec.Command
	State          string // queued | leased | started | done | lost
	LeaseGen       int64
	OfferID        string
	TokenDigest    [32]byte
	SessionID      string
	Generation     int64
	Expiry         time.Time
	Cancel         bool
	Silent         bool // heartbeats renew nothing for it and say nothing about it
	CancelSent     bool // a cancel control was answered
	CancelNow      bool // the cancel asks for no grace (cancelGraceMs 0)
	Log            []byte
	LogClosed      bool
	Completion     *protocol.Completion
	Completions    int      // completion requests that arrived
	Claims         []string // offer ids that claimed a lease on it
	Replays        int      // pulls answered by rebuilding an existing offer
	CompletedEarly bool     // a completion arrived before the log's eof
	// ClosedByCompletion: the log was empty and never uploaded; the
	// completion closed it.
	ClosedByCompletion bool
}

// Request is one request as the fake saw it.
type Request struct {
	Path       string
	Credential string // the Authorization header value
	CertSerial string // the client certificate's serial
	Conn       string // the connection's remote address
	Body       []byte
	At         time.Time // the fake clock when it arrived
}

// Server is the fake ingress.
type Server struct {
	T   TB
	Clk clock.Clock
	TS  *httptest.Server

	mu       sync.Mutex
	runs     []*Run
	sessions map[string]int64 // session id → generation
	live     string           // the live session id
	gen      int64
	status   protocol.SessionStatus
	sessExp  time.Time
	requests []Request
	closed   map[string]bool // connections closed (remote addr)
	// Knobs.
	BlackHole   map[string]bool                            // path → hang up without answering
	Fail503     map[string]int                             // path → answer 503 this many more times (-1: forever)
	HeartbeatMs int64                                      // interval the fake asks for; 0 → Heartbeat
	SessionMs   int64                                      // session lease the fake grants; 0 → SessionLease
	Log         func(path string, status int, body []byte) // called per answered request (benchmarks)
	DropAnswer  map[string]int                             // path → apply, then hang up, this many more times
	Refuse401   map[string]int                             // path → answer 401 this many more times
	// EmptyPull are the headers of a 204 to a pull; nil → Retry-After: 2
	// (no pacing hint).
	EmptyPull map[string]string
	// Batches serves /v1/leases/batch (ADR 0058); false → 404, as an
	// authority without batches.
	Batches bool
}

// New starts a TLS 1.3 mTLS fake ingress whose certificates come from pki.
func New(t TB, pki *PKI, clk clock.Clock) *Server {
	s := &Server{T: t, Clk: clk, sessions: map[string]int64{}, closed: map[string]bool{},
		BlackHole: map[string]bool{}, Fail503: map[string]int{}, DropAnswer: map[string]int{}, Refuse401: map[string]int{}}
	certPEM, keyPEM := pki.Issue(t, "ingress", true, pki.CA.NotBefore)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(pki.CA)
	s.TS = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.TS.TLS = &tls.Config{
		MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{pair},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
		SessionTicketsDisabled: true,
		Time:                   func() time.Time { return pki.CA.NotBefore.Add(time.Hour) },
	}
	s.TS.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateClosed || st == http.StateHijacked {
			s.mu.Lock()
			s.closed[c.RemoteAddr().String()] = true
			s.mu.Unlock()
		}
	}
	s.TS.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.TS.StartTLS()
	t.Cleanup(s.TS.Close)
	return s
}

// ReplaceSession opens a newer generation as if another process of the
// same worker had registered: the live session becomes replaced.
func (s *Server) ReplaceSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live != "" {
		s.release(s.live, s.gen)
	}
	s.gen++
	s.live = "s-" + strconv.FormatInt(s.gen, 10)
	s.sessions[s.live] = s.gen
	s.status = protocol.SessionOnline
	s.sessExp = s.Clk.Now().Add(s.sessionLease())
}

// URL is the base URL.
func (s *Server) URL() string { return s.TS.URL }

// AddRun queues a shell run.
func (s *Server) AddRun(id, script string, timeoutMs int64) *Run {
	s.T.Helper()
	raw := fmt.Sprintf(`{"kind":"qinglong/command@v1","shell":{"command":%q},"timeoutMs":%d}`, script, timeoutMs)
	return s.AddRunSpec(id, raw)
}

// AddRunSpec queues a run of a raw qinglong/command@v1 spec.
func (s *Server) AddRunSpec(id, raw string) *Run {
	s.T.Helper()
	sp, err := spec.Decode([]byte(raw))
	if err != nil {
		s.T.Fatal(err)
	}
	r := &Run{ID: id, AttemptID: id + "-a1", Spec: sp, State: "queued"}
	s.mu.Lock()
	s.runs = append(s.runs, r)
	s.mu.Unlock()
	return r
}

// With runs f under the server's lock (read or change state).
func (s *Server) With(f func(s *Server)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// Runs returns the runs (call inside With to read fields safely).
func (s *Server) Runs() []*Run { return s.runs }

// Requests returns the requests seen so far (inside With).
func (s *Server) Requests() []Request { return s.requests }

// Closed reports whether the connection with remote address addr closed (inside With).
func (s *Server) Closed(addr string) bool { return s.closed[addr] }

// Session returns the live session id, generation and status (inside With).
func (s *Server) Session() (string, int64, protocol.SessionStatus) { return s.live, s.gen, s.status }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, protocol.HardBodyBytes+1))
	s.mu.Lock()
	req := Request{Path: r.URL.Path, Credential: r.Header.Get("Authorization"), Conn: r.RemoteAddr, Body: body, At: s.Clk.Now()}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		req.CertSerial = r.TLS.PeerCertificates[0].SerialNumber.String()
	}
	s.requests = append(s.requests, req)
	now := s.Clk.Now()
	if s.BlackHole[r.URL.Path] {
		s.mu.Unlock()
		hangUp(w)
		return
	}
	if n := s.Refuse401[r.URL.Path]; n > 0 || !strings.HasPrefix(req.Credential, "Worker ql3w_") {
		if n > 0 {
			s.Refuse401[r.URL.Path] = n - 1
		}
		s.mu.Unlock()
		http.Error(w, `{"code":"unauthorized","message":"worker authentication failed"}`, http.StatusUnauthorized)
		return
	}
	if n := s.Fail503[r.URL.Path]; n != 0 {
		if n > 0 {
			s.Fail503[r.URL.Path] = n - 1
		}
		s.mu.Unlock()
		http.Error(w, `{"error":{"code":"unavailable"}}`, http.StatusServiceUnavailable)
		return
	}
	s.sweep(now)
	status, out, hdr := s.route(r.URL.Path, body, now)
	if s.Log != nil {
		s.Log(r.URL.Path, status, body)
	}
	drop := false
	if n := s.DropAnswer[r.URL.Path]; n > 0 {
		s.DropAnswer[r.URL.Path] = n - 1
		drop = true
	}
	s.mu.Unlock()
	if drop {
		hangUp(w)
		return
	}
	w.Header().Set("Date", now.UTC().Format(http.TimeFormat))
	for k, v := range hdr {
		w.Header().Set(k, v)
	}
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("no hijacker")
	}
	c, _, err := hj.Hijack()
	if err == nil {
		c.Close()
	}
}

func errBody(code string) []byte { return []byte(`{"error":{"code":"` + code + `"}}`) }

// sweep applies lease expiry: unstarted → queued again (lease generation
// + 1), started → lost; an expired session loses its leases.
func (s *Server) sweep(now time.Time) {
	if s.live != "" && !now.Before(s.sessExp) && s.status != protocol.SessionOffline {
		s.release(s.live, s.gen)
		s.live, s.status = "", ""
	}
	for _, r := range s.runs {
		if (r.State == "leased" || r.State == "started") && !now.Before(r.Expiry) {
			s.expire(r)
		}
	}
}

func (s *Server) expire(r *Run) {
	if r.State == "leased" {
		r.State = "queued"
	} else if r.State == "started" {
		r.State = "lost"
	}
}

func (s *Server) release(id string, gen int64) {
	for _, r := range s.runs {
		if r.SessionID == id && r.Generation == gen && (r.State == "leased" || r.State == "started") {
			s.expire(r)
		}
	}
}

func (s *Server) state(now time.Time, controls []protocol.LeaseControl) []byte {
	st := protocol.SessionState{SessionID: s.live, Generation: s.gen, Status: s.status,
		HeartbeatIntervalMs: s.heartbeatMs(), LeaseExpiresAtMs: s.sessExp.UnixMilli(), Controls: controls}
	out, err := st.Encode()
	if err != nil {
		s.T.Errorf("fake: encode state: %v", err)
	}
	return out
}

func (s *Server) route(path string, body []byte, now time.Time) (int, []byte, map[string]string) {
	switch path {
	case protocol.PathSessionOpen:
		if _, err := protocol.DecodeSessionOpen(body); err != nil {
			return 400, errBody("invalid"), nil
		}
		if s.live != "" {
			s.release(s.live, s.gen)
		}
		s.gen++
		s.live = "s-" + strconv.FormatInt(s.gen, 10)
		s.sessions[s.live] = s.gen
		s.status = protocol.SessionOnline
		s.sessExp = now.Add(s.sessionLease())
		return 200, s.state(now, nil), nil
	case protocol.PathSessionHeartbeat:
		h, err := protocol.DecodeSessionHeartbeat(body)
		if err != nil {
			return 400, errBody("invalid"), nil
		}
		if gen, known := s.sessions[h.SessionID]; known && gen == h.Generation && h.SessionID != s.live {
			// Replaced by a newer generation: offline, every lease revoked.
			var controls []protocol.LeaseControl
			for _, id := range h.RunningAttemptIDs {
				controls = append(controls, revoke(s.byAttempt(id), id))
			}
			st := protocol.SessionState{SessionID: h.SessionID, Generation: h.Generation, Status: protocol.SessionOffline,
				HeartbeatIntervalMs: Heartbeat.Milliseconds(), LeaseExpiresAtMs: now.UnixMilli(), Replaced: true, Controls: controls}
			out, err := st.Encode()
			if err != nil {
				s.T.Errorf("fake: encode replaced state: %v", err)
			}
			return 200, out, nil
		}
		if h.SessionID != s.live || h.Generation != s.gen {
			return 409, errBody("conflict"), nil
		}
		s.sessExp = now.Add(s.sessionLease())
		var controls []protocol.LeaseControl
		for _, id := range h.RunningAttemptIDs {
			r := s.byAttempt(id)
			if r == nil || r.SessionID != s.live || r.Generation != s.gen || (r.State != "leased" && r.State != "started") {
				controls = append(controls, revoke(r, id))
				continue
			}
			if r.Silent {
				continue
			}
			r.Expiry = now.Add(StartedLease)
			controls = append(controls, s.control(r))
		}
		return 200, s.state(now, controls), nil
	case protocol.PathSessionTransition:
		tr, err := protocol.DecodeSessionTransition(body)
		if err != nil {
			return 400, errBody("invalid"), nil
		}
		if tr.SessionID != s.live || tr.Generation != s.gen {
			return 409, errBody("conflict"), nil
		}
		s.status = tr.To
		if tr.To == protocol.SessionOffline {
			s.release(s.live, s.gen)
		}
		return 200, s.state(now, nil), nil
	case protocol.PathOfferPull:
		return s.pull(body, now)
	case protocol.PathLeaseAck:
		a, err := protocol.DecodeAck(body)
		if err != nil {
			return 400, errBody("invalid"), nil
		}
		r := s.held(a.LeaseRef)
		if r == nil || (r.State != "leased" && r.State != "started") {
			return 409, errBody("conflict"), nil
		}
		if r.State == "leased" {
			r.State = "started"
		}
		r.Expiry = now.Add(StartedLease)
		out, _ := s.control(r).Encode()
		return 200, out, nil
	case protocol.PathLeaseLog:
		c, err := protocol.DecodeLogChunk(body)
		if err != nil {
			return 400, errBody("invalid"), nil
		}
		r := s.held(c.LeaseRef)
		if r == nil {
			return 409, errBody("conflict"), nil
		}
		if c.Offset > int64(len(r.Log)) || (r.LogClosed && c.End() > int64(len(r.Log))) {
			return 409, errBody("conflict"), nil
		}
		if c.End() > int64(len(r.Log)) {
			r.Log = append(r.Log, c.Data[int64(len(r.Log))-c.Offset:]...)
		}
		if c.EOF && c.End() == int64(len(r.Log)) {
			r.LogClosed = true
		}
		out, _ := protocol.LogReceipt{AttemptID: r.AttemptID, Stream: c.Stream, NextOffset: int64(len(r.Log)), Closed: r.LogClosed}.Encode()
		return 200, out, nil
	case protocol.PathLeaseComplete:
		c, err := protocol.DecodeCompletion(body)
		if err != nil {
			return 400, errBody("invalid"), nil
		}
		r := s.held(c.LeaseRef)
		if r == nil {
			return 409, errBody("conflict"), nil
		}
		r.Completions++
		switch {
		case r.LogClosed:
		case len(r.Log) == 0 && c.StdoutBytes == 0:
			// As the authority does: a silent stream needs no upload; the
			// completion ends it.
			r.LogClosed = true
			r.ClosedByCompletion = true
		default:
			r.CompletedEarly = true
		}
		disp := protocol.Recorded
		switch {
		case r.Completion != nil:
			disp = protocol.Duplicate
		case r.State == "lost":
			disp = protocol.Late
		default:
			r.State = "done"
		}
		if r.Completion == nil {
			cc := c
			r.Completion = &cc
		}
		out, _ := protocol.CompletionReceipt{AttemptID: r.AttemptID, Disposition: disp}.Encode()
		return 200, out, nil
	}
	if path == protocol.PathLeaseBatch && s.Batches {
		return s.leaseBatch(body, now)
	}
	return 404, errBody("not_found"), nil
}

func (s *Server) control(r *Run) protocol.LeaseControl {
	c := protocol.LeaseControl{RunID: r.ID, AttemptID: r.AttemptID, LeaseGeneration: r.LeaseGen,
		LeaseVersion: 1, Action: protocol.LeaseExtend, LeaseExpiresAtMs: r.Expiry.UnixMilli()}
	if r.Cancel {
		c.Action, c.CancelGraceMs = protocol.LeaseCancel, 1000
		if r.CancelNow {
			c.CancelGraceMs = 0
		}
		r.CancelSent = true
	}
	return c
}

func (s *Server) byAttempt(id string) *Run {
	for _, r := range s.runs {
		if r.AttemptID == id {
			return r
		}
	}
	return nil
}

// held finds the run a LeaseRef proves (any state; the caller checks it).
func (s *Server) held(ref protocol.LeaseRef) *Run {
	r := s.byAttempt(ref.AttemptID)
	if r == nil || r.OfferID != ref.OfferID || r.LeaseGen != ref.LeaseGeneration ||
		r.SessionID != ref.SessionID || r.Generation != ref.Generation || r.TokenDigest != ref.LeaseToken.Digest() {
		return nil
	}
	return r
}

func (s *Server) pull(body []byte, now time.Time) (int, []byte, map[string]string) {
	p, err := protocol.DecodeOfferPullRequest(body)
	if err != nil {
		return 400, errBody("invalid"), nil
	}
	digest := p.LeaseToken.Digest()
	for _, r := range s.runs {
		if r.OfferID == p.OfferID {
			if r.TokenDigest != digest || r.SessionID != p.SessionID || r.Generation != p.Generation {
				return 409, errBody("conflict"), nil
			}
			r.Replays++
			return 200, s.offer(r), nil // the replay: the same offer, rebuilt
		}
	}
	if p.SessionID != s.live || p.Generation != s.gen || s.status != protocol.SessionOnline {
		return 409, errBody("conflict"), nil
	}
	for _, r := range s.runs {
		if r.State != "queued" {
			continue
		}
		r.State, r.LeaseGen = "leased", r.LeaseGen+1
		r.Claims = append(r.Claims, p.OfferID)
		r.OfferID, r.TokenDigest, r.SessionID, r.Generation = p.OfferID, digest, p.SessionID, p.Generation
		r.Expiry = now.Add(UnstartedLease)
		return 200, s.offer(r), nil
	}
	if s.EmptyPull != nil {
		return 204, nil, s.EmptyPull
	}
	return 204, nil, map[string]string{"Retry-After": "2"}
}

func (s *Server) offer(r *Run) []byte {
	sum, err := r.Spec.Digest()
	if err != nil {
		s.T.Errorf("fake: spec digest: %v", err)
	}
	o := protocol.Offer{RunID: r.ID, AttemptID: r.AttemptID, AttemptNumber: 1, WorkerID: "w-1",
		SessionID: r.SessionID, Generation: r.Generation, OfferID: r.OfferID, LeaseGeneration: r.LeaseGen,
		LeaseVersion: 1, LeaseExpiresAtMs: r.Expiry.UnixMilli(), LeaseTokenDigest: canonjson.Digest(r.TokenDigest),
		TaskID: "task-" + r.ID, TaskRevision: 1, ScheduledForMs: 1_767_225_600_000, // 2026-01-01T00:00:00Z
		ExecutionRevisionID: "rev-" + r.ID, ExecutionRevisionDigest: canonjson.Digest(sha256.Sum256([]byte(r.ID))),
		SpecDigest: sum, Spec: r.Spec, TimeoutMs: r.Spec.TimeoutMs}
	out, err := o.Encode()
	if err != nil {
		s.T.Errorf("fake: encode offer: %v", err)
	}
	return out
}

func (s *Server) heartbeatMs() int64 {
	if s.HeartbeatMs > 0 {
		return s.HeartbeatMs
	}
	return Heartbeat.Milliseconds()
}

func (s *Server) sessionLease() time.Duration {
	if s.SessionMs > 0 {
		return time.Duration(s.SessionMs) * time.Millisecond
	}
	return SessionLease
}

// revoke builds the "this session no longer holds that lease" control.
func revoke(r *Run, id string) protocol.LeaseControl {
	c := protocol.LeaseControl{AttemptID: id, Action: protocol.LeaseRevoke}
	if r != nil {
		c.RunID, c.LeaseGeneration, c.LeaseVersion, c.LeaseExpiresAtMs = r.ID, max(r.LeaseGen, 1), 1, max(r.Expiry.UnixMilli(), 1)
	}
	return c
}
