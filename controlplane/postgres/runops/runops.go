package runops

import (
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
)

// RunOps is the runtime-role port behind the admin API (ADR 0014): the
// admin role only reads runs, so the writes an operator asks for — cancel
// and run-now — go through this, on the runtime pool, with the same locks
// and events as the sweeper and dispatch. It also answers the reads that
// need runtime facts (why a queued Run waits, a Run's log).
type RunOps struct {
	db *pgxpool.Pool
}

// NewRunOps returns the port over a pool connected as ql3_runtime.
func NewRunOps(runtime *pgxpool.Pool) *RunOps { return &RunOps{db: runtime} }

// cancelSQL is one cancel request in one transaction: the current
// Attempt's advisory lock (ADR 0010 order; it serialises with dispatch's
// claim and the ACKs of that Attempt), the Run row lock, then the intent
// (reason user) with exactly one run.cancel_requested event, and for a Run
// that is not executing the move to cancelled (its claimed Attempt too)
// with run.cancelled. $1 run id, $2 attempt key, $3 attempt lock class,
// $4 actor.
const cancelSQL = `WITH lk AS MATERIALIZED (
	SELECT pg_advisory_xact_lock($3::int4, $2::int4) IS NOT NULL AS ok
), n AS MATERIALIZED (
	SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms FROM lk
), t AS MATERIALIZED (
	SELECT r.run_id, r.project_id, r.status, r.attempt_count, r.cancel_reason,
		a.attempt_id, coalesce(a.status, '') AS attempt_status, n.ms
	FROM n JOIN ql3.runs r ON r.run_id = $1::uuid
	LEFT JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
	FOR UPDATE OF r
), d AS MATERIALIZED (
	SELECT t.*, CASE
		WHEN t.status IN ('succeeded', 'failed', 'cancelled', 'timed_out') THEN 'already_finished'
		WHEN t.cancel_reason IS NOT NULL THEN 'already_requested'
		ELSE 'accepted' END AS outcome,
		t.status IN ('created', 'queued', 'retry_wait', 'lost') AS at_once
	FROM t
), att AS (
	UPDATE ql3.attempts a SET status = 'cancelled', error_class = 'cancelled_by_user', version = a.version + 1,
		finished_at_ms = greatest(d.ms, a.created_at_ms), updated_at_ms = greatest(d.ms, a.updated_at_ms)
	FROM d WHERE a.attempt_id = d.attempt_id AND d.outcome = 'accepted' AND d.at_once AND d.attempt_status = 'claimed'
	RETURNING 1
), ru AS (
	UPDATE ql3.runs r SET cancel_requested_at_ms = d.ms, cancel_reason = 'user', version = r.version + 1,
		updated_at_ms = greatest(d.ms, r.updated_at_ms),
		status = CASE WHEN d.at_once THEN 'cancelled' ELSE r.status END,
		error_class = CASE WHEN d.at_once THEN 'cancelled_by_user' ELSE r.error_class END,
		finished_at_ms = CASE WHEN d.at_once THEN greatest(d.ms, r.created_at_ms) ELSE r.finished_at_ms END
	FROM d WHERE r.run_id = d.run_id AND d.outcome = 'accepted'
	RETURNING 1
), ev AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT d.run_id, m.seq + v.k, d.project_id, nullif(d.attempt_count, 0), v.type, v.payload, d.ms
	FROM d CROSS JOIN LATERAL (SELECT coalesce(max(e.sequence), 0) AS seq FROM ql3.run_events e WHERE e.run_id = d.run_id) m
	CROSS JOIN LATERAL (VALUES
		(1, 'run.cancel_requested', true, jsonb_build_object('reason', 'user', 'actor', $4::text)),
		(2, 'run.cancelled', d.at_once, jsonb_build_object('from', d.status, 'to', 'cancelled', 'reason', 'user',
			'errorClass', 'cancelled_by_user', 'attemptNumber', d.attempt_count))) AS v(k, type, keep, payload)
	WHERE d.outcome = 'accepted' AND v.keep
	RETURNING 1
), au AS (
	INSERT INTO ql3.audit_log (audit_id, at_ms, actor_kind, actor_id, action, subject_kind, subject_id, outcome,
		remote_addr, details)
	SELECT $5::uuid, d.ms, $6::text, $7::text, 'run.cancel', 'run', d.run_id::text, 'ok', $8::text,
		jsonb_build_object('outcome', d.outcome, 'from', d.status)
	FROM d
	RETURNING 1
)
SELECT d.outcome, (SELECT count(*) FROM ru), (SELECT count(*) FROM ev) + (SELECT count(*) FROM au) FROM d`

