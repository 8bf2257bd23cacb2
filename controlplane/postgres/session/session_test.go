package session_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/session"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/protocol"
)

// sessionFixture: a migrated database, the admin publisher, the session
// store and authenticator on a real ql3_worker_ingress pool.
type sessionFixture struct {
	pubFixture
	ingress  *pgxpool.Pool
	sessions *session.Sessions
	auth     *session.WorkerAuth
}

func newSessionFixture(t *testing.T) sessionFixture {
	t.Helper()
	f := newPubFixture(t)
	pool := f.db.Pool(t, postgres.RoleWorkerIngress)
	s, err := session.NewSessions(pool, session.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sessionFixture{pubFixture: f, ingress: pool, sessions: s, auth: session.NewWorkerAuth(pool)}
}

// testWorker is a registered worker with one credential.
type testWorker struct {
	id, identity, credText string
}

func (f sessionFixture) worker(t *testing.T, name string) testWorker {
	t.Helper()
	ctx := context.Background()
	identity := "spiffe://ql3/worker/" + name
	w, err := f.pub.RegisterWorker(ctx, controlplane.WorkerInput{Name: name, TLSIdentity: identity})
	if err != nil {
		t.Fatal(err)
	}
	_, text, err := f.pub.IssueWorkerCredential(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	return testWorker{id: w.ID, identity: identity, credText: text}
}

func (f sessionFixture) principal(t *testing.T, w testWorker, credText string) controlplane.Principal {
	t.Helper()
	p, err := f.auth.Authenticate(context.Background(), controlplane.Presented{CertIdentities: []string{w.identity}, Credential: controlplane.Credential(credText)})
	if err != nil {
		t.Fatalf("authenticate %s: %v", w.identity, err)
	}
	return p
}

func testCaps() placement.Capabilities {
	return placement.Capabilities{OS: "linux", Arch: "amd64", Executors: []string{"argv", "shell"},
		Runtimes: map[string]string{"python": "3.11.4"}}.Normalize()
}

func (f sessionFixture) open(t *testing.T, p controlplane.Principal) protocol.SessionState {
	t.Helper()
	st, err := f.sessions.Open(context.Background(), p, protocol.SessionOpen{V: 1, AgentVersion: "test/1",
		CredentialID: p.CredentialID, Capacity: 2, Capabilities: testCaps()})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return st
}

func heartbeatOf(t *testing.T, st protocol.SessionState, credID string) protocol.SessionHeartbeat {
	t.Helper()
	d, err := testCaps().Digest()
	if err != nil {
		t.Fatal(err)
	}
	return protocol.SessionHeartbeat{V: 1, SessionID: st.SessionID, Generation: st.Generation, CapabilitiesDigest: d, CredentialID: credID}
}

// sessionDump is every session row of the database, for "nothing changed".
func (f sessionFixture) sessionDump(t *testing.T) string {
	t.Helper()
	var out string
	if err := f.db.Conn(t).QueryRow(context.Background(), `SELECT coalesce(string_agg(s::text, E'\n' ORDER BY session_id), '') FROM ql3.worker_sessions s`).Scan(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSessionOpenReplaceHeartbeat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSessionFixture(t)
	w := f.worker(t, "router-1")
	p := f.principal(t, w, w.credText)

	first := f.open(t, p)
	if first.Generation != 1 || first.Status != protocol.SessionOnline || first.HeartbeatIntervalMs != 10_000 || first.Replaced {
		t.Fatalf("first open: %+v", first)
	}
	if _, err := first.Encode(); err != nil {
		t.Fatalf("the state must be a valid wire body: %v", err)
	}
	second := f.open(t, p)
	if second.Generation != 2 || second.SessionID == first.SessionID {
		t.Fatalf("replacement: %+v", second)
	}
	old, err := f.sessions.Heartbeat(ctx, p, heartbeatOf(t, first, p.CredentialID))
	if err != nil || !old.Replaced || old.Status != protocol.SessionOffline || old.Generation != 1 {
		t.Fatalf("heartbeat of the replaced session: %+v, %v", old, err)
	}
	if _, err := old.Encode(); err != nil {
		t.Fatalf("replaced state must be a valid wire body: %v", err)
	}
	for _, to := range []protocol.SessionStatus{protocol.SessionDraining, protocol.SessionOffline} {
		st, err := f.sessions.Transition(ctx, p, protocol.SessionTransition{V: 1, SessionID: first.SessionID, Generation: 1, To: to})
		if err != nil || !st.Replaced || st.Status != protocol.SessionOffline {
			t.Fatalf("%s of the replaced session: %+v, %v", to, st, err)
		}
	}
	hb, err := f.sessions.Heartbeat(ctx, p, heartbeatOf(t, second, p.CredentialID))
	if err != nil || hb.Status != protocol.SessionOnline || hb.LeaseExpiresAtMs < second.LeaseExpiresAtMs {
		t.Fatalf("heartbeat of the live session: %+v, %v", hb, err)
	}
	var live int
	if err := f.db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM ql3.worker_sessions WHERE worker_id = $1 AND status <> 'offline'`, w.id).Scan(&live); err != nil || live != 1 {
		t.Fatalf("live sessions: %d, %v", live, err)
	}
	var audits int
	if err := f.db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM ql3.audit_log WHERE action = 'session.open' AND actor_id = $1`, w.id).Scan(&audits); err != nil || audits != 2 {
		t.Fatalf("session.open audit rows: %d, %v", audits, err)
	}
}

func TestSessionOfAnotherWorkerConflictsAndChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSessionFixture(t)
	a, b := f.worker(t, "a"), f.worker(t, "b")
	pa, pb := f.principal(t, a, a.credText), f.principal(t, b, b.credText)
	sa := f.open(t, pa)
	f.open(t, pb)
	before := f.sessionDump(t)
	if _, err := f.sessions.Heartbeat(ctx, pb, heartbeatOf(t, sa, pb.CredentialID)); errs.Code(err) != errs.Conflict {
		t.Fatalf("heartbeat naming a's session with b's principal: %v, want conflict", err)
	}
	for _, to := range []protocol.SessionStatus{protocol.SessionDraining, protocol.SessionOffline} {
		_, err := f.sessions.Transition(ctx, pb, protocol.SessionTransition{V: 1, SessionID: sa.SessionID, Generation: sa.Generation, To: to})
		if errs.Code(err) != errs.Conflict {
			t.Fatalf("%s of a's session by b: %v, want conflict", to, err)
		}
	}
	if after := f.sessionDump(t); after != before {
		t.Fatalf("a refused request changed sessions:\n%s\n---\n%s", before, after)
	}
}

func TestHeartbeatAfterExpiryConflicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSessionFixture(t)
	w := f.worker(t, "w")
	p := f.principal(t, w, w.credText)
	st := f.open(t, p)
	// Expire it by database time: the lease ends at the database's now.
	if _, err := f.db.Conn(t).Exec(ctx, `UPDATE ql3.worker_sessions SET lease_expires_at_ms = heartbeat_at_ms,
		heartbeat_at_ms = heartbeat_at_ms WHERE session_id = $1`, st.SessionID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sessions.Heartbeat(ctx, p, heartbeatOf(t, st, p.CredentialID)); errs.Code(err) != errs.Conflict {
		t.Fatalf("heartbeat after expiry: %v, want conflict", err)
	}
	if _, err := f.sessions.Transition(ctx, p, protocol.SessionTransition{V: 1, SessionID: st.SessionID, Generation: 1, To: protocol.SessionDraining}); errs.Code(err) != errs.Conflict {
		t.Fatalf("draining an expired session: %v, want conflict", err)
	}
	off, err := f.sessions.Transition(ctx, p, protocol.SessionTransition{V: 1, SessionID: st.SessionID, Generation: 1, To: protocol.SessionOffline})
	if err != nil || off.Status != protocol.SessionOffline {
		t.Fatalf("offline on an expired session: %+v, %v", off, err)
	}
}

func TestSessionTransitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSessionFixture(t)
	w := f.worker(t, "w")
	p := f.principal(t, w, w.credText)
	st := f.open(t, p)
	tr := func(to protocol.SessionStatus, gen int64) (protocol.SessionState, error) {
		return f.sessions.Transition(ctx, p, protocol.SessionTransition{V: 1, SessionID: st.SessionID, Generation: gen, To: to})
	}
	if _, err := tr(protocol.SessionDraining, 2); errs.Code(err) != errs.Conflict {
		t.Fatalf("wrong generation: %v", err)
	}
	for i := 0; i < 2; i++ { // the retry of a transition answers the same state
		d, err := tr(protocol.SessionDraining, 1)
		if err != nil || d.Status != protocol.SessionDraining {
			t.Fatalf("draining #%d: %+v, %v", i, d, err)
		}
	}
	var capacity int
	if err := f.db.Conn(t).QueryRow(ctx, `SELECT capacity FROM ql3.worker_sessions WHERE session_id = $1`, st.SessionID).Scan(&capacity); err != nil || capacity != 0 {
		t.Fatalf("draining capacity: %d, %v", capacity, err)
	}
	if hb, err := f.sessions.Heartbeat(ctx, p, heartbeatOf(t, st, p.CredentialID)); err != nil || hb.Status != protocol.SessionDraining {
		t.Fatalf("a draining session keeps heartbeating: %+v, %v", hb, err)
	}
	for i := 0; i < 2; i++ {
		o, err := tr(protocol.SessionOffline, 1)
		if err != nil || o.Status != protocol.SessionOffline || o.Replaced {
			t.Fatalf("offline #%d: %+v, %v", i, o, err)
		}
	}
	if _, err := tr(protocol.SessionDraining, 1); errs.Code(err) != errs.Conflict {
		t.Fatalf("offline → draining: %v, want conflict", err)
	}
	if _, err := f.sessions.Heartbeat(ctx, p, heartbeatOf(t, st, p.CredentialID)); errs.Code(err) != errs.Conflict {
		t.Fatalf("heartbeat of an offline session: %v, want conflict", err)
	}
	next := f.open(t, p)
	if next.Generation != 2 {
		t.Fatalf("after offline the next open is generation 2: %+v", next)
	}
}

func TestAuthenticateRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSessionFixture(t)
	w := f.worker(t, "w")
	good := controlplane.Presented{CertIdentities: []string{"CN-other", w.identity}, Credential: controlplane.Credential(w.credText)}
	if p, err := f.auth.Authenticate(ctx, good); err != nil || p.WorkerID != w.id || p.TLSIdentity != w.identity {
		t.Fatalf("good principal: %+v, %v", p, err)
	}
	unbound := f.worker(t, "unbound")
	if _, err := f.db.Conn(t).Exec(ctx, `UPDATE ql3.workers SET tls_identity = NULL WHERE worker_id = $1`, unbound.id); err != nil {
		t.Fatal(err)
	}
	disabled := f.worker(t, "disabled")
	if _, err := f.db.Conn(t).Exec(ctx, `UPDATE ql3.workers SET status = 'disabled', disabled_at_ms = updated_at_ms WHERE worker_id = $1`, disabled.id); err != nil {
		t.Fatal(err)
	}
	revoked := f.worker(t, "revoked")
	id, _, _ := postgres.ParseWorkerCredential(revoked.credText)
	if _, err := f.pub.RevokeWorkerCredential(ctx, revoked.id, id); err != nil {
		t.Fatal(err)
	}
	last := w.credText[len(w.credText)-1]
	flipped := w.credText[:len(w.credText)-1] + map[bool]string{true: "1", false: "0"}[last == '0']
	unknown := "ql3w_0190b5a8-3f2b-7c1e-8e9f-0a1b2c3d4e5f_" + w.credText[len(w.credText)-64:]
	for _, c := range []struct {
		name, cred string
		idents     []string
		reason     string
	}{
		{"malformed", "ql3w_nope", []string{w.identity}, controlplane.ReasonMalformed},
		{"admin token shape", "ql3c_0123456789abcdef_" + w.credText[len(w.credText)-64:], []string{w.identity}, controlplane.ReasonMalformed},
		{"unknown", unknown, []string{w.identity}, controlplane.ReasonUnknownCredential},
		{"wrong secret", flipped, []string{w.identity}, controlplane.ReasonWrongSecret},
		{"cert of another worker", w.credText, []string{"spiffe://ql3/worker/someone-else"}, controlplane.ReasonCertNotBound},
		{"no cert identity", w.credText, nil, controlplane.ReasonCertNotBound},
		{"worker without tls identity", unbound.credText, []string{unbound.identity}, controlplane.ReasonCertNotBound},
		{"disabled worker", disabled.credText, []string{disabled.identity}, controlplane.ReasonWorkerDisabled},
		{"revoked credential", revoked.credText, []string{revoked.identity}, controlplane.ReasonCredentialRevoked},
	} {
		_, err := f.auth.Authenticate(ctx, controlplane.Presented{CertIdentities: c.idents, Credential: controlplane.Credential(c.cred)})
		d, ok := err.(*controlplane.Denied)
		if !ok || d.Reason != c.reason {
			t.Errorf("%s: %v, want denied %s", c.name, err, c.reason)
		}
		if ok && strings.Contains(fmt.Sprint(d), c.cred) {
			t.Errorf("%s: the refusal echoes the credential", c.name)
		}
	}
}

