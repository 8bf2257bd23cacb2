package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ql3/ql3/core/cleartext"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge/httpapi"
)

// maxResponseBytes bounds a JSON response the CLI will read; log bodies are
// streamed and not subject to it.
const maxResponseBytes = 16 << 20

// Client calls a running ql3-edge server's HTTP API.
type Client struct {
	BaseURL string // "http://127.0.0.1:5700"
	Token   string // admin token; empty sends no Authorization header
	HTTP    *http.Client
}

// NewClient returns a client for addr ("127.0.0.1:5700" or a full URL).
// A token goes over plain http:// only to a loopback peer unless insecure
// (core/cleartext, the rule ql3-control's CLI applies): an IP literal
// beyond loopback is refused here, a host name when it connects.
func NewClient(addr, token string, insecure bool) (*Client, error) {
	base, err := baseURL(addr)
	if err != nil {
		return nil, err
	}
	c := &Client{BaseURL: base, Token: token, HTTP: &http.Client{}}
	if token == "" || insecure {
		return c, nil
	}
	u, _ := url.Parse(base) // baseURL parsed it
	if err := cleartext.Check(u.Scheme, u.Hostname()); err != nil {
		return nil, errs.Invalidf("addr", "%s: %v; %s", u.Host, cleartext.ErrToken, cleartext.Remedy)
	}
	if u.Scheme == "http" {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = cleartext.GuardDial((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			func(c net.Conn) string { return c.RemoteAddr().String() })
		c.HTTP.Transport = tr
	}
	return c, nil
}

func baseURL(addr string) (string, error) {
	if addr == "" {
		return "", errs.Invalidf("addr", "empty server address")
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", errs.Invalidf("addr", "expected host:port or http(s)://host:port, got %q", addr)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// request describes one API call.
type request struct {
	method  string
	path    string // already escaped, e.g. "/api/v1/tasks/" + url.PathEscape(id)
	query   url.Values
	body    any
	raw     io.Reader // instead of body: bytes sent as application/octet-stream
	headers map[string]string
}

// do sends req and decodes a 2xx JSON response into out (unless out is nil).
// Error responses come back as *errs.Error carrying the server's code.
func (c *Client) do(ctx context.Context, req request, out any) error {
	resp, err := c.send(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
		return nil
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBytes))
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("decoding the %s %s response: %w", req.method, req.path, err)
	}
	return nil
}

// send performs req and returns the response if its status is 2xx; otherwise
// it closes the body and returns the decoded error.
func (c *Client) send(ctx context.Context, req request) (*http.Response, error) {
	var body io.Reader
	if req.body != nil {
		data, err := json.Marshal(req.body)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(data)
	}
	u := c.BaseURL + req.path
	if len(req.query) > 0 {
		u += "?" + req.query.Encode()
	}
	if req.raw != nil {
		body = req.raw
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, u, body)
	if err != nil {
		return nil, err
	}
	switch {
	case req.raw != nil:
		hr.Header.Set("Content-Type", "application/octet-stream")
	case req.body != nil:
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Accept", "application/json")
	if c.Token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for k, v := range req.headers {
		hr.Header.Set(k, v)
	}
	resp, err := c.HTTP.Do(hr)
	if errors.Is(err, cleartext.ErrToken) {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, errs.Invalidf("addr", "%v; %s", err, cleartext.Remedy)
	}
	if err != nil {
		return nil, &unreachableError{base: c.BaseURL, err: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, decodeError(resp)
}

func decodeError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var eb httpapi.ErrorBody
	if json.Unmarshal(data, &eb) == nil && eb.Code != "" {
		return &errs.Error{Code: eb.Code, Field: eb.Field, Message: eb.Message}
	}
	msg := strings.TrimSpace(string(data))
	if msg == "" {
		msg = resp.Status
	}
	return &errs.Error{Code: errs.CodeForHTTPStatus(resp.StatusCode), Message: msg}
}

// unreachableError is a transport failure: no server, refused, timed out.
type unreachableError struct {
	base string
	err  error
}

func (e *unreachableError) Error() string {
	var op *net.OpError
	if errors.As(e.err, &op) && op.Op == "dial" {
		return fmt.Sprintf("cannot reach the ql3-edge server at %s (is `ql3-edge serve` running? set --addr or QL3_ADDR): %v", e.base, op.Err)
	}
	return fmt.Sprintf("request to %s failed: %v", e.base, e.err)
}

func (e *unreachableError) Unwrap() error { return e.err }

// withTimeout bounds a non-streaming call.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