// CancelRun asks a Run to stop on behalf of actor (a low-cardinality
// principal id such as the API token id). A missing Run is not_found.
func (o *RunOps) CancelRun(ctx context.Context, runRef, actor string) (controlplane.CancelOutcome, error) {
	runID, err := uuid.Parse(runRef)
	if err != nil {
		return "", errs.NotFoundf("no run %.64q", runRef)
	}
	var attemptID uuid.UUID
	err = o.db.QueryRow(ctx, `SELECT coalesce(a.attempt_id, r.run_id) FROM ql3.runs r
		LEFT JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count WHERE r.run_id = $1`, runID).Scan(&attemptID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", errs.NotFoundf("no run %s", runID)
	}
	if err != nil {
		return "", postgres.Translate(err)
	}
	auditID, err := controlplane.NewID()
	if err != nil {
		return "", err
	}
	conn, err := o.db.Acquire(ctx)
	if err != nil {
		return "", postgres.Translate(err)
	}
	defer conn.Release()
	var outcome controlplane.CancelOutcome
	found := false
	err = postgres.PipelinedTx(ctx, conn, postgres.BeginReadCommitted, cancelSQL,
		append([]any{runID, postgres.LockObjectKey(attemptID), postgres.LockClassAttempt, actorToken(actor)}, auditArgs(ctx, auditID)...),
		func(rows pgx.Rows) error {
			for rows.Next() {
				var runs, events int64
				if err := rows.Scan(&outcome, &runs, &events); err != nil {
					return err
				}
				found = true
			}
			return rows.Err()
		})
	if err == nil && !found {
		err = errs.NotFoundf("no run %s", runID)
	}
	return outcome, err
}

// auditArgs are the audit line's id and ctx's actor (kind, id, peer IP)
// as statement parameters; empty ones are NULL.
func auditArgs(ctx context.Context, auditID uuid.UUID) []any {
	a := controlplane.ActorOf(ctx)
	return []any{auditID, a.Kind, postgres.NullIfEmpty(a.ID, 128), postgres.NullIfEmpty(postgres.PeerIP(a.RemoteAddr), 64)}
}

