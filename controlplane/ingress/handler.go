package ingress

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/httpkit"
)

// routes: path → body limit. Everything is POST with a JSON body.
var routes = map[string]int64{
	protocol.PathSessionOpen:       protocol.MaxSessionOpenSize,
	protocol.PathSessionHeartbeat:  protocol.MaxHeartbeatBytes,
	protocol.PathSessionTransition: protocol.DefaultBodyBytes,
	protocol.PathOfferPull:         protocol.DefaultBodyBytes,
	protocol.PathLeaseAck:          protocol.DefaultBodyBytes,
	protocol.PathLeaseLog:          protocol.HardBodyBytes,
	protocol.PathLeaseComplete:     protocol.DefaultBodyBytes,
	protocol.PathOfferPullBatch:    protocol.MaxOfferPullBatchBytes,
	protocol.PathLeaseBatch:        protocol.MaxLeaseBatchBytes,
	protocol.PathScriptTree:        protocol.DefaultBodyBytes,
	protocol.PathScriptBlob:        protocol.DefaultBodyBytes,
	protocol.PathNotifySend:        protocol.MaxNotifySendBytes,
}

// ServeHTTP: stale trust generation → route → in-flight slot → failure
// limit → authenticate → bounded body → decode → port.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	info, _ := r.Context().Value(connKey{}).(*connInfo)
	if info == nil || r.TLS == nil || info.gen() != s.trust.current().n {
		// Verified under trust that has since changed: refuse before
		// routing and drop the connection; the worker reconnects and is
		// verified again.
		w.Header().Set("Connection", "close")
		httpkit.WriteErrorStatus(w, http.StatusMisdirectedRequest, errs.E(errs.Unavailable, "", "trust changed; reconnect"))
		return
	}
	limit, ok := routes[r.URL.Path]
	if !ok {
		httpkit.WriteErrorStatus(w, http.StatusNotFound, errs.NotFoundf("no such route"))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httpkit.WriteErrorStatus(w, http.StatusMethodNotAllowed, errs.Invalidf("method", "only POST"))
		return
	}
	select {
	case s.inflight <- struct{}{}:
		defer func() { <-s.inflight }()
	default:
		w.Header().Set(protocol.HeaderRetryAfter, "1")
		httpkit.WriteErrorStatus(w, http.StatusServiceUnavailable, errs.E(errs.Unavailable, "", "too many requests in flight"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()

	certs := r.TLS.PeerCertificates
	fp := fingerprint(certs)
	idents := certIdentities(certs)
	denial := controlplane.Denial{Route: r.URL.Path, RemoteAddr: peerHostString(r.RemoteAddr), TrustGeneration: info.gen()}
	if len(idents) > 0 {
		denial.CertIdentity = idents[0]
	}
	if s.failures.exhausted(fp) {
		// Audited like a refused handshake: bounded per peer address.
		if s.audits.charge(denial.RemoteAddr) {
			denial.Reason = controlplane.ReasonRateLimited
			s.audit(ctx, denial)
		}
		w.Header().Set(protocol.HeaderRetryAfter, strconv.Itoa(int(failureRefill/time.Second)))
		httpkit.WriteErrorStatus(w, http.StatusTooManyRequests, errs.E(errs.Unavailable, "", "too many failed attempts"))
		return
	}
	p, err := s.authenticate(ctx, r, idents)
	if err != nil {
		var d *controlplane.Denied
		if !errors.As(err, &d) {
			s.fail(ctx, w, r, "", err)
			return
		}
		denial.Reason, denial.WorkerID = d.Reason, d.WorkerID
		if s.failures.charge(fp) {
			s.audit(ctx, denial)
		}
		w.Header().Set("WWW-Authenticate", "Worker")
		httpkit.WriteErrorStatus(w, http.StatusUnauthorized, errs.E(errs.Unauthorized, "Authorization", "worker authentication failed"))
		return
	}
	p.TrustGeneration, p.RemoteAddr = info.gen(), denial.RemoteAddr
	body, err := httpkit.ReadBody(w, r, int(limit))
	if err != nil {
		s.fail(ctx, w, r, p.WorkerID, err)
		return
	}
	s.dispatch(ctx, w, r, p, body)
}

// authenticate reads the Authorization header and asks the controlplane.Authenticator.
func (s *Server) authenticate(ctx context.Context, r *http.Request, idents []string) (controlplane.Principal, error) {
	h := r.Header.Values("Authorization")
	if len(h) == 0 {
		return controlplane.Principal{}, &controlplane.Denied{Reason: controlplane.ReasonNoCredential}
	}
	scheme, cred, ok := strings.Cut(h[0], " ")
	if len(h) != 1 || !ok || !strings.EqualFold(scheme, "Worker") || cred == "" {
		return controlplane.Principal{}, &controlplane.Denied{Reason: controlplane.ReasonMalformed}
	}
	return s.cfg.Auth.Authenticate(ctx, controlplane.Presented{CertIdentities: idents, Credential: controlplane.Credential(cred)})
}

// dispatch decodes the body for its route and calls the port.
func (s *Server) dispatch(ctx context.Context, w http.ResponseWriter, r *http.Request, p controlplane.Principal, body []byte) {
	var out []byte
	var err error
	switch r.URL.Path {
	case protocol.PathSessionOpen:
		out, err = call(ctx, body, protocol.DecodeSessionOpen, func(ctx context.Context, b protocol.SessionOpen) (protocol.SessionState, error) {
			if b.CredentialID != p.CredentialID {
				return protocol.SessionState{}, errs.E(errs.Conflict, "credentialId", "is not the credential this request authenticated with")
			}
			return s.cfg.Sessions.Open(ctx, p, b)
		}, protocol.SessionState.Encode)
	case protocol.PathSessionHeartbeat:
		out, err = call(ctx, body, protocol.DecodeSessionHeartbeat, func(ctx context.Context, b protocol.SessionHeartbeat) (protocol.SessionState, error) {
			return s.heartbeat(ctx, p, b)
		}, protocol.SessionState.Encode)
	case protocol.PathSessionTransition:
		out, err = call(ctx, body, protocol.DecodeSessionTransition, func(ctx context.Context, b protocol.SessionTransition) (protocol.SessionState, error) {
			return s.cfg.Sessions.Transition(ctx, p, b)
		}, protocol.SessionState.Encode)
	case protocol.PathOfferPull:
		s.pull(ctx, w, r, p, body)
		return
	case protocol.PathOfferPullBatch:
		s.pullBatch(ctx, w, r, p, body)
		return
	case protocol.PathLeaseBatch:
		out, err = s.leaseBatch(ctx, p, body)
	case protocol.PathScriptTree:
		out, err = s.scriptTree(ctx, p, body)
	case protocol.PathScriptBlob:
		if err = s.scriptBlob(ctx, w, p, body); err == nil {
			return
		}
	case protocol.PathNotifySend:
		var ok bool
		if out, ok = s.notifySend(ctx, w, r, p, body); !ok {
			return
		}
	case protocol.PathLeaseAck:
		out, err = callLease(ctx, s, body, protocol.DecodeAck, func(ctx context.Context, l controlplane.LeasePort, b protocol.Ack) (protocol.LeaseControl, error) {
			c, err := l.Ack(ctx, p, b)
			if err == nil { // one info line per Run transition; never the lease token
				s.log.Info("attempt acknowledged", "run", b.RunID, "attempt", b.AttemptID, "phase", string(b.Phase),
					"action", string(c.Action), "worker", p.WorkerID)
			}
			return c, err
		}, protocol.LeaseControl.Encode)
	case protocol.PathLeaseLog:
		out, err = callLease(ctx, s, body, protocol.DecodeLogChunk, func(ctx context.Context, l controlplane.LeasePort, b protocol.LogChunk) (protocol.LogReceipt, error) {
			return l.Log(ctx, p, b)
		}, protocol.LogReceipt.Encode)
	case protocol.PathLeaseComplete:
		out, err = callLease(ctx, s, body, protocol.DecodeCompletion, func(ctx context.Context, l controlplane.LeasePort, b protocol.Completion) (protocol.CompletionReceipt, error) {
			rc, err := l.Complete(ctx, p, b)
			if err == nil {
				s.log.Info("attempt completed", "run", b.RunID, "attempt", b.AttemptID, "status", string(b.Status),
					"class", string(b.ErrorClass), "disposition", string(rc.Disposition), "worker", p.WorkerID)
			}
			return rc, err
		}, protocol.CompletionReceipt.Encode)
	}
	if err != nil {
		s.fail(ctx, w, r, p.WorkerID, err)
		return
	}
	httpkit.WriteRaw(w, http.StatusOK, out)
}

// call decodes, runs the port and encodes the answer.
func call[In, Out any](ctx context.Context, body []byte, decode func([]byte) (In, error),
	port func(context.Context, In) (Out, error), encode func(Out) ([]byte, error)) ([]byte, error) {
	in, err := decode(body)
	if err != nil {
		return nil, err
	}
	out, err := port(ctx, in)
	if err != nil {
		return nil, err
	}
	raw, err := encode(out)
	if err != nil {
		return nil, errs.E(errs.Internal, "", "encode answer: %v", err)
	}
	return raw, nil
}

func callLease[In, Out any](ctx context.Context, s *Server, body []byte, decode func([]byte) (In, error),
	port func(context.Context, controlplane.LeasePort, In) (Out, error), encode func(Out) ([]byte, error)) ([]byte, error) {
	if s.cfg.Leases == nil {
		return nil, errs.E(errs.Unavailable, "", "no dispatcher is configured in this replica")
	}
	return call(ctx, body, decode, func(ctx context.Context, in In) (Out, error) { return port(ctx, s.cfg.Leases, in) }, encode)
}

// heartbeat records the session heartbeat, then renews the listed
// attempts' leases (two transactions, ADR 0010): a renewal failure after a
// recorded heartbeat answers 503 and the worker retries.
func (s *Server) heartbeat(ctx context.Context, p controlplane.Principal, b protocol.SessionHeartbeat) (protocol.SessionState, error) {
	if b.CredentialID != p.CredentialID {
		return protocol.SessionState{}, errs.E(errs.Conflict, "credentialId", "is not the credential this request authenticated with")
	}
	st, err := s.cfg.Sessions.Heartbeat(ctx, p, b)
	if err != nil || len(b.RunningAttemptIDs) == 0 {
		return st, err
	}
	if s.cfg.Leases == nil {
		return protocol.SessionState{}, errs.E(errs.Unavailable, "", "no dispatcher is configured in this replica to renew leases")
	}
	controls, err := s.cfg.Leases.RenewForHeartbeat(ctx, p, b.SessionID, b.Generation, b.RunningAttemptIDs)
	if err != nil {
		return protocol.SessionState{}, err
	}
	if len(controls) != len(b.RunningAttemptIDs) {
		return protocol.SessionState{}, errs.E(errs.Internal, "", "renewal answered %d controls for %d attempts", len(controls), len(b.RunningAttemptIDs))
	}
	for i := range controls {
		if st.Status == protocol.SessionOffline && controls[i].Action != protocol.LeaseRevoke {
			// An offline session holds no lease; stopping is always safe.
			s.log.Error("renewal answered a non-revoke control for an offline session; sending revoke", "action", string(controls[i].Action))
			controls[i] = protocol.LeaseControl{AttemptID: controls[i].AttemptID, Action: protocol.LeaseRevoke}
		}
	}
	st.Controls = controls
	return st, nil
}

// pull answers 200 with an offer or 204 with Retry-After.
func (s *Server) pull(ctx context.Context, w http.ResponseWriter, r *http.Request, p controlplane.Principal, body []byte) {
	req, err := protocol.DecodeOfferPullRequest(body)
	if err == nil && s.cfg.Leases == nil {
		err = errs.E(errs.Unavailable, "", "no dispatcher is configured in this replica")
	}
	if err != nil {
		s.fail(ctx, w, r, p.WorkerID, err)
		return
	}
	offer, retryAfter, err := s.cfg.Leases.Pull(ctx, p, req)
	if err != nil {
		s.fail(ctx, w, r, p.WorkerID, err)
		return
	}
	if offer == nil {
		pauseMs := s.pullPauseMs(retryAfter)
		w.Header().Set(protocol.HeaderRetryAfter, strconv.FormatInt(protocol.RetryAfterSeconds(pauseMs), 10))
		w.Header().Set(protocol.HeaderRetryAfterMs, strconv.FormatInt(pauseMs, 10))
		w.WriteHeader(http.StatusNoContent)
		return
	}
	raw, err := offer.Encode()
	if err != nil {
		s.fail(ctx, w, r, p.WorkerID, errs.E(errs.Internal, "", "encode offer: %v", err))
		return
	}
	s.log.Info("run leased", "run", offer.RunID, "attemptNumber", offer.AttemptNumber, "worker", p.WorkerID)
	httpkit.WriteRaw(w, http.StatusOK, raw)
}

// pullPauseMs is the pause of an empty pull (ADR 0030): the dispatcher's
// idle pause, shortened by the pacer to just after the next scheduled
// occurrence, always within the header's range.
func (s *Server) pullPauseMs(idle time.Duration) int64 {
	idleMs := min(max(idle.Milliseconds(), protocol.MinRetryAfterSeconds*1000), protocol.MaxRetryAfterMs)
	if s.cfg.Pacer == nil {
		return idleMs
	}
	return min(max(s.cfg.Pacer.PullPauseMs(idleMs), protocol.MinRetryAfterMs), idleMs)
}

// fail answers a coded error. Context expiry and cancellation are 503 (the
// worker retries); uncoded errors are 500 and logged without the body.
func (s *Server) fail(ctx context.Context, w http.ResponseWriter, r *http.Request, workerID string, err error) {
	// A statement cancelled because the request ran out of time comes
	// back as a server error (57014), not as the context's error.
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		err = errs.E(errs.Unavailable, "", "the request timed out; retry")
	}
	body, internal := errs.Public(err)
	status := errs.HTTPStatus(body.Code)
	if internal || status == http.StatusServiceUnavailable {
		s.log.Warn("worker ingress request failed", "route", r.URL.Path, "worker", workerID, "code", body.Code, "err", err)
	}
	if status == http.StatusServiceUnavailable {
		w.Header().Set(protocol.HeaderRetryAfter, "1")
	}
	httpkit.WriteErrorStatus(w, status, errs.FromBody(body))
}

// audit writes a denial line; a failure to write it is logged, and the
// request is refused either way.
func (s *Server) audit(ctx context.Context, d controlplane.Denial) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := s.cfg.Audit.AuditDenied(actx, d); err != nil {
		s.log.Warn("worker ingress could not write an audit line", "reason", d.Reason, "err", err)
	}
	s.log.Info("worker ingress refused a request", "reason", d.Reason, "route", d.Route, "remote", d.RemoteAddr, "worker", d.WorkerID)
}

