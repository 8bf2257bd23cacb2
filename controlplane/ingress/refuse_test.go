package ingress_test

import (
	"context"
	"crypto/tls"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/internal/devpki"
	"github.com/ql3/ql3/core/protocol"
)

func TestRefusedHandshakesAreAudited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	w := e.worker("router-1")
	stranger, err := devpki.NewCA("someone else", devpki.For(e.now, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := stranger.IssueClient(devpki.Leaf{CommonName: "router-1", URIs: []string{w.identity}, Validity: devpki.For(e.now, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		client *http.Client
		reason string
	}{
		{"TLS 1.2", e.clientWith(&tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, Certificates: []tls.Certificate{w.cert}}), "tls_version"},
		{"no client certificate", e.client(), "no_client_cert"},
		{"unknown CA", e.client(foreign.TLS()), "untrusted_cert"},
	} {
		before := len(e.denials())
		r, read, err := e.post(c.client, protocol.PathSessionOpen, w.cred, openBody(t, w.credID))
		if err == nil {
			t.Errorf("%s: the request was answered %d: %s", c.name, r.status, r.body)
		}
		if read {
			t.Errorf("%s: the body was sent", c.name)
		}
		got := e.denials()
		if len(got) != before+1 || got[len(got)-1] != c.reason {
			t.Errorf("%s: audit reasons %v, want one more %q", c.name, got, c.reason)
		}
	}
	if rows := e.sessionRows(); rows != "" {
		t.Fatalf("a refused handshake opened a session: %s", rows)
	}
	// A good client on the same listener still works.
	e.open(e.client(w.cert), w)
}

func TestRefusedPrincipalsReadNoBody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, envOptions{})
	a, b, revoked := e.worker("a"), e.worker("b"), e.worker("revoked")
	if _, err := e.pub.RevokeWorkerCredential(ctx, revoked.id, revoked.credID); err != nil {
		t.Fatal(err)
	}
	flipped := a.cred[:len(a.cred)-1] + map[bool]string{true: "1", false: "0"}[strings.HasSuffix(a.cred, "0")]
	for _, c := range []struct {
		name, cred string
		cert       tls.Certificate
		reason     string
	}{
		{"no credential", "", a.cert, "no_credential"},
		{"garbage credential", "hunter2", a.cert, "malformed_credential"},
		{"wrong secret", flipped, a.cert, "wrong_secret"},
		{"revoked credential", revoked.cred, revoked.cert, "credential_revoked"},
		{"certificate not bound to the credential's worker", a.cred, b.cert, "cert_not_bound"},
	} {
		before := len(e.denials())
		r, read, err := e.post(e.client(c.cert), protocol.PathSessionOpen, c.cred, openBody(t, a.credID))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401: %s", c.name, r.status, r.body)
		}
		if read {
			t.Errorf("%s: the server read the body of an unauthenticated request", c.name)
		}
		if c.cred != "" && (strings.Contains(string(r.body), c.cred) || strings.Contains(e.log.String(), c.cred)) {
			t.Errorf("%s: the credential was echoed or logged", c.name)
		}
		got := e.denials()
		if len(got) != before+1 || got[len(got)-1] != c.reason {
			t.Errorf("%s: audit reasons %v, want one more %q", c.name, got, c.reason)
		}
	}
	if rows := e.sessionRows(); rows != "" {
		t.Fatalf("a refused request opened a session: %s", rows)
	}
}

func TestFailuresAreLimitedHealthyWorkersNever(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	good, bad := e.worker("good"), e.worker("bad")
	gc, bc := e.client(good.cert), e.client(bad.cert)
	st := e.open(gc, good)
	var limited int
	for i := 0; i < 30; i++ {
		r, read, err := e.post(bc, protocol.PathSessionOpen, "ql3w_garbage", openBody(t, bad.credID))
		if err != nil || read {
			t.Fatalf("bad #%d: %v (body read %v)", i, err, read)
		}
		if r.status == http.StatusTooManyRequests {
			limited++
			if r.header.Get("Retry-After") == "" {
				t.Errorf("429 without Retry-After")
			}
		}
		// The healthy worker's heartbeat right after is never limited.
		e.must(gc, protocol.PathSessionHeartbeat, good.cred, heartbeatBody(t, st, good.credID), http.StatusOK)
	}
	if limited < 15 {
		t.Fatalf("%d of 30 failing requests were limited; the failure budget is 10", limited)
	}
	got := e.denials()
	failed, limitedRows := 0, 0
	for _, r := range got {
		switch r {
		case "malformed_credential":
			failed++
		case "rate_limited":
			limitedRows++
		}
	}
	// Every refusal is audited up to the bounds: the failures the budget
	// allowed, and the 429s up to the per-address audit burst.
	if failed != 30-limited || limitedRows == 0 || limitedRows > limited || len(got) > 10+20 {
		t.Fatalf("audit rows: %d failures, %d rate_limited (of %d limited), %d in all", failed, limitedRows, limited, len(got))
	}
}

func TestOfferAndLeaseRoutesWithoutDispatcherAnswer503(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noLeases: true})
	w := e.worker("w")
	c := e.client(w.cert)
	st := e.open(c, w)
	pull, err := protocol.OfferPullRequest{SessionID: st.SessionID, Generation: st.Generation,
		OfferID: "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22", LeaseToken: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := e.post(c, protocol.PathOfferPull, w.cred, pull)
	if err != nil || r.status != http.StatusServiceUnavailable {
		t.Fatalf("pull without a dispatcher: %+v %v", r, err)
	}
	if strings.Contains(string(r.body), "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8") {
		t.Fatal("the lease token was echoed")
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	w := e.worker("w")
	c := e.client(w.cert)
	if r, _, err := e.post(c, "/v1/sessions/close", w.cred, []byte(`{}`)); err != nil || r.status != http.StatusNotFound {
		t.Fatalf("unknown route: %+v %v", r, err)
	}
	resp, err := c.Get(e.url(protocol.PathSessionOpen))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if got := e.denials(); !slices.Equal(got, []string(nil)) && len(got) != 0 {
		t.Fatalf("routing errors are not authentication failures: %v", got)
	}
}