// actorToken keeps an actor id inside the event payload's token alphabet.
func actorToken(actor string) string {
	b := []byte(actor)
	if len(b) > 128 {
		b = b[:128]
	}
	for i, c := range b {
		ok := c == '.' || c == '_' || c == ':' || c == '@' || c == '/' || c == '+' || c == '-' ||
			('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
		if !ok {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "unknown"
	}
	return string(b)
}

// runNowDigestDomain separates run-now request digests from others.
const runNowDigestDomain = "ql3/run-now/v1"

// runNowSQL admits a manual Run of the task's head revision in one
// SERIALIZABLE transaction, with the concurrency policy exactly as
// scheduled admission applies it (ADR 0015). When the project already has
// a Run under the key, it writes nothing and returns that Run with its
// request digest for the caller to compare. $1 task, $2 stored key, $3 run
// id, $4 attempt id, $5 request digest, $6 rerun-of (or NULL), $7 actor.
const runNowSQL = `WITH db_now AS MATERIALIZED (
	SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms
), task AS MATERIALIZED (
	SELECT k.task_id, k.project_id, k.head_revision, p.status AS project_status, e.execution_revision_id, e.digest,
		e.canonical_spec::jsonb AS spec
	FROM ql3.tasks k JOIN ql3.projects p ON p.project_id = k.project_id
	JOIN ql3.execution_revisions e ON e.task_id = k.task_id AND e.task_revision = k.head_revision
	WHERE k.task_id = $1::uuid
), existing AS MATERIALIZED (
	SELECT r.run_id, r.task_id, r.request_digest FROM ql3.runs r JOIN task t ON r.project_id = t.project_id
	WHERE r.idempotency_key = $2::text
), rerun AS MATERIALIZED (
	SELECT r.run_id FROM ql3.runs r JOIN task t ON r.project_id = t.project_id WHERE r.run_id = $6::uuid
), decided AS MATERIALIZED (
	SELECT t.*, CASE
			WHEN coalesce(t.spec ->> 'concurrency', 'forbid') = 'allow' THEN 'queued'
			WHEN NOT EXISTS (SELECT 1 FROM ql3.runs o WHERE o.task_id = t.task_id
				AND o.status IN ('created', 'queued', 'dispatching', 'running', 'retry_wait', 'lost')) THEN 'queued'
			WHEN t.spec ->> 'concurrency' = 'replace' THEN 'created'
			ELSE 'cancelled' END AS run_status
	FROM task t
	WHERE t.project_status = 'active' AND NOT EXISTS (SELECT 1 FROM existing)
	  AND ($6::uuid IS NULL OR EXISTS (SELECT 1 FROM rerun))
), runs_in AS (
	INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest,
		origin, rerun_of_run_id, idempotency_key, request_digest, scheduled_for_ms, status, attempt_count,
		retry_max_attempts, retry_backoff_base_ms, retry_backoff_max_ms, retry_on_lost, timeout_ms,
		not_before_ms, created_at_ms, queued_at_ms, updated_at_ms, finished_at_ms)
	SELECT $3::uuid, d.project_id, d.task_id, d.head_revision, d.execution_revision_id, d.digest,
		CASE WHEN $6::uuid IS NULL THEN 'manual' ELSE 'rerun' END, $6::uuid, $2::text, $5::bytea, n.ms, d.run_status,
		CASE WHEN d.run_status = 'cancelled' THEN 0 ELSE 1 END,
		(d.spec #>> '{retry,maxAttempts}')::int, (d.spec #>> '{retry,backoffBaseMs}')::bigint,
		(d.spec #>> '{retry,backoffMaxMs}')::bigint, (d.spec #>> '{retry,retryOnLost}')::boolean,
		(d.spec ->> 'timeoutMs')::bigint, n.ms, n.ms, CASE WHEN d.run_status = 'queued' THEN n.ms END, n.ms,
		CASE WHEN d.run_status = 'cancelled' THEN n.ms END
	FROM decided d CROSS JOIN db_now n
	RETURNING run_id, project_id, status
), attempts_in AS (
	INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, created_at_ms, updated_at_ms)
	SELECT $4::uuid, ri.run_id, 1, ri.project_id, 'claimed', 'remote_worker', n.ms, n.ms
	FROM runs_in ri CROSS JOIN db_now n WHERE ri.status <> 'cancelled'
	RETURNING 1
), events_in AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT ri.run_id, v.seq, ri.project_id, v.attempt, v.type, v.payload, n.ms
	FROM runs_in ri CROSS JOIN db_now n
	CROSS JOIN LATERAL (VALUES
		(1::bigint, NULL::int, 'run.created', true, jsonb_strip_nulls(jsonb_build_object('to', 'created',
			'actor', $7::text, 'rerunOfRunId', $6::uuid))),
		(2::bigint, 1, 'run.queued', ri.status = 'queued', jsonb_build_object('from', 'created', 'to', 'queued',
			'attemptId', $4::uuid, 'attemptNumber', 1)),
		(2::bigint, NULL::int, 'run.skipped', ri.status = 'cancelled', jsonb_build_object('from', 'created',
			'to', 'cancelled', 'reason', 'concurrency_forbid'))) AS v(seq, attempt, type, keep, payload)
	WHERE v.keep
	RETURNING 1
), au AS (
	INSERT INTO ql3.audit_log (audit_id, at_ms, actor_kind, actor_id, action, subject_kind, subject_id, outcome,
		remote_addr, details)
	SELECT $8::uuid, n.ms, $9::text, $10::text, 'run.create', 'run', ri.run_id::text, 'ok', $11::text,
		jsonb_build_object('taskId', $1::uuid, 'status', ri.status)
	FROM runs_in ri CROSS JOIN db_now n
	RETURNING 1
)
SELECT (SELECT count(*) FROM task), (SELECT project_status FROM task), (SELECT count(*) FROM rerun),
	coalesce((SELECT run_id::text FROM existing), ''), coalesce((SELECT task_id::text FROM existing), ''),
	(SELECT request_digest FROM existing),
	coalesce((SELECT status FROM runs_in), ''), (SELECT count(*) FROM attempts_in), (SELECT count(*) FROM events_in)`

// RunNow admits a manual Run of the task's current revision. Serialization
// failures (a concurrent admission of the same task) re-run the
// transaction a bounded number of times.
func (o *RunOps) RunNow(ctx context.Context, in controlplane.RunNowInput) (controlplane.RunNowResult, error) {
	taskID, err := uuid.Parse(in.TaskID)
	if err != nil {
		return controlplane.RunNowResult{}, errs.NotFoundf("no task %.64q", in.TaskID)
	}
	if n := len(in.IdempotencyKey); n < 1 || n > 128 {
		return controlplane.RunNowResult{}, errs.Invalidf("idempotencyKey", "must be 1..128 bytes, got %d", n)
	}
	var rerun *uuid.UUID
	if in.RerunOf != "" {
		id, err := uuid.Parse(in.RerunOf)
		if err != nil {
			return controlplane.RunNowResult{}, errs.Invalidf("rerunOf", "must be a run id")
		}
		rerun = &id
	}
	h := sha256.New()
	for _, s := range []string{runNowDigestDomain, taskID.String(), in.RerunOf} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	digest := h.Sum(nil)
	key := "ql3:manual:v1:" + in.IdempotencyKey
	runID, err := controlplane.NewID()
	if err != nil {
		return controlplane.RunNowResult{}, err
	}
	attemptID, err := controlplane.NewID()
	if err != nil {
		return controlplane.RunNowResult{}, err
	}
	auditID, err := controlplane.NewID()
	if err != nil {
		return controlplane.RunNowResult{}, err
	}
	args := append([]any{taskID, key, runID, attemptID, digest, rerun, actorToken(in.Actor)}, auditArgs(ctx, auditID)...)
	for try := 0; ; try++ {
		res, err := o.runNowOnce(ctx, args, digest)
		if err == nil || !postgres.IsRetryable(err) || try >= 4 {
			if err == nil && res.RunID == "" {
				res.RunID = runID.String()
			}
			return res, err
		}
		backoff := min(2*time.Millisecond<<try, 100*time.Millisecond)
		select {
		case <-ctx.Done():
			return controlplane.RunNowResult{}, ctx.Err()
		case <-time.After(rand.N(backoff) + time.Millisecond):
		}
	}
}

func (o *RunOps) runNowOnce(ctx context.Context, args []any, digest []byte) (controlplane.RunNowResult, error) {
	conn, err := o.db.Acquire(ctx)
	if err != nil {
		return controlplane.RunNowResult{}, postgres.Translate(err)
	}
	defer conn.Release()
	// The read only collects: an error returned from it would be taken for
	// a lost COMMIT. The decision is made once the transaction ended.
	var tasks, reruns, attempts, events int64
	var projectStatus *string
	var existingRun, status string
	var existingDigest []byte
	seen := false
	err = postgres.PipelinedTx(ctx, conn, postgres.BeginSerializable, runNowSQL, args, func(rows pgx.Rows) error {
		for rows.Next() {
			var existingTask string
			if err := rows.Scan(&tasks, &projectStatus, &reruns, &existingRun, &existingTask, &existingDigest,
				&status, &attempts, &events); err != nil {
				return err
			}
			seen = true
		}
		return rows.Err()
	})
	switch {
	case err != nil:
		return controlplane.RunNowResult{}, err
	case !seen:
		return controlplane.RunNowResult{}, errs.E(errs.Internal, "", "run-now returned no row")
	case tasks == 0:
		return controlplane.RunNowResult{}, errs.NotFoundf("no task %s", args[0])
	case existingRun != "":
		if string(existingDigest) != string(digest) {
			return controlplane.RunNowResult{}, errs.E(errs.Conflict, "idempotencyKey",
				"the key already names run %s of a different request", existingRun)
		}
		return controlplane.RunNowResult{RunID: existingRun}, nil
	case projectStatus != nil && *projectStatus != "active":
		return controlplane.RunNowResult{}, errs.E(errs.Conflict, "project", "the task's project is archived")
	case args[5] != (*uuid.UUID)(nil) && reruns == 0:
		return controlplane.RunNowResult{}, errs.E(errs.NotFound, "rerunOf", "no run %s in the task's project", args[5])
	case status == "":
		return controlplane.RunNowResult{}, errs.E(errs.Internal, "", "run-now wrote nothing")
	}
	return controlplane.RunNowResult{Created: true, Status: status}, nil
}
