package httpapi

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// Admin tokens look like "ql3c_<16 hex id>_<64 hex secret>" (DESIGN.md §8).
// The id lets an operator tell tokens apart in a file listing without
// revealing the secret; only the SHA-256 of the whole string is stored.
const (
	tokenPrefix    = "ql3c_"
	tokenIDBytes   = 8
	tokenSecBytes  = 32
	maxTokenLength = 256
)

// TokenDigest is the SHA-256 of an admin token's full text.
type TokenDigest [sha256.Size]byte

// DigestToken returns the digest the server stores for token.
func DigestToken(token string) TokenDigest { return sha256.Sum256([]byte(token)) }

// NewAdminToken returns a fresh random admin token.
func NewAdminToken() (string, error) {
	var b [tokenIDBytes + tokenSecBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return tokenPrefix + hex.EncodeToString(b[:tokenIDBytes]) + "_" + hex.EncodeToString(b[tokenIDBytes:]), nil
}

// ValidTokenSyntax reports whether s has the admin token shape; it guards
// files and environment variables against truncation and stray characters.
func ValidTokenSyntax(s string) bool {
	rest, ok := strings.CutPrefix(s, tokenPrefix)
	if !ok {
		return false
	}
	id, secret, ok := strings.Cut(rest, "_")
	return ok && len(id) == 2*tokenIDBytes && len(secret) == 2*tokenSecBytes && isLowerHex(id) && isLowerHex(secret)
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Auth is the request policy:
//
//   - /healthz and /readyz are open (they reveal nothing).
//   - Every mutation (any method but GET/HEAD) needs "Authorization: Bearer <token>".
//   - Reads need the token too. A loopback peer that addressed the server by a
//     loopback Host (127.0.0.1, [::1], localhost) may read without one only
//     what holds no user data (ADR 0039, narrowing ADR 0022): /metrics, the
//     OpenAPI document and the schedule preview (the panel's files and the
//     session state are open anyway). Tasks, runs, logs and the env store
//     need the token or a panel session even from this machine, because
//     another local user is on loopback too. A DNS-rebinding web page (whose
//     Host is its own name) and remote peers get nothing without a credential.
//   - A presented token is always checked: a wrong one is 401 even on a read.
//
// With Disabled set (only allowed on a loopback listener, see app), every
// request is allowed.
//
// A token that is not the admin token may be a scoped API token (ADR
// 0049): live, unexpired and allowed for this request by its scopes
// (core/access), else 401 (unknown, revoked, expired) or 403 (outside its
// scopes).
type Auth struct {
	Digest   TokenDigest
	Disabled bool
	// scoped looks up a scoped token by digest (set by New when the
	// server has an access store).
	scoped func(r *http.Request, d TokenDigest) error
}

func (a Auth) check(r *http.Request) error {
	if a.Disabled {
		return nil
	}
	h := r.Header.Get("Authorization")
	if h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return errs.E(errs.Unauthorized, "Authorization", "expected a Bearer token")
		}
		tok = strings.TrimSpace(tok)
		if len(tok) > maxTokenLength {
			return errs.E(errs.Unauthorized, "Authorization", "invalid token")
		}
		d := DigestToken(tok)
		if subtle.ConstantTimeCompare(d[:], a.Digest[:]) != 1 {
			if a.scoped != nil {
				return a.scoped(r, d)
			}
			return errs.E(errs.Unauthorized, "Authorization", "invalid token")
		}
		return nil
	}
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && loopbackReadable(r.URL.Path) && isLoopbackRequest(r) {
		return nil
	}
	return errs.E(errs.Unauthorized, "Authorization", "this request needs the admin token (Authorization: Bearer ...)")
}

// loopbackReadable lists the paths a loopback peer may read without a
// credential (ADR 0039): nothing a task, a run, a log or the env store
// holds. A test walks every GET route without a token and checks that no
// env value or task environment value comes back.
func loopbackReadable(path string) bool {
	return path == "/metrics" || path == OpenAPIPath || path == schedulePreviewPath
}

// schedulePreviewPath is the panel's schedule preview (panel.PreviewPath;
// this package does not import the panel, a test holds the two equal): it
// computes fire times from its query and reads no stored data.
const schedulePreviewPath = "/api/v1/schedule/preview"

// isLoopbackRequest reports whether both the peer address and the Host the
// client used are loopback.
func isLoopbackRequest(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !peer.Unmap().IsLoopback() {
		return false
	}
	return IsLoopbackHost(r.Host)
}

// IsLoopbackHost reports whether hostport (a Host header or a listen
// address) names only the loopback interface. An empty host or an
// unspecified address (0.0.0.0, ::) is not loopback: it listens everywhere.
func IsLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}
