package ingress_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
)

// queueRun seeds, as the superuser, a project, task and execution revision
// and one Run exactly as cluster admission leaves it (queued, a claimed
// remote_worker Attempt, run.created + run.queued). It returns the run id.
func (e *env) queueRun() string {
	e.t.Helper()
	ctx := context.Background()
	cmd := spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "/bin/true"}, TimeoutMs: 60_000,
		Retry: spec.RetryPolicy{MaxAttempts: 1}, Concurrency: spec.ConcurrencyAllow}
	canonical, err := cmd.Canonical()
	if err != nil {
		e.t.Fatal(err)
	}
	digest := canonjson.Sum(spec.DigestDomain, canonical)
	project, task, rev, runID, attempt := uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()
	conn := e.db.Conn(e.t)
	tx, err := conn.Begin(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO ql3.projects (project_id, name, status, created_at_ms, updated_at_ms) VALUES ($1::uuid, $2::text, 'active', 1, 1)`,
			[]any{project, project.String()}},
		{`INSERT INTO ql3.tasks (task_id, project_id, name, head_revision, created_at_ms, updated_at_ms) VALUES ($1::uuid, $2::uuid, 't', 1, 1, 1)`,
			[]any{task, project}},
		{`INSERT INTO ql3.task_revisions (task_id, revision, project_id, spec, spec_digest, created_at_ms)
			VALUES ($1::uuid, 1, $2::uuid, $3::jsonb, $4::bytea, 1)`, []any{task, project, string(canonical), digest[:]}},
		{`INSERT INTO ql3.execution_revisions (execution_revision_id, project_id, task_id, task_revision, executor, spec_kind,
			canonical_spec, digest, created_at_ms) VALUES ($1::uuid, $2::uuid, $3::uuid, 1, 'remote_worker', $4::text, $5::text, $6::bytea, 1)`,
			[]any{rev, project, task, spec.KindCommandV1, string(canonical), digest[:]}},
		{`INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest, origin,
			idempotency_key, scheduled_for_ms, status, attempt_count, retry_max_attempts, retry_backoff_base_ms, retry_backoff_max_ms,
			retry_on_lost, timeout_ms, not_before_ms, created_at_ms, queued_at_ms, updated_at_ms)
			VALUES ($1::uuid, $2::uuid, $3::uuid, 1, $4::uuid, $5::bytea, 'manual', $6::text, 1, 'queued', 1, 1, 0, 0, false, 60000, 0, 1, 1, 1)`,
			[]any{runID, project, task, rev, digest[:], runID.String()}},
		{`INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, created_at_ms, updated_at_ms)
			VALUES ($1::uuid, $2::uuid, 1, $3::uuid, 'claimed', 'remote_worker', 1, 1)`, []any{attempt, runID, project}},
		{`INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
			VALUES ($1::uuid, 1, $2::uuid, NULL, 'run.created', '{}', 1), ($1::uuid, 2, $2::uuid, 1, 'run.queued', '{}', 1)`,
			[]any{runID, project}},
	} {
		if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
			e.t.Fatalf("seed: %v", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		e.t.Fatal(err)
	}
	return runID.String()
}

func encodeOrFatal(t *testing.T, v interface{ Encode() ([]byte, error) }) []byte {
	t.Helper()
	raw, err := v.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestRunOverTLSWithTheDispatcher: the whole remote lifecycle of one Run
// through a real TLS 1.3 client, the real listener, the real dispatcher
// and PostgreSQL: open, pull (and a byte-identical replay after a "lost"
// response), starting and running acks, a log chunk, a heartbeat that
// extends the lease, the completion (and its duplicate), an empty pull with
// Retry-After; another worker naming this session is refused and changes
// nothing. Afterwards no table, log line or response holds the lease token
// or the credential.
func TestRunOverTLSWithTheDispatcher(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{dispatch: true})
	runID := e.queueRun()
	w, intruder := e.worker("runner"), e.worker("intruder")
	c, ci := e.client(w.cert), e.client(intruder.cert)
	st := e.open(c, w)
	e.open(ci, intruder)

	token, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pullReq := protocol.OfferPullRequest{SessionID: st.SessionID, Generation: st.Generation, OfferID: uuid.New().String(), LeaseToken: token}
	pull := encodeOrFatal(t, pullReq)

	// Another worker naming this session: 409, nothing claimed.
	foreignToken, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	foreign := pullReq
	foreign.LeaseToken, foreign.OfferID = foreignToken, uuid.New().String()
	before := e.dumpAll()
	r, _, err := e.post(ci, protocol.PathOfferPull, intruder.cred, encodeOrFatal(t, foreign))
	if err != nil || r.status != http.StatusConflict {
		t.Fatalf("foreign pull: %d %s %v", r.status, r.body, err)
	}
	if after := e.dumpAll(); !sameExceptAudit(before, after) {
		t.Errorf("a refused foreign pull changed the database")
	}

	first := e.must(c, protocol.PathOfferPull, w.cred, pull, http.StatusOK)
	again := e.must(c, protocol.PathOfferPull, w.cred, pull, http.StatusOK) // the first response was "lost"
	if !bytes.Equal(first, again) {
		t.Errorf("replayed offer is not byte-identical:\n%s\n%s", first, again)
	}
	offer, err := protocol.DecodeOffer(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := offer.AnswersPull(pullReq); err != nil || offer.RunID != runID {
		t.Fatalf("offer does not answer the pull: %v (run %s)", err, offer.RunID)
	}
	ref := offer.Lease(token)
	for _, phase := range []protocol.AckPhase{protocol.AckStarting, protocol.AckRunning, protocol.AckRunning} {
		ctl, err := protocol.DecodeLeaseControl(e.must(c, protocol.PathLeaseAck, w.cred,
			encodeOrFatal(t, protocol.Ack{LeaseRef: ref, Phase: phase}), http.StatusOK))
		if err != nil || ctl.Action != protocol.LeaseExtend {
			t.Fatalf("ack %s: %+v %v", phase, ctl, err)
		}
	}
	rc, err := protocol.DecodeLogReceipt(e.must(c, protocol.PathLeaseLog, w.cred,
		encodeOrFatal(t, protocol.LogChunk{LeaseRef: ref, Stream: protocol.Stdout, Data: []byte("ok\n"), EOF: true}), http.StatusOK))
	if err != nil || rc.NextOffset != 3 || !rc.Closed {
		t.Fatalf("log receipt %+v %v", rc, err)
	}
	hb := state(t, e.must(c, protocol.PathSessionHeartbeat, w.cred, heartbeatBody(t, st, w.credID, offer.AttemptID), http.StatusOK))
	if len(hb.Controls) != 1 || hb.Controls[0].Action != protocol.LeaseExtend || hb.Controls[0].LeaseExpiresAtMs <= offer.LeaseExpiresAtMs {
		t.Errorf("heartbeat controls %+v", hb.Controls)
	}
	zero := 0
	completion := encodeOrFatal(t, protocol.Completion{LeaseRef: ref, Status: run.AttemptSucceeded, ExitCode: &zero,
		FinishedAtMs: 1, StdoutBytes: 3})
	for _, want := range []protocol.Disposition{protocol.Recorded, protocol.Duplicate} {
		rcpt, err := protocol.DecodeCompletionReceipt(e.must(c, protocol.PathLeaseComplete, w.cred, completion, http.StatusOK))
		if err != nil || rcpt.Disposition != want {
			t.Fatalf("completion: %+v %v, want %s", rcpt, err, want)
		}
	}
	// Nothing left: 204 with a Retry-After.
	next := pullReq
	next.OfferID = uuid.New().String()
	next.LeaseToken, _ = fence.NewLeaseToken(rand.Reader)
	empty, _, err := e.post(c, protocol.PathOfferPull, w.cred, encodeOrFatal(t, next))
	if err != nil || empty.status != http.StatusNoContent || empty.header.Get(protocol.HeaderRetryAfter) == "" {
		t.Fatalf("empty pull: %d %v %v", empty.status, empty.header, err)
	}

	var types []string
	rows, err := e.db.Conn(t).Query(context.Background(), `SELECT type FROM ql3.run_events WHERE run_id = $1::uuid ORDER BY sequence`, runID)
	if err != nil {
		t.Fatal(err)
	}
	if types, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	want := []string{"run.created", "run.queued", "run.dispatched", "run.starting", "run.running", "run.succeeded"}
	if !slices.Equal(types, want) {
		t.Errorf("events %v, want %v", types, want)
	}

	dump, logs, answers := e.dumpAll(), e.log.String(), e.everything()
	if !strings.Contains(dump, "run.succeeded") || !strings.Contains(answers, offer.AttemptID) {
		t.Fatal("the evidence is empty; the check would be vacuous")
	}
	// One info line per Run transition the worker drives (issue 14).
	for _, msg := range []string{`"msg":"run leased"`, `"msg":"attempt acknowledged"`, `"msg":"attempt completed"`} {
		if !strings.Contains(logs, `"level":"INFO",`+msg) {
			t.Errorf("server log lacks an info line %s", msg)
		}
	}
	for name, s := range map[string]string{"lease token": string(token), "lease token hex": hex.EncodeToString([]byte(token)),
		"credential": w.cred, "credential secret": w.cred[len(w.cred)-64:]} {
		for where, text := range map[string]string{"database": dump, "server log": logs, "responses": answers} {
			if strings.Contains(text, s) {
				t.Errorf("%s appears in the %s", name, where)
			}
		}
	}
}

// TestLeaseRoutesRefuseAnotherWorkersLease: a lease reference presented by
// another (authenticated) worker is a conflict and changes nothing.
func TestLeaseRoutesRefuseAnotherWorkersLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{dispatch: true})
	e.queueRun()
	w, intruder := e.worker("owner"), e.worker("thief")
	c, ci := e.client(w.cert), e.client(intruder.cert)
	st := e.open(c, w)
	e.open(ci, intruder)
	token, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	offer, err := protocol.DecodeOffer(e.must(c, protocol.PathOfferPull, w.cred, encodeOrFatal(t,
		protocol.OfferPullRequest{SessionID: st.SessionID, Generation: st.Generation, OfferID: uuid.New().String(), LeaseToken: token}), http.StatusOK))
	if err != nil {
		t.Fatal(err)
	}
	before := e.dumpAll()
	r, _, err := e.post(ci, protocol.PathLeaseAck, intruder.cred,
		encodeOrFatal(t, protocol.Ack{LeaseRef: offer.Lease(token), Phase: protocol.AckStarting}))
	if err != nil || r.status != http.StatusConflict || errCode(t, r.body).Code != errs.Conflict {
		t.Fatalf("foreign ack: %d %s %v", r.status, r.body, err)
	}
	if after := e.dumpAll(); !sameExceptAudit(before, after) {
		t.Errorf("a refused foreign ack changed the database")
	}
}

// sameExceptAudit compares two dumps (dumpAll: "table:\n rows \n" per
// table, in name order) without the audit_log section: a refusal is audited.
func sameExceptAudit(a, b string) bool {
	strip := func(s string) string {
		start := strings.Index(s, "audit_log:\n")
		next := strings.Index(s, "\nexecution_revisions:\n") // the table after audit_log by name
		if start < 0 || next < start {
			return s
		}
		return s[:start] + s[next+1:]
	}
	return strip(a) == strip(b)
}

// TestPullReplayDriftOverTLS: through the listener, a replay with another
// token and a replay after the session was replaced (a new open) are 409,
// and neither makes a second lease.
func TestPullReplayDriftOverTLS(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{dispatch: true})
	e.queueRun()
	e.queueRun()
	w := e.worker("drifter")
	c := e.client(w.cert)
	st := e.open(c, w)
	token, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	req := protocol.OfferPullRequest{SessionID: st.SessionID, Generation: st.Generation, OfferID: uuid.New().String(), LeaseToken: token}
	e.must(c, protocol.PathOfferPull, w.cred, encodeOrFatal(t, req), http.StatusOK)

	other, err := fence.NewLeaseToken(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	wrongToken := req
	wrongToken.LeaseToken = other
	if b := errCode(t, e.must(c, protocol.PathOfferPull, w.cred, encodeOrFatal(t, wrongToken), http.StatusConflict)); b.Code != errs.Conflict {
		t.Errorf("token drift: %+v", b)
	}
	if next := e.open(c, w); next.Generation != st.Generation+1 {
		t.Fatalf("re-open gave generation %d", next.Generation)
	}
	e.must(c, protocol.PathOfferPull, w.cred, encodeOrFatal(t, req), http.StatusConflict)
	var leases int
	if err := e.db.Conn(t).QueryRow(context.Background(), `SELECT count(*) FROM ql3.run_leases`).Scan(&leases); err != nil || leases != 1 {
		t.Errorf("%d leases (%v), want 1", leases, err)
	}
}
