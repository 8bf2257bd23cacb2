// Package client is the worker's one HTTPS client for the ingress: TLS 1.3
// only, the client certificate and CA bundle from identity.Provider, the
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
	"io"
	"log/slog"
	"net"
	"net/http"
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
	Header http.Header
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

// Client talks to one ingress. Requests are serialised by the transport's
// one connection; the client is safe for concurrent use.
type Client struct {
	cfg  Config
	base *url.URL

	mu     sync.Mutex
	tr     *http.Transport
	hc     *http.Client
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
	u.Path = ""
	return &Client{cfg: cfg, base: u}, nil
}

// Dials is the number of TCP connections opened so far.
func (c *Client) Dials() int64 { return c.dials.Load() }

// transport returns the HTTP client for the current identity, replacing
// the transport (and closing the old one's idle connection) when the
// certificate, CA bundle or credential id changed.
func (c *Client) transport(m *identity.Material, credID string) *http.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tr != nil && c.fp == m.Fingerprint && c.credID == credID {
		return c.hc
	}
	old := c.tr
	cert := m.Cert
	tlsCfg := &tls.Config{
		MinVersion: tls.VersionTLS13,
		MaxVersion: tls.VersionTLS13,
		RootCAs:    m.Roots,
		ServerName: c.cfg.ServerName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return cert, nil
		},
		// ClientSessionCache stays nil: every connection is a full
		// handshake that presents the current certificate.
	}
	dial := c.cfg.Dial
	c.tr = &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c.dials.Add(1)
			return dial(ctx, network, addr)
		},
		TLSClientConfig:        tlsCfg,
		TLSHandshakeTimeout:    handshakeTimeout,
		ForceAttemptHTTP2:      false,
		DisableCompression:     true,
		MaxIdleConns:           1,
		MaxIdleConnsPerHost:    1,
		MaxConnsPerHost:        1,
		IdleConnTimeout:        90 * time.Second,
		ResponseHeaderTimeout:  c.cfg.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
	}
	c.hc = &http.Client{
		Transport: c.tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirects are not followed")
		},
	}
	c.fp, c.credID = m.Fingerprint, credID
	if old != nil {
		old.CloseIdleConnections()
	}
	return c.hc
}

// Close closes the idle connection.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tr != nil {
		c.tr.CloseIdleConnections()
	}
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
	hc := c.transport(m, cred.ID)
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	u := *c.base
	u.Path = path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return Response{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", cred.Header())
	resp, err := hc.Do(req)
	if err != nil {
		if NotYetValid(err) {
			if !c.notYetValidLogged.Swap(true) {
				c.cfg.Logger.Warn("the ingress certificate is not valid yet by this machine's clock (no RTC or NTP yet?); retrying")
			}
		}
		return Response{}, &UnknownError{Err: scrub(err)}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		data, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxResp)+1))
		if err != nil {
			return Response{}, &UnknownError{Status: resp.StatusCode, Err: scrub(err)}
		}
		if len(data) > maxResp {
			return Response{}, &UnknownError{Status: resp.StatusCode, Err: fmt.Errorf("answer is larger than %d bytes", maxResp)}
		}
		return Response{Status: resp.StatusCode, Body: data, Header: resp.Header}, nil
	case retryableStatus(resp.StatusCode):
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if resp.StatusCode == http.StatusMisdirectedRequest {
			// Verified under trust that has since changed: reconnect.
			c.Close()
		}
		return Response{}, &UnknownError{Status: resp.StatusCode, Err: fmt.Errorf("%s (%s)", http.StatusText(resp.StatusCode), errorCode(data))}
	default:
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return Response{}, &StatusError{Status: resp.StatusCode, Code: errorCode(data)}
	}
}

// retryableStatus: answers that refuse nothing about the request itself.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusRequestTimeout,
		http.StatusMisdirectedRequest, http.StatusTooManyRequests:
		return true
	}
	return code >= 500
}

// scrub drops the URL from a transport error (it is always the same
// ingress and adds noise), keeping the cause.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
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