func TestCredentialRotationObserveThenRevoke(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSessionFixture(t)
	w := f.worker(t, "w")
	pa := f.principal(t, w, w.credText)
	st := f.open(t, pa)

	b, textB, err := f.pub.RotateWorkerCredentials(ctx, w.id, nil) // default upper bound: 24 h
	if err != nil {
		t.Fatal(err)
	}
	// A keeps working until B is presented.
	if _, err := f.sessions.Heartbeat(ctx, f.principal(t, w, w.credText), heartbeatOf(t, st, pa.CredentialID)); err != nil {
		t.Fatalf("heartbeat with A after rotate: %v", err)
	}
	if n, err := f.pub.ReconcileCredentials(ctx); err != nil || n != 0 {
		t.Fatalf("reconcile before B is observed: %d, %v", n, err)
	}
	pb := f.principal(t, w, textB)
	if pb.CredentialID != b.ID {
		t.Fatalf("principal B: %+v", pb)
	}
	hb, err := f.sessions.Heartbeat(ctx, pb, heartbeatOf(t, st, pb.CredentialID))
	if err != nil || hb.SessionID != st.SessionID || hb.Generation != st.Generation {
		t.Fatalf("heartbeat with B, same session and generation: %+v, %v", hb, err)
	}
	// Observed: A is refused at once, before the reconciler runs.
	_, err = f.auth.Authenticate(ctx, controlplane.Presented{CertIdentities: []string{w.identity}, Credential: controlplane.Credential(w.credText)})
	if d, ok := err.(*controlplane.Denied); !ok || d.Reason != controlplane.ReasonCredentialReplaced {
		t.Fatalf("A after B was observed: %v", err)
	}
	if n, err := f.pub.ReconcileCredentials(ctx); err != nil || n != 1 {
		t.Fatalf("reconcile after B was observed: %d, %v", n, err)
	}
	creds, err := f.pub.ListWorkerCredentials(ctx, w.id)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range creds {
		switch c.ID {
		case pa.CredentialID:
			if c.Status != "revoked" || c.RevokeReason != "superseded" {
				t.Errorf("A: %+v, want revoked as superseded", c)
			}
		case b.ID:
			if c.Status != "active" {
				t.Errorf("B: %+v, want active", c)
			}
		}
	}
	_, err = f.auth.Authenticate(ctx, controlplane.Presented{CertIdentities: []string{w.identity}, Credential: controlplane.Credential(w.credText)})
	if d, ok := err.(*controlplane.Denied); !ok || d.Reason != controlplane.ReasonCredentialRevoked {
		t.Fatalf("A after reconcile: %v", err)
	}
	var observed int
	if err := f.db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM ql3.audit_log WHERE action = 'session.credential_observed'`).Scan(&observed); err != nil || observed != 1 {
		t.Fatalf("credential observation audit rows: %d, %v", observed, err)
	}
}

func TestCredentialRotationGraceIsAnUpperBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newSessionFixture(t)
	w := f.worker(t, "w")
	grace := int64(3_600_000)
	if _, _, err := f.pub.RotateWorkerCredentials(ctx, w.id, &grace); err != nil {
		t.Fatal(err)
	}
	f.principal(t, w, w.credText) // still valid inside the grace
	// The bound passes by database time.
	if _, err := f.db.Conn(t).Exec(ctx, `UPDATE ql3.worker_credentials SET revoke_after_ms = created_at_ms + 1 WHERE superseded_by IS NOT NULL`); err != nil {
		t.Fatal(err)
	}
	_, err := f.auth.Authenticate(ctx, controlplane.Presented{CertIdentities: []string{w.identity}, Credential: controlplane.Credential(w.credText)})
	if d, ok := err.(*controlplane.Denied); !ok || d.Reason != controlplane.ReasonCredentialReplaced {
		t.Fatalf("A after its bound: %v", err)
	}
	if n, err := f.pub.ReconcileCredentials(ctx); err != nil || n != 1 {
		t.Fatalf("reconcile after the bound: %d, %v", n, err)
	}
	var reason string
	if err := f.db.Conn(t).QueryRow(ctx, `SELECT revoke_reason FROM ql3.worker_credentials WHERE status = 'revoked'`).Scan(&reason); err != nil || reason != "grace_elapsed" {
		t.Fatalf("reason: %q, %v", reason, err)
	}
}
