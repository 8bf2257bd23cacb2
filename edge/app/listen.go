package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// listenTCP binds the API's socket; a variable so a test can stand in for a
// resolver that maps a name somewhere unexpected.
var listenTCP = net.Listen

// lookupHost resolves a --listen host name for the check before start; a
// variable for the same reason.
var lookupHost = net.DefaultResolver.LookupIPAddr

// resolveTimeout bounds the name lookup of the check before start.
const resolveTimeout = 5 * time.Second

// isLoopbackAddr reports whether a bound address is loopback (127.0.0.0/8,
// ::1). The unspecified address (":5700", 0.0.0.0, ::) listens on every
// interface, so it is not. The decision is by what was bound, never by
// the spelling of --listen: "localhost" may resolve anywhere.
func isLoopbackAddr(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// checkListen is the part of the listen rules that can be decided before
// anything is created (#27): the TLS pair loads, the address parses, and
// with --no-auth every address the host stands for is loopback (an empty
// host or an unspecified address is every interface). It creates nothing.
// bindAPI applies the --no-auth rule again to the address really bound,
// which is what decides (ADR 0021).
func checkListen(ctx context.Context, cfg Config) (*tls.Config, error) {
	var tlsCfg *tls.Config
	if cfg.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("loading the TLS certificate (--tls-cert/--tls-key): %w", err)
		}
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	if !cfg.NoAuth {
		return tlsCfg, nil
	}
	if host == "" {
		return nil, errNoAuthBeyondLoopback(cfg.Listen, "every interface")
	}
	if ip := net.ParseIP(host); ip != nil {
		if !ip.IsLoopback() {
			return nil, errNoAuthBeyondLoopback(cfg.Listen, ip.String())
		}
		return tlsCfg, nil
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	addrs, err := lookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	for _, a := range addrs {
		if !a.IP.IsLoopback() {
			return nil, errNoAuthBeyondLoopback(cfg.Listen, a.IP.String())
		}
	}
	return tlsCfg, nil
}

func errNoAuthBeyondLoopback(listen, where string) error {
	return fmt.Errorf("refusing to serve %s (%s) without the admin token: --no-auth is only allowed when the bound address is loopback (127.0.0.1, [::1])", listen, where)
}

// bindAPI binds the listen address and applies the rules that depend on
// where it landed: --no-auth only on loopback; TLS when configured (tlsCfg
// from checkListen).
func bindAPI(cfg Config, tlsCfg *tls.Config) (ln net.Listener, loopback bool, err error) {
	ln, err = listenTCP("tcp", cfg.Listen)
	if err != nil {
		return nil, false, fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	loopback = isLoopbackAddr(ln.Addr())
	if cfg.NoAuth && !loopback {
		bound := ln.Addr().String()
		ln.Close()
		return nil, false, errNoAuthBeyondLoopback(cfg.Listen, "bound "+bound)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	return ln, loopback, nil
}
