package ingress_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/ingress"
	"github.com/ql3/ql3/core/protocol"
)

// countingAuth answers from a table and counts the questions.
type countingAuth struct {
	mu    sync.Mutex
	calls int
	ok    map[string]controlplane.Principal // credential text → principal
}

func (a *countingAuth) Authenticate(_ context.Context, p controlplane.Presented) (controlplane.Principal, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	if pr, ok := a.ok[string(p.Credential)]; ok && len(p.CertIdentities) == 1 && p.CertIdentities[0] == "id-"+pr.WorkerID {
		return pr, nil
	}
	return controlplane.Principal{}, &controlplane.Denied{Reason: controlplane.ReasonWrongSecret}
}

func (a *countingAuth) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

func TestPrincipalCacheRemembersSuccessForTheTTLOnly(t *testing.T) {
	ctx := context.Background()
	inner := &countingAuth{ok: map[string]controlplane.Principal{
		"ql3w_a": {WorkerID: "a", CredentialID: "ca"},
		"ql3w_b": {WorkerID: "b", CredentialID: "cb"},
	}}
	clock := &manualClock{t: time.Unix(1_700_000_000, 0)}
	auth := ingress.NewPrincipalCache(inner, 2*time.Second, clock.now)
	type step struct {
		advance  time.Duration
		cred, id string
		wantOK   bool
		wantAsks int // inner calls so far
	}
	steps := []step{
		{0, "ql3w_a", "id-a", true, 1},                       // miss
		{0, "ql3w_a", "id-a", true, 1},                       // hit
		{1999 * time.Millisecond, "ql3w_a", "id-a", true, 1}, // still inside the TTL
		{time.Millisecond, "ql3w_a", "id-a", true, 2},        // expired at exactly TTL: asked again
		{0, "ql3w_a", "id-b", false, 3},                      // other certificate identities: another key, refused
		{0, "ql3w_a", "id-b", false, 4},                      // refusals are never cached
		{0, "ql3w_x", "id-a", false, 5},                      // wrong credential, asked every time
		{0, "ql3w_x", "id-a", false, 6},                      //
		{0, "ql3w_b", "id-b", true, 7},                       // a second principal
		{500 * time.Millisecond, "ql3w_a", "id-a", true, 7},  // a's second entry still live
		{1500 * time.Millisecond, "ql3w_b", "id-b", true, 8}, // b cached 2 s ago: expired, asked again
	}
	for i, s := range steps {
		clock.advance(s.advance)
		p, err := auth.Authenticate(ctx, controlplane.Presented{CertIdentities: []string{s.id}, Credential: controlplane.Credential(s.cred)})
		if (err == nil) != s.wantOK {
			t.Fatalf("step %d (%s, %s): err %v, want ok %v", i, s.cred, s.id, err, s.wantOK)
		}
		if s.wantOK && "id-"+p.WorkerID != s.id {
			t.Fatalf("step %d: principal %+v for %s", i, p, s.id)
		}
		if got := inner.count(); got != s.wantAsks {
			t.Fatalf("step %d (%s, %s): inner asked %d times, want %d", i, s.cred, s.id, got, s.wantAsks)
		}
	}
}

func TestPrincipalCacheDisabledAndCapped(t *testing.T) {
	inner := &countingAuth{}
	if got := ingress.NewPrincipalCache(inner, 0, time.Now); got != controlplane.Authenticator(inner) {
		t.Fatalf("TTL 0 wraps the authenticator: %T", got)
	}
	// Capped at MaxPrincipalCacheTTL: an entry is gone once that passed.
	inner.ok = map[string]controlplane.Principal{"ql3w_a": {WorkerID: "a"}}
	clock := &manualClock{t: time.Unix(1_700_000_000, 0)}
	auth := ingress.NewPrincipalCache(inner, time.Hour, clock.now)
	pr := controlplane.Presented{CertIdentities: []string{"id-a"}, Credential: "ql3w_a"}
	for range 2 {
		if _, err := auth.Authenticate(context.Background(), pr); err != nil {
			t.Fatal(err)
		}
	}
	clock.advance(ingress.MaxPrincipalCacheTTL)
	if _, err := auth.Authenticate(context.Background(), pr); err != nil {
		t.Fatal(err)
	}
	if inner.count() != 2 {
		t.Fatalf("inner asked %d times, want 2 (the TTL is capped at %v)", inner.count(), ingress.MaxPrincipalCacheTTL)
	}
}

