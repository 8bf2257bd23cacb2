package ingress_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
)

func TestSessionLifecycleOverTLS(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	w := e.worker("router-1")
	c := e.client(w.cert)
	r, read, err := e.post(c, protocol.PathSessionOpen, w.cred, openBody(t, w.credID))
	if err != nil || r.status != http.StatusOK || !read {
		t.Fatalf("open: %+v %v (body read %v: an authenticated request must read it)", r, err, read)
	}
	first := state(t, r.body)
	if first.Generation != 1 || first.Status != protocol.SessionOnline || first.HeartbeatIntervalMs != 10_000 {
		t.Fatalf("open: %+v", first)
	}
	hb := state(t, e.must(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, first, w.credID, "att-1", "att-2"), http.StatusOK))
	if len(hb.Controls) != 2 || hb.Controls[0].AttemptID != "att-1" || hb.Controls[1].Action != protocol.LeaseExtend {
		t.Fatalf("heartbeat controls: %+v", hb.Controls)
	}
	if got := e.leases.calls; len(got) != 1 || got[0][0] != first.SessionID {
		t.Fatalf("renewal calls: %v", got)
	}

	// Replacement: the next open is generation 2; the old session answers
	// replaced, offline, with every listed attempt revoked.
	second := e.open(c, w)
	if second.Generation != 2 {
		t.Fatalf("replacement: %+v", second)
	}
	old := state(t, e.must(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, first, w.credID, "att-1"), http.StatusOK))
	if !old.Replaced || old.Status != protocol.SessionOffline || len(old.Controls) != 1 || old.Controls[0].Action != protocol.LeaseRevoke {
		t.Fatalf("old session after replacement: %+v", old)
	}

	d := state(t, e.must(c, protocol.PathSessionTransition, w.cred, transitionBody(t, second, protocol.SessionDraining), http.StatusOK))
	if d.Status != protocol.SessionDraining {
		t.Fatalf("draining: %+v", d)
	}
	o := state(t, e.must(c, protocol.PathSessionTransition, w.cred, transitionBody(t, second, protocol.SessionOffline), http.StatusOK))
	if o.Status != protocol.SessionOffline || o.Replaced {
		t.Fatalf("offline: %+v", o)
	}
	// Retrying the same transition answers the same state.
	if again := state(t, e.must(c, protocol.PathSessionTransition, w.cred, transitionBody(t, second, protocol.SessionOffline), http.StatusOK)); again.Status != protocol.SessionOffline {
		t.Fatalf("offline retried: %+v", again)
	}
}

func TestBodyNamingAnotherWorkersSessionConflicts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	a, b := e.worker("a"), e.worker("b")
	ca, cb := e.client(a.cert), e.client(b.cert)
	sa := e.open(ca, a)
	e.open(cb, b)
	before := e.sessionRows()
	for _, c := range []struct {
		path string
		body []byte
	}{
		{protocol.PathSessionHeartbeat, heartbeatBody(t, sa, b.credID)},
		{protocol.PathSessionTransition, transitionBody(t, sa, protocol.SessionDraining)},
		{protocol.PathSessionTransition, transitionBody(t, sa, protocol.SessionOffline)},
		// b presenting a's credential id in its own open.
		{protocol.PathSessionOpen, openBody(t, a.credID)},
	} {
		r, _, err := e.post(cb, c.path, b.cred, c.body)
		if err != nil || r.status != http.StatusConflict {
			t.Fatalf("%s by b naming a: %+v %v", c.path, r, err)
		}
		if errCode(t, r.body).Code != errs.Conflict {
			t.Fatalf("%s: %s", c.path, r.body)
		}
	}
	if after := e.sessionRows(); after != before {
		t.Fatalf("refused requests changed sessions:\n%s\n---\n%s", before, after)
	}
}

func TestHeartbeatAfterExpiryByDatabaseTimeConflicts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	w := e.worker("w")
	c := e.client(w.cert)
	st := e.open(c, w)
	if _, err := e.db.Conn(t).Exec(context.Background(), `UPDATE ql3.worker_sessions SET lease_expires_at_ms = heartbeat_at_ms WHERE session_id = $1`, st.SessionID); err != nil {
		t.Fatal(err)
	}
	body := e.must(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID), http.StatusConflict)
	if !strings.Contains(errCode(t, body).Message, "expired") {
		t.Fatalf("expired heartbeat: %s", body)
	}
}

