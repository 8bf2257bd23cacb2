package ingress_test

import (
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
)

// Benchmarks over one keep-alive TLS 1.3 connection against the real
// listener and PostgreSQL. Report them as ratios to BenchmarkRouteOnly
// (a TLS round trip on the same kind of connection answered 404 before
// authentication and the database) measured in the same run:
//
//	go test -run '^$' -bench . -benchtime 2000x ./ingress
func BenchmarkRouteOnly(b *testing.B) {
	e := newEnv(b, envOptions{dispatch: true})
	w := e.worker("w")
	c := e.client(w.cert)
	b.ResetTimer()
	for range b.N {
		// No Expect: 100-continue here, so the 404 keeps the connection.
		resp, err := c.Post(e.url("/v1/none"), "application/json", strings.NewReader(`{}`))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkHeartbeat: authentication (one read) + the session statement.
func BenchmarkHeartbeat(b *testing.B) {
	e := newEnv(b, envOptions{dispatch: true})
	w := e.worker("w")
	c := e.client(w.cert)
	st := e.open(c, w)
	body := heartbeatBody(b, st, w.credID)
	b.ResetTimer()
	for range b.N {
		e.must(c, protocol.PathSessionHeartbeat, w.cred, body, http.StatusOK)
	}
}

// BenchmarkIdlePull: authentication + the dispatcher finding nothing (204).
func BenchmarkIdlePull(b *testing.B) { benchmarkIdlePull(b, false) }

// BenchmarkIdlePullPaced is BenchmarkIdlePull with the pull pacer wired in
// and a forecast in memory (ADR 0030): the 204 is paced from memory, so the
// ratio to BenchmarkIdlePull should be 1.
func BenchmarkIdlePullPaced(b *testing.B) { benchmarkIdlePull(b, true) }

func benchmarkIdlePull(b *testing.B, paced bool) {
	e := newEnv(b, envOptions{dispatch: true, pace: paced})
	if paced {
		e.pacedTrigger()(1_500, true) // within the 2 s idle pause
	}
	w := e.worker("w")
	c := e.client(w.cert)
	st := e.open(c, w)
	token, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	body, err := protocol.OfferPullRequest{SessionID: st.SessionID, Generation: st.Generation,
		OfferID: uuid.Must(uuid.NewRandom()).String(), LeaseToken: token}.Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		r, _, err := e.post(c, protocol.PathOfferPull, w.cred, body)
		if err != nil || r.status != http.StatusNoContent {
			b.Fatalf("idle pull: %d %v", r.status, err)
		}
		if paced && r.header.Get(protocol.HeaderRetryAfterMs) == "2000" {
			b.Fatal("the paced pull was not paced")
		}
	}
}
