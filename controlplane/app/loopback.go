package app

import (
	"fmt"
	"net"

	"github.com/ql3/ql3/core/errs"
)

// API tokens never cross a network in cleartext unless the user says so
// (--insecure): serve binds plain HTTP only on loopback, and the client only
// sends a token over http:// to a loopback peer (package cli). Both decide
// by the address actually bound or connected, never by the spelling of a
// host name.

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
