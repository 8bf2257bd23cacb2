package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/ql3/ql3/core/errs"
)

// API tokens never cross a network in cleartext unless the user says so
// (--insecure): serve binds plain HTTP only on loopback, and the client only
// sends a token over http:// to a loopback peer. Both decide by the address
// actually bound or connected, never by the spelling of a host name.

// isLoopbackAddr reports whether a bound or connected address is loopback
// (127.0.0.0/8, ::1). The unspecified address (":5800", 0.0.0.0, ::) is
// every interface, so it is not.
func isLoopbackAddr(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// listenAdmin binds the admin API's address and refuses plain HTTP beyond
// loopback unless insecure.
func listenAdmin(addr string, tlsOn, insecure bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	if !tlsOn && !insecure && !isLoopbackAddr(ln.Addr()) {
		bound := ln.Addr().String()
		ln.Close()
		return nil, errs.Invalidf("listen", "%s (bound %s) is beyond loopback and would serve API tokens over plain HTTP: give --tls-cert/--tls-key, listen on 127.0.0.1, or pass --insecure", addr, bound)
	}
	return ln, nil
}

// errCleartextToken is returned by the client's dialer when a plain-HTTP
// connection would carry the token to a non-loopback peer.
var errCleartextToken = errors.New("refusing to send the API token over plain http:// to a non-loopback address")

// cleartextGuard wraps a dialer so that it only connects to loopback peers.
// Checking the connected address (after DNS, through any proxy) is what
// makes "localhost" trustworthy: a name alone proves nothing.
func cleartextGuard(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if !isLoopbackAddr(conn.RemoteAddr()) {
			peer := conn.RemoteAddr().String()
			conn.Close()
			return nil, fmt.Errorf("%w (%s connects to %s)", errCleartextToken, addr, peer)
		}
		return conn, nil
	}
}

// guardCleartext checks the server URL up front (an IP literal beyond
// loopback fails without any network traffic) and installs the dial-time
// check for host names on tr.
func guardCleartext(base *url.URL, insecure bool, tr *http.Transport) error {
	if base.Scheme != "http" || insecure {
		return nil
	}
	if ip := net.ParseIP(base.Hostname()); ip != nil && !ip.IsLoopback() {
		return errs.Invalidf("server", "%s: %v; use https:// (with --ca-file if needed) or pass --insecure", base.Host, errCleartextToken)
	}
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr.DialContext = cleartextGuard(dial)
	return nil
}