func TestPrincipalCacheIsBounded(t *testing.T) {
	inner := &countingAuth{ok: map[string]controlplane.Principal{}}
	for i := range ingress.MaxPrincipalCacheEntries + 1 {
		id := fmt.Sprint(i)
		inner.ok["ql3w_"+id] = controlplane.Principal{WorkerID: id}
	}
	clock := &manualClock{t: time.Unix(1_700_000_000, 0)}
	auth := ingress.NewPrincipalCache(inner, time.Second, clock.now)
	ask := func(i int) {
		id := fmt.Sprint(i)
		if _, err := auth.Authenticate(context.Background(), controlplane.Presented{CertIdentities: []string{"id-" + id}, Credential: controlplane.Credential("ql3w_" + id)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range ingress.MaxPrincipalCacheEntries + 1 {
		ask(i)
	}
	n := inner.count()
	ask(ingress.MaxPrincipalCacheEntries) // the one past the bound was not kept
	ask(0)                                // the first one was
	if got := inner.count() - n; got != 1 {
		t.Fatalf("inner asked %d more times, want 1", got)
	}
	// Once the entries expired, a full cache sweeps them and keeps new ones.
	clock.advance(time.Second)
	ask(ingress.MaxPrincipalCacheEntries)
	n = inner.count()
	ask(ingress.MaxPrincipalCacheEntries)
	if inner.count() != n {
		t.Fatal("a new entry was not kept after the expired ones were swept")
	}
}

// Through TLS and real PostgreSQL: a revoked credential keeps working for
// at most the TTL, never longer; observe-then-revoke rotation still refuses
// the old credential (within the TTL) and the new one works at once.
func TestPrincipalCacheRevocationBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ttl = 2 * time.Second
	e := newEnv(t, envOptions{authCacheTTL: ttl})
	w := e.worker("w")
	c := e.client(w.cert)
	st := e.open(c, w)

	// Admin revocation: cached for at most the TTL.
	if _, err := e.pub.RevokeWorkerCredential(ctx, w.id, w.credID); err != nil {
		t.Fatal(err)
	}
	e.must(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID), http.StatusOK)
	e.clock.advance(ttl - time.Millisecond)
	e.must(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID), http.StatusOK)
	e.clock.advance(time.Millisecond)
	if r, read, err := e.post(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID)); err != nil || r.status != http.StatusUnauthorized || read {
		t.Fatalf("revoked credential after the TTL: %+v %v (body read %v)", r, err, read)
	}

	// Rotation, observe-then-revoke, with the cache: a second worker.
	w2 := e.worker("w2")
	c2 := e.client(w2.cert)
	st2 := e.open(c2, w2)
	idB, textB := rotateAndPresentB(t, e, c2, w2, st2)
	e.clock.advance(ttl)
	if r, _, err := e.post(c2, protocol.PathSessionHeartbeat, w2.cred, heartbeatBody(t, st2, w2.credID)); err != nil || r.status != http.StatusUnauthorized {
		t.Fatalf("A a TTL after B was observed: %+v %v", r, err)
	}
	e.must(c2, protocol.PathSessionHeartbeat, textB, heartbeatBody(t, st2, idB), http.StatusOK)
	got := e.denials()
	if len(got) != 2 || got[0] != "credential_revoked" || got[1] != "credential_superseded" {
		t.Fatalf("denials: %v", got)
	}
}
