// Package client is the worker's one HTTPS client for the ingress: HTTP/1.1
// written by hand (no net/http, see http1.go) over TLS 1.3 only, the client certificate and CA bundle from identity.Provider, the
// ql3w_ credential as a bearer header read per request, one kept-alive
// connection, no client session cache (a resumed session would skip a
// revoked certificate), no redirects, no compression, no proxy, bounded
// request and response bodies and a timeout per request.
//
// When the identity's fingerprint or the credential id changes, the client
// builds a new transport and closes the old one's idle connection, so the
// next request shakes hands with the new certificate and nothing keeps
// talking under the old one.
//
// Outcomes are split three ways, because the worker's journal depends on
// it: a 2xx (Response), a definite refusal (*StatusError: a 4xx the
// authority decided on the request itself — invalid, not found, conflict,
// too large), and a retryable outcome (*UnknownError: transport failure,
// timeout, 5xx, an oversized or unreadable answer, which may have been
// applied; and 401/403/408/421/429, which were not, but which say nothing
// about the request — a credential mid-rotation, trust that changed, a
// rate limit). Callers retry the identical request and never drop a
// journal record on a retryable outcome.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ql3/ql3/worker/identity"
)

// Timeouts (DESIGN.md §8).
const (
	DefaultTimeout   = 15 * time.Second
	MaxTimeout       = 60 * time.Second
	handshakeTimeout = 10 * time.Second
	maxErrorBody     = 4 << 10
)

// Config configures a Client.
type Config struct {
	BaseURL    string        // https://host:port of the worker ingress
	ServerName string        // TLS server name; "" → the URL's host
	Timeout    time.Duration // per request; 0 → DefaultTimeout; ≤ MaxTimeout
	Identity   *identity.Provider
	Logger     *slog.Logger
	// Dial replaces the network dialer (tests black-hole or count
	// connections with it); nil → net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Response is a 2xx answer.
type Response struct {
	Status int
	Body   []byte
	Header Header
}

// StatusError is a definite refusal: the server answered and did not apply
// the request.
type StatusError struct {
	Status int
	Code   string // the errs code from the body when present
}

func (e *StatusError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("ingress answered %d (%s)", e.Status, e.Code)
	}
	return fmt.Sprintf("ingress answered %d", e.Status)
}

// UnknownError is an outcome the worker cannot know: the request may or
// may not have been applied.
type UnknownError struct {
	Status int // 0 when no answer arrived
	Err    error
}

func (e *UnknownError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("ingress answered %d (outcome unknown, will retry)", e.Status)
	}
	return "ingress unreachable (outcome unknown, will retry): " + e.Err.Error()
}

func (e *UnknownError) Unwrap() error { return e.Err }

// IsUnknown reports whether err is an unknown outcome.
func IsUnknown(err error) bool {
	var u *UnknownError
	return errors.As(err, &u)
}

// StatusOf returns the HTTP status of a definite refusal, else 0.
func StatusOf(err error) int {
	var s *StatusError
	if errors.As(err, &s) {
		return s.Status
	}
	return 0
}

// NotYetValid reports whether err is a certificate that is not valid yet by
// this machine's clock: a router without an RTC boots in 1970 until NTP
// syncs. It is retryable, never fatal.
func NotYetValid(err error) bool {
	var inv x509.CertificateInvalidError
	if errors.As(err, &inv) && inv.Reason == x509.Expired && inv.Cert != nil {
		return time.Now().Before(inv.Cert.NotBefore)
	}
	return false
}

// Client talks to one ingress over one kept-alive connection; requests
// are serialised. Safe for concurrent use.
type Client struct {
	cfg  Config
	host string // Host header
	addr string // dial address

	mu     sync.Mutex
	tlsCfg *tls.Config
	conn   *conn
	fp     [32]byte
	credID string

	notYetValidLogged atomic.Bool
	dials             atomic.Int64
}

// New validates cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("ingressUrl: must be https://host:port with no path, query or user info")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout < time.Second || cfg.Timeout > MaxTimeout {
		return nil, fmt.Errorf("requestTimeout: must be 1s..%s, got %s", MaxTimeout, cfg.Timeout)
	}
	if cfg.Identity == nil {
		return nil, errors.New("client: an identity provider is required")
	}
	if cfg.ServerName == "" {
		cfg.ServerName = u.Hostname()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: handshakeTimeout, KeepAlive: 30 * time.Second}
		cfg.Dial = d.DialContext
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	return &Client{cfg: cfg, host: u.Host, addr: addr}, nil
}

