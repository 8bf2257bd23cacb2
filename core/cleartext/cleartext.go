// Package cleartext is the one rule both CLIs (ql3-edge's and
// ql3-control's) apply before sending a bearer token over plain HTTP: only
// to a loopback peer, unless the user passes --insecure (ADR 0022). A
// server given as an IP literal beyond loopback is refused before any
// traffic; a host name is judged by the address the connection reached
// (after DNS and any proxy), so "localhost" proves nothing by itself.
//
// The package does no I/O: GuardDial wraps the caller's dialer, whatever
// its connection type.
package cleartext

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
)

// ErrToken is the refusal, wrapped by GuardDial's error and returned by
// Check for an IP literal.
var ErrToken = errors.New("refusing to send the API token over plain http:// to a non-loopback address")

// Remedy is what the refusal tells the user to do; a CLI that takes a CA
// file adds how to pass it.
const Remedy = "use https:// or pass --insecure"

// Check is the rule before any traffic: a token over http (scheme "http")
// to host, the URL's host without brackets or port. It returns ErrToken when
// host is an IP literal that is not loopback, nil otherwise (https, a
// loopback literal, or a name left to GuardDial).
func Check(scheme, host string) error {
	if scheme != "http" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && !ip.Unmap().IsLoopback() {
		return fmt.Errorf("%w (%s)", ErrToken, host)
	}
	return nil
}

// Conn is what GuardDial needs of a connection: closing it.
type Conn interface{ Close() error }

// GuardDial wraps dial so that a connection whose peer (remote gives its
// "ip:port") is not loopback is closed and refused with an error wrapping
// ErrToken that names both the address asked for and the peer reached.
func GuardDial[C Conn](dial func(ctx context.Context, network, addr string) (C, error), remote func(C) string) func(ctx context.Context, network, addr string) (C, error) {
	return func(ctx context.Context, network, addr string) (C, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return conn, err
		}
		peer := remote(conn)
		if !LoopbackPeer(peer) {
			conn.Close()
			var none C
			return none, fmt.Errorf("%w (%s connects to %s)", ErrToken, addr, peer)
		}
		return conn, nil
	}
}

// LoopbackPeer reports whether a connected "ip:port" is loopback
// (127.0.0.0/8, ::1, or IPv4 loopback mapped into IPv6).
func LoopbackPeer(peer string) bool {
	ap, err := netip.ParseAddrPort(peer)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}