// An unavailable database during the offline transition (here: the
// session lock held elsewhere until the request times out) answers 503 and
// applies nothing: the session stays draining, never half offline.
func TestTransitionFailureLeavesSessionDraining(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// The timeout ends the blocked request below; the requests around it
	// must fit in it too, so not so short that a loaded machine fails them.
	e := newEnv(t, envOptions{requestTimeout: 2 * time.Second})
	w := e.worker("w")
	c := e.client(w.cert)
	st := e.open(c, w)
	e.must(c, protocol.PathSessionTransition, w.cred, transitionBody(t, st, protocol.SessionDraining), http.StatusOK)

	blocker := e.db.Conn(t)
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	sid := mustUUID(t, st.SessionID)
	if err := postgres.LockSession(ctx, tx, sid, false); err != nil {
		t.Fatal(err)
	}
	r, _, err := e.post(c, protocol.PathSessionTransition, w.cred, transitionBody(t, st, protocol.SessionOffline))
	if err != nil || r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Fatalf("offline while the database cannot serve it: %+v %v", r, err)
	}
	var status string
	if err := e.db.Conn(t).QueryRow(ctx, `SELECT status FROM ql3.worker_sessions WHERE session_id = $1`, st.SessionID).Scan(&status); err != nil || status != "draining" {
		t.Fatalf("session after the failed transition: %q %v, want draining", status, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The worker's retry then succeeds.
	if o := state(t, e.must(c, protocol.PathSessionTransition, w.cred, transitionBody(t, st, protocol.SessionOffline), http.StatusOK)); o.Status != protocol.SessionOffline {
		t.Fatalf("retried offline: %+v", o)
	}
}

func TestRenewalFailureAnswers503(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	w := e.worker("w")
	c := e.client(w.cert)
	st := e.open(c, w)
	e.leases.mu.Lock()
	e.leases.fail = errs.E(errs.Unavailable, "", "runtime pool down")
	e.leases.mu.Unlock()
	r, _, err := e.post(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID, "att-1"))
	if err != nil || r.status != http.StatusServiceUnavailable {
		t.Fatalf("heartbeat with failing renewal: %+v %v", r, err)
	}
	// Without running attempts the heartbeat does not need the dispatcher.
	e.must(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID), http.StatusOK)
}

func TestPull204CarriesRetryAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	w := e.worker("w")
	c := e.client(w.cert)
	st := e.open(c, w)
	pull, err := protocol.OfferPullRequest{SessionID: st.SessionID, Generation: st.Generation,
		OfferID: "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22", LeaseToken: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", WaitMs: 30_000}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := e.post(c, protocol.PathOfferPull, w.cred, pull)
	if err != nil || r.status != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("idle pull: %+v %v", r, err)
	}
	if ms, err := protocol.ParseRetryAfter(r.header.Get("Retry-After")); err != nil || ms != 3000 {
		t.Fatalf("Retry-After %q: %d %v, want 3 s (2.5 s rounded up)", r.header.Get("Retry-After"), ms, err)
	}
}

// rotateAndPresentB rotates w's credential to B while A stays valid,
// heartbeats with A (still accepted) and then with B, which must keep the
// session id and generation; it returns B's id and text.
func rotateAndPresentB(t *testing.T, e *env, c *http.Client, w *worker, st protocol.SessionState) (idB, textB string) {
	t.Helper()
	b, textB, err := e.pub.RotateWorkerCredentials(context.Background(), w.id, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.must(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID), http.StatusOK)
	hb := state(t, e.must(c, protocol.PathSessionHeartbeat, textB, heartbeatBody(t, st, b.ID), http.StatusOK))
	if hb.SessionID != st.SessionID || hb.Generation != st.Generation {
		t.Fatalf("heartbeat with B changed the session: %+v", hb)
	}
	return b.ID, textB
}

func TestCredentialRotationSameSessionThenOldIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, envOptions{})
	w := e.worker("w")
	c := e.client(w.cert)
	st := e.open(c, w)
	// A still works until B is presented.
	idB, textB := rotateAndPresentB(t, e, c, w, st)
	r, read, err := e.post(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID))
	if err != nil || r.status != http.StatusUnauthorized || read {
		t.Fatalf("A after B was observed: %+v %v (body read %v)", r, err, read)
	}
	if n, err := e.pub.ReconcileCredentials(ctx); err != nil || n != 1 {
		t.Fatalf("reconcile: %d %v", n, err)
	}
	if r, _, _ := e.post(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID)); r.status != http.StatusUnauthorized {
		t.Fatalf("A after revocation: %d", r.status)
	}
	e.must(c, protocol.PathSessionHeartbeat, textB, heartbeatBody(t, st, idB), http.StatusOK)
	got := e.denials()
	if len(got) != 2 || got[0] != "credential_superseded" || got[1] != "credential_revoked" {
		t.Fatalf("denials: %v", got)
	}
}
