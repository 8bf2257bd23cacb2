package app

import (
	"crypto/tls"
	"fmt"
	"net"
)

// listenTCP binds the API's socket; a variable so a test can stand in for a
// resolver that maps a name somewhere unexpected.
var listenTCP = net.Listen

// isLoopbackAddr reports whether a bound address is loopback (127.0.0.0/8,
// ::1). The unspecified address (":5700", 0.0.0.0, ::) listens on every
// interface, so it is not. The decision is by what was bound, never by
// the spelling of --listen: "localhost" may resolve anywhere.
func isLoopbackAddr(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// bindAPI binds the listen address and applies the rules that depend on
// where it landed: --no-auth only on loopback; TLS when configured.
func bindAPI(cfg Config) (ln net.Listener, loopback bool, err error) {
	var tlsCfg *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, false, fmt.Errorf("loading the TLS certificate (--tls-cert/--tls-key): %w", err)
		}
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	ln, err = listenTCP("tcp", cfg.Listen)
	if err != nil {
		return nil, false, fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	loopback = isLoopbackAddr(ln.Addr())
	if cfg.NoAuth && !loopback {
		bound := ln.Addr().String()
		ln.Close()
		return nil, false, fmt.Errorf("refusing to serve %s (bound %s) without the admin token: --no-auth is only allowed when the bound address is loopback (127.0.0.1, [::1])", cfg.Listen, bound)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	return ln, loopback, nil
}