// denyHandshake audits a refused handshake, at most auditBurst per peer
// address and then one per auditRefill.
func (s *Server) denyHandshake(ctx context.Context, addr, reason string, certs []*x509.Certificate) {
	if !s.audits.charge(addr) {
		return
	}
	d := controlplane.Denial{Reason: reason, RemoteAddr: addr, TrustGeneration: s.trust.current().n}
	if ids := certIdentities(certs); len(ids) > 0 {
		d.CertIdentity = ids[0]
	}
	s.audit(ctx, d)
}

// fingerprint keys the failure limiter: the SHA-256 of the leaf.
func fingerprint(certs []*x509.Certificate) string {
	if len(certs) == 0 {
		return ""
	}
	sum := sha256.Sum256(certs[0].Raw)
	return hex.EncodeToString(sum[:])
}

// certIdentities lists a leaf's URI SANs, DNS SANs and common name that
// are 1–256 bytes of printable ASCII without spaces (as
// workers.tls_identity allows), sorted and deduplicated.
func certIdentities(certs []*x509.Certificate) []string {
	if len(certs) == 0 {
		return nil
	}
	leaf := certs[0]
	var out []string
	add := func(s string) {
		if len(s) == 0 || len(s) > 256 {
			return
		}
		for i := 0; i < len(s); i++ {
			if s[i] < 0x21 || s[i] > 0x7e {
				return
			}
		}
		out = append(out, s)
	}
	for _, u := range leaf.URIs {
		add(u.String())
	}
	for _, d := range leaf.DNSNames {
		add(d)
	}
	add(leaf.Subject.CommonName)
	sort.Strings(out)
	j := 0
	for i, s := range out {
		if i == 0 || s != out[j-1] {
			out[j] = s
			j++
		}
	}
	return out[:j]
}

func peerHostString(remote string) string {
	if i := strings.LastIndexByte(remote, ':'); i > 0 {
		return strings.Trim(remote[:i], "[]")
	}
	return remote
}
