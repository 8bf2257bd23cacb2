package client

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// The worker speaks HTTP/1.1 itself over its one TLS connection instead
// of linking net/http: the ingress needs one method, one content type and
// bounded bodies, and net/http (with mime, multipart, gzip, idna) costs
// about 0.8 MiB of a router binary (ADR 0020).

// HTTP statuses the worker distinguishes.
const (
	StatusOK                 = 200
	StatusNoContent          = 204
	StatusBadRequest         = 400
	StatusUnauthorized       = 401
	StatusForbidden          = 403
	StatusNotFound           = 404
	StatusRequestTimeout     = 408
	StatusConflict           = 409
	StatusGone               = 410
	StatusMisdirectedRequest = 421
	StatusTooManyRequests    = 429
)

// Limits of an answer's head.
const (
	maxHeaderBytes = 16 << 10
	maxHeaders     = 64
	// idleRedial: a connection idle this long is not reused (servers time
	// idle connections out; a write into a closed one is an unknown outcome).
	idleRedial = 45 * time.Second
)

// Header holds an answer's header fields by lower-case name (the last
// value wins; the worker reads Date and Retry-After only).
type Header map[string]string

// Get returns the value of name (any case).
func (h Header) Get(name string) string { return h[strings.ToLower(name)] }

// DateLayout is the HTTP date format (RFC 9110 IMF-fixdate).
const DateLayout = "Mon, 02 Jan 2006 15:04:05 GMT"

// ParseDate parses an IMF-fixdate.
func ParseDate(v string) (time.Time, error) { return time.Parse(DateLayout, v) }

// conn is one kept-alive TLS connection.
type conn struct {
	tc       *tls.Conn
	br       *bufio.Reader
	lastUsed time.Time
}

func (c *conn) close() { _ = c.tc.Close() }

// roundTrip writes one POST and reads its answer (body up to maxBody;
// more is errTooLarge). reusable reports whether the connection may carry
// another request.
func (c *conn) roundTrip(ctx context.Context, host, path, auth string, body []byte, maxBody int, deadline time.Time) (status int, h Header, out []byte, reusable bool, err error) {
	if err := c.tc.SetDeadline(deadline); err != nil {
		return 0, nil, nil, false, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.tc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var req strings.Builder
	req.Grow(256 + len(auth))
	req.WriteString("POST ")
	req.WriteString(path)
	req.WriteString(" HTTP/1.1\r\nHost: ")
	req.WriteString(host)
	req.WriteString("\r\nUser-Agent: ql3-worker\r\nContent-Type: application/json\r\nAccept-Encoding: identity\r\nContent-Length: ")
	req.WriteString(strconv.Itoa(len(body)))
	req.WriteString("\r\nAuthorization: ")
	req.WriteString(auth)
	req.WriteString("\r\n\r\n")
	if _, err := io.WriteString(c.tc, req.String()); err != nil {
		return 0, nil, nil, false, err
	}
	if _, err := c.tc.Write(body); err != nil {
		return 0, nil, nil, false, err
	}
	for {
		status, h, err = readHead(c.br)
		if err != nil {
			return 0, nil, nil, false, err
		}
		if status >= 200 || status == 101 {
			break
		}
		// 1xx (100 Continue, 103 Early Hints): the real answer follows.
	}
	reusable = !strings.EqualFold(h.Get("Connection"), "close")
	switch {
	case status == StatusNoContent || status == 304:
		return status, h, nil, reusable, nil
	case strings.EqualFold(h.Get("Transfer-Encoding"), "chunked"):
		out, err = readChunked(c.br, maxBody)
	case h.Get("Transfer-Encoding") != "":
		return status, h, nil, false, fmt.Errorf("unsupported transfer encoding %q", h.Get("Transfer-Encoding"))
	case h.Get("Content-Length") != "":
		n, perr := strconv.ParseInt(h.Get("Content-Length"), 10, 64)
		if perr != nil || n < 0 {
			return status, h, nil, false, errors.New("bad Content-Length")
		}
		if n > int64(maxBody) {
			return status, h, nil, false, errTooLarge
		}
		out = make([]byte, n)
		_, err = io.ReadFull(c.br, out)
	default:
		// No length: the body ends with the connection.
		out, err = io.ReadAll(io.LimitReader(c.br, int64(maxBody)+1))
		reusable = false
		if err == nil && len(out) > maxBody {
			err = errTooLarge
		}
	}
	if err != nil {
		return status, h, nil, false, err
	}
	return status, h, out, reusable, nil
}

var errTooLarge = errors.New("answer is larger than its limit")

// readHead reads a status line and header fields.
func readHead(br *bufio.Reader) (int, Header, error) {
	budget := maxHeaderBytes
	line, err := readLine(br, &budget)
	if err != nil {
		return 0, nil, err
	}
	proto, rest, ok := strings.Cut(line, " ")
	if !ok || (proto != "HTTP/1.1" && proto != "HTTP/1.0") || len(rest) < 3 {
		return 0, nil, fmt.Errorf("malformed status line")
	}
	status, err := strconv.Atoi(rest[:3])
	if err != nil || status < 100 || status > 599 {
		return 0, nil, fmt.Errorf("malformed status code")
	}
	h := Header{}
	if proto == "HTTP/1.0" {
		h["connection"] = "close"
	}
	for n := 0; ; n++ {
		line, err := readLine(br, &budget)
		if err != nil {
			return 0, nil, err
		}
		if line == "" {
			return status, h, nil
		}
		if n == maxHeaders {
			return 0, nil, errors.New("too many header fields")
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return 0, nil, errors.New("malformed header field")
		}
		h[strings.ToLower(k)] = strings.TrimSpace(v)
	}
}

// readLine reads one CRLF- (or LF-) terminated line within budget.
func readLine(br *bufio.Reader, budget *int) (string, error) {
	var b []byte
	for {
		frag, err := br.ReadSlice('\n')
		*budget -= len(frag)
		if *budget < 0 {
			return "", errors.New("answer head is too large")
		}
		b = append(b, frag...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", err
		}
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// readChunked decodes a chunked body of at most max bytes (trailers are
// read and ignored).
func readChunked(br *bufio.Reader, max int) ([]byte, error) {
	var out []byte
	budget := maxHeaderBytes
	for {
		line, err := readLine(br, &budget)
		if err != nil {
			return nil, err
		}
		sizeText, _, _ := strings.Cut(line, ";")
		size, err := strconv.ParseInt(strings.TrimSpace(sizeText), 16, 64)
		if err != nil || size < 0 {
			return nil, errors.New("malformed chunk size")
		}
		if size == 0 {
			for {
				l, err := readLine(br, &budget)
				if err != nil {
					return nil, err
				}
				if l == "" {
					return out, nil
				}
			}
		}
		if int64(len(out))+size > int64(max) {
			return nil, errTooLarge
		}
		start := len(out)
		out = append(out, make([]byte, size)...)
		if _, err := io.ReadFull(br, out[start:]); err != nil {
			return nil, err
		}
		if l, err := readLine(br, &budget); err != nil || l != "" {
			return nil, errors.New("malformed chunk end")
		}
	}
}

// dial opens a TLS 1.3 connection and completes the handshake.
func dial(ctx context.Context, d func(context.Context, string, string) (net.Conn, error), addr string, cfg *tls.Config, timeout time.Duration) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := d(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(raw, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return &conn{tc: tc, br: bufio.NewReaderSize(tc, 4<<10)}, nil
}