// Dials is the number of TCP connections opened so far.
func (c *Client) Dials() int64 { return c.dials.Load() }

// Close closes the connection.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropConn()
}

func (c *Client) dropConn() {
	if c.conn != nil {
		c.conn.close()
		c.conn = nil
	}
}

// useIdentity rebuilds the TLS configuration, and closes the connection,
// when the certificate, CA bundle or credential id changed. Called with
// c.mu held.
func (c *Client) useIdentity(m *identity.Material, credID string) {
	if c.tlsCfg != nil && c.fp == m.Fingerprint && c.credID == credID {
		return
	}
	cert := m.Cert
	c.tlsCfg = &tls.Config{
		MinVersion: tls.VersionTLS13,
		MaxVersion: tls.VersionTLS13,
		RootCAs:    m.Roots,
		ServerName: c.cfg.ServerName,
		NextProtos: []string{"http/1.1"},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return cert, nil
		},
		// ClientSessionCache stays nil: every connection is a full
		// handshake that presents the current certificate.
	}
	c.fp, c.credID = m.Fingerprint, credID
	c.dropConn()
}

// Post sends body to path and returns a 2xx answer of at most maxResp
// bytes, a *StatusError or an *UnknownError. Identity errors (a refused
// file) are returned as they are: nothing was sent.
func (c *Client) Post(ctx context.Context, path string, body []byte, maxResp int) (Response, error) {
	cred, err := c.cfg.Identity.Credential()
	if err != nil {
		return Response{}, err
	}
	m, _, err := c.cfg.Identity.Material()
	if err != nil {
		return Response{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.useIdentity(m, cred.ID)
	now := time.Now()
	if c.conn != nil && now.Sub(c.conn.lastUsed) > idleRedial {
		c.dropConn()
	}
	if c.conn == nil {
		c.dials.Add(1)
		cn, err := dial(ctx, c.cfg.Dial, c.addr, c.tlsCfg, min(handshakeTimeout, c.cfg.Timeout))
		if err != nil {
			if NotYetValid(err) && !c.notYetValidLogged.Swap(true) {
				c.cfg.Logger.Warn("the ingress certificate is not valid yet by this machine's clock (no RTC or NTP yet?); retrying")
			}
			return Response{}, &UnknownError{Err: err}
		}
		c.conn = cn
	}
	status, h, data, reusable, err := c.conn.roundTrip(ctx, c.host, path, cred.Header(), body,
		max(maxResp, maxErrorBody), now.Add(c.cfg.Timeout))
	if err != nil {
		c.dropConn()
		return Response{}, &UnknownError{Status: status, Err: err}
	}
	c.conn.lastUsed = time.Now()
	if !reusable {
		c.dropConn()
	}
	switch {
	case status >= 200 && status < 300:
		if len(data) > maxResp {
			return Response{}, &UnknownError{Status: status, Err: fmt.Errorf("answer is larger than %d bytes", maxResp)}
		}
		return Response{Status: status, Body: data, Header: h}, nil
	case retryableStatus(status):
		if status == StatusMisdirectedRequest {
			c.dropConn() // verified under trust that has since changed: reconnect
		}
		return Response{}, &UnknownError{Status: status, Err: fmt.Errorf("status %d (%s)", status, errorCode(data))}
	default:
		return Response{}, &StatusError{Status: status, Code: errorCode(data)}
	}
}

// retryableStatus: answers that refuse nothing about the request itself.
func retryableStatus(code int) bool {
	switch code {
	case StatusUnauthorized, StatusForbidden, StatusRequestTimeout,
		StatusMisdirectedRequest, StatusTooManyRequests:
		return true
	}
	return code >= 500
}

// errorCode pulls "code" out of an errs JSON body without a JSON decoder:
// {"error":{"code":"conflict",...}} or {"code":"conflict",...}. It is only
// used for logs and classification, so a miss is harmless.
func errorCode(body []byte) string {
	i := bytes.Index(body, []byte(`"code":"`))
	if i < 0 {
		return ""
	}
	rest := body[i+8:]
	j := bytes.IndexByte(rest, '"')
	if j < 1 || j > 32 {
		return ""
	}
	for _, b := range rest[:j] {
		if !(b >= 'a' && b <= 'z' || b == '_') {
			return ""
		}
	}
	return string(rest[:j])
}
