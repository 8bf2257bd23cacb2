package schedule

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
)

// admitSQL admits a batch of decided occurrences in one statement (inside
// the caller's SERIALIZABLE transaction). Per input row, in the snapshot:
//
//   - fence_ok: the row version the claim wrote (found by its ctid, see
//     controlplane.ClaimedSchedule.TupleID) carries the full claim fence (owner, token,
//     version, expiry, unexpired by the database time), the state_version
//     the claim produced and the claim-acquired observation;
//   - current_ok: the schedule's revision and cursor, the trigger at that
//     revision, active project, enabled trigger and task, the task's head
//     revision and the execution pin (id + digest) as claimed;
//   - pin_ok: the pinned execution revision is remote_worker and its digest
//     is the SHA-256 of its canonical spec under the spec digest domain;
//   - decision_ok: the decision agrees with the row (fires the cursor, moves
//     the cursor forward past the observation).
//
// The schedule row is read by a TID scan per input row: the LATERAL
// subquery with OFFSET 0 cannot be flattened into a join the planner might
// hash against a sequential scan (it did, on a small table), which under
// SERIALIZABLE would lock the whole relation against every concurrent
// admission.
//
// Only rows passing all four are advanced (UPDATE with the full fence again,
// which row-locks them); only advanced fire rows get a Run, and only those
// Runs get an Attempt and two events — except where the task's concurrency
// policy (ADR 0015) refuses the occurrence while another Run of the task is
// active: forbid writes it skipped (cancelled, run.created + run.skipped,
// no Attempt), replace writes it held (created, its Attempt, run.created
// only; the lifecycle sweep queues it). Writes of one occurrence therefore
// commit together or not at all, and a refused row writes nothing while the
// others proceed. The retry policy and timeout are copied from the canonical
// spec the digest covers (parsed once per Run: the OFFSET 0 keeps the
// planner from inlining the cast into each of the five fields).
//
// The statement checks its own write counts (Runs = admitted fire rows,
// Attempts = Runs − skipped, events = 2 × Runs − held) and otherwise fails
// with SQLSTATE 22P02 and a
// message saying what it wrote; a non-constant cast of that message to
// boolean is the error, which needs no function (and so no EXECUTE grant).
// This assertion is what makes it safe to pipeline COMMIT behind the
// statement: a wrong statement can never commit.
var admitSQL = `WITH db_now AS MATERIALIZED (
	SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms
), input AS (
	SELECT * FROM unnest($1::int[], $2::uuid[], $3::text[], $4::uuid[], $5::bigint[], $6::bigint[], $7::bigint[],
		$8::bigint[], $9::bigint[], $10::uuid[], $11::bytea[], $12::bigint[], $13::bigint[], $14::text[],
		$15::bigint[], $16::bigint[], $17::uuid[], $18::uuid[], $19::text[], $20::text[], $21::text[], $22::tid[])
	AS i(ord, trigger_id, claim_owner, claim_token, claim_version, claim_expires_at_ms, state_version,
		trigger_revision, task_revision, execution_revision_id, execution_digest, cursor_ms, observed_at_ms, kind,
		scheduled_for_ms, next_fire_at_ms, run_id, attempt_id, idempotency_key, created_payload, queued_payload, tid)
), checked AS (
	SELECT i.*, s.project_id, r.task_id, e.canonical_spec,
		coalesce(s.claim_owner = i.claim_owner AND s.claim_token = i.claim_token
			AND s.claim_version = i.claim_version AND s.claim_expires_at_ms = i.claim_expires_at_ms
			AND s.claim_expires_at_ms > n.ms AND s.state_version = i.state_version
			AND s.updated_at_ms = i.observed_at_ms, false) AS fence_ok,
		coalesce(s.trigger_revision = i.trigger_revision AND s.next_fire_at_ms IS NOT DISTINCT FROM i.cursor_ms
			AND t.head_revision = i.trigger_revision AND p.status = 'active' AND r.enabled AND k.enabled
			AND k.head_revision = i.task_revision AND r.task_revision = i.task_revision
			AND r.execution_revision_id = i.execution_revision_id AND r.execution_digest = i.execution_digest, false) AS current_ok,
		coalesce(e.executor = 'remote_worker' AND e.task_revision = i.task_revision AND e.digest = i.execution_digest
			AND e.digest = sha256(convert_to('ql3/spec/' || e.spec_kind, 'UTF8') || '\x00'::bytea
				|| convert_to(e.canonical_spec, 'UTF8')), false) AS pin_ok,
		coalesce(i.next_fire_at_ms > i.observed_at_ms AND CASE i.kind
			WHEN 'fire' THEN i.scheduled_for_ms = i.cursor_ms AND i.run_id IS NOT NULL AND i.attempt_id IS NOT NULL
				AND i.idempotency_key IS NOT NULL
			WHEN 'skip' THEN i.scheduled_for_ms = i.cursor_ms AND i.run_id IS NULL
			WHEN 'init' THEN i.scheduled_for_ms IS NULL AND i.run_id IS NULL
			WHEN 'release' THEN i.scheduled_for_ms IS NULL AND i.run_id IS NULL AND i.next_fire_at_ms = i.cursor_ms
			ELSE false END, false) AS decision_ok
	FROM input i
	CROSS JOIN db_now n
	LEFT JOIN LATERAL (SELECT * FROM ql3.trigger_schedules s0 WHERE s0.ctid = i.tid AND s0.trigger_id = i.trigger_id
		OFFSET 0) s ON true
	LEFT JOIN ql3.triggers t ON t.trigger_id = i.trigger_id
	LEFT JOIN ql3.trigger_revisions r ON r.trigger_id = i.trigger_id AND r.revision = i.trigger_revision
	LEFT JOIN ql3.projects p ON p.project_id = s.project_id
	LEFT JOIN ql3.tasks k ON k.task_id = r.task_id
	LEFT JOIN ql3.execution_revisions e ON e.execution_revision_id = i.execution_revision_id
), advanced AS (
	UPDATE ql3.trigger_schedules s SET
		next_fire_at_ms = c.next_fire_at_ms,
		last_scheduled_at_ms = CASE WHEN c.kind = 'fire' THEN c.scheduled_for_ms ELSE s.last_scheduled_at_ms END,
		claim_owner = NULL, claim_token = NULL, claim_expires_at_ms = NULL,
		state_version = s.state_version + 1,
		updated_at_ms = greatest(s.updated_at_ms, n.ms)
	FROM checked c CROSS JOIN db_now n
	WHERE s.ctid = c.tid AND s.trigger_id = c.trigger_id AND c.fence_ok AND c.current_ok AND c.decision_ok
	  AND (c.kind <> 'fire' OR c.pin_ok)
	  AND s.claim_owner = c.claim_owner AND s.claim_token = c.claim_token AND s.claim_version = c.claim_version
	  AND s.claim_expires_at_ms > n.ms AND s.state_version = c.state_version
	RETURNING s.trigger_id, c.kind, c.run_id, c.project_id, c.task_id, c.task_revision, c.execution_revision_id,
		c.execution_digest, c.trigger_revision, c.idempotency_key, c.scheduled_for_ms, c.canonical_spec
), decided AS MATERIALIZED (
	-- The task's concurrency policy (ADR 0015), pinned in the canonical
	-- spec: with another Run of the task active (or an earlier occurrence
	-- of the task in this batch), forbid admits the occurrence as skipped
	-- (cancelled, no Attempt, run.skipped) and replace holds it as created
	-- (the lifecycle sweep asks the older Runs to stop and queues it once
	-- they ended); allow, or no active Run, queues it.
	SELECT a.*, x.spec, CASE
			WHEN coalesce(x.spec ->> 'concurrency', 'forbid') = 'allow' THEN 'queued'
			WHEN NOT EXISTS (SELECT 1 FROM ql3.runs o WHERE o.task_id = a.task_id
				AND o.status IN ('created', 'queued', 'dispatching', 'running', 'retry_wait', 'lost'))
				AND row_number() OVER (PARTITION BY a.task_id ORDER BY a.scheduled_for_ms, a.trigger_id) = 1 THEN 'queued'
			WHEN x.spec ->> 'concurrency' = 'replace' THEN 'created'
			ELSE 'cancelled' END AS run_status,
		` + postgres.RandomDelayMsSQL("a.idempotency_key", "coalesce((x.spec ->> 'randomDelayMs')::bigint, 0)") + ` AS random_delay_ms
	FROM advanced a
	CROSS JOIN LATERAL (SELECT a.canonical_spec::jsonb AS spec OFFSET 0) x
	WHERE a.kind = 'fire'
), runs_in AS (
	INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest,
		origin, trigger_id, trigger_revision, idempotency_key, scheduled_for_ms, status, attempt_count,
		retry_max_attempts, retry_backoff_base_ms, retry_backoff_max_ms, retry_on_lost, timeout_ms,
		not_before_ms, created_at_ms, queued_at_ms, updated_at_ms, finished_at_ms, random_delay_ms)
	SELECT a.run_id, a.project_id, a.task_id, a.task_revision, a.execution_revision_id, a.execution_digest,
		'cron', a.trigger_id, a.trigger_revision, a.idempotency_key, a.scheduled_for_ms, a.run_status,
		CASE WHEN a.run_status = 'cancelled' THEN 0 ELSE 1 END,
		(a.spec #>> '{retry,maxAttempts}')::int, (a.spec #>> '{retry,backoffBaseMs}')::bigint,
		(a.spec #>> '{retry,backoffMaxMs}')::bigint, (a.spec #>> '{retry,retryOnLost}')::boolean,
		(a.spec ->> 'timeoutMs')::bigint, n.ms + a.random_delay_ms, n.ms, CASE WHEN a.run_status = 'queued' THEN n.ms END, n.ms,
		CASE WHEN a.run_status = 'cancelled' THEN n.ms END, a.random_delay_ms
	FROM decided a
	CROSS JOIN db_now n
	RETURNING run_id, project_id, status
), attempts_in AS (
	INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, created_at_ms, updated_at_ms)
	SELECT c.attempt_id, ri.run_id, 1, ri.project_id, 'claimed', 'remote_worker', n.ms, n.ms
	FROM runs_in ri JOIN checked c ON c.run_id = ri.run_id CROSS JOIN db_now n
	WHERE ri.status <> 'cancelled'
	RETURNING run_id
), events_in AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT ri.run_id, v.seq, ri.project_id, v.attempt, v.type, v.payload::jsonb, n.ms
	FROM runs_in ri JOIN checked c ON c.run_id = ri.run_id CROSS JOIN db_now n
	CROSS JOIN LATERAL (VALUES (1::bigint, NULL::int, 'run.created', c.created_payload, true),
		(2::bigint, 1, 'run.queued', c.queued_payload, ri.status = 'queued'),
		(2::bigint, NULL::int, 'run.skipped',
			'{"from":"created","reason":"concurrency_forbid","to":"cancelled"}', ri.status = 'cancelled'))
		AS v(seq, attempt, type, payload, keep)
	WHERE v.keep
	RETURNING run_id
), tally AS MATERIALIZED (
	SELECT (SELECT count(*) FROM runs_in) AS runs, (SELECT count(*) FROM attempts_in) AS attempts,
		(SELECT count(*) FROM events_in) AS events, (SELECT count(*) FROM advanced WHERE kind = 'fire') AS fired,
		(SELECT count(*) FROM runs_in WHERE status = 'cancelled') AS skipped,
		(SELECT count(*) FROM runs_in WHERE status = 'created') AS held
), verified AS MATERIALIZED (
	SELECT t.*, CASE WHEN t.runs = t.fired AND t.attempts = t.fired - t.skipped AND t.events = 2 * t.fired - t.held THEN true
		ELSE ('ql3 admission refused: ' || t.runs || ' runs, ' || t.attempts || ' attempts, ' || t.events
			|| ' events for ' || t.fired || ' admitted occurrences')::boolean END AS ok
	FROM tally t
)
SELECT c.ord, c.fence_ok, c.current_ok, c.pin_ok, c.decision_ok, a.trigger_id IS NOT NULL, v.runs, v.attempts, v.events,
	v.skipped, v.held
FROM checked c LEFT JOIN advanced a ON a.trigger_id = c.trigger_id CROSS JOIN verified v
WHERE v.ok
ORDER BY c.ord`

// admitArgs are admitSQL's 22 column arrays, as pgtype values: pgx encodes
// those directly, where []*uuid.UUID went through driver.Valuer (a string
// per id, parsed again) and pointer slices through reflection.
type admitArgs struct {
	ord                                                   []int32
	triggerID, token, execID, runID, attemptID            []pgtype.UUID
	owner, kind                                           []string
	key, createdPayload, queuedPayload                    []pgtype.Text
	claimVersion, expires, stateVersion, trigRev, taskRev []int64
	cursor, scheduledFor                                  []pgtype.Int8
	observed, next                                        []int64
	digest                                                [][]byte
	tid                                                   []pgtype.TID
}

func pgUUID(id uuid.UUID) pgtype.UUID { return pgtype.UUID{Bytes: id, Valid: true} }

func buildAdmitArgs(batch []controlplane.Admission) (admitArgs, error) {
	n := len(batch)
	a := admitArgs{ord: make([]int32, 0, n), tid: make([]pgtype.TID, 0, n),
		triggerID: make([]pgtype.UUID, 0, n), token: make([]pgtype.UUID, 0, n), execID: make([]pgtype.UUID, 0, n),
		runID: make([]pgtype.UUID, 0, n), attemptID: make([]pgtype.UUID, 0, n),
		owner: make([]string, 0, n), kind: make([]string, 0, n),
		key: make([]pgtype.Text, 0, n), createdPayload: make([]pgtype.Text, 0, n), queuedPayload: make([]pgtype.Text, 0, n),
		claimVersion: make([]int64, 0, n), expires: make([]int64, 0, n), stateVersion: make([]int64, 0, n),
		trigRev: make([]int64, 0, n), taskRev: make([]int64, 0, n),
		cursor: make([]pgtype.Int8, 0, n), scheduledFor: make([]pgtype.Int8, 0, n),
		observed: make([]int64, 0, n), next: make([]int64, 0, n), digest: make([][]byte, 0, n)}
	for i, ad := range batch {
		c := ad.Claim
		switch ad.Kind {
		case controlplane.AdmitFire, controlplane.AdmitSkip, controlplane.AdmitInit, controlplane.AdmitRelease:
		default:
			return a, errs.Invalidf("kind", "unknown admission kind %q", ad.Kind)
		}
		a.ord = append(a.ord, int32(i))
		a.tid = append(a.tid, pgtype.TID{BlockNumber: c.TupleID.Block, OffsetNumber: c.TupleID.Offset, Valid: c.TupleID.Valid})
		a.triggerID = append(a.triggerID, pgUUID(c.TriggerID))
		a.token = append(a.token, pgUUID(uuid.UUID(c.Fence.Token)))
		a.execID = append(a.execID, pgUUID(c.ExecutionRevisionID))
		a.owner = append(a.owner, c.Fence.Owner)
		a.kind = append(a.kind, string(ad.Kind))
		a.claimVersion = append(a.claimVersion, c.Fence.Version)
		a.expires = append(a.expires, c.Fence.ExpiresAtMs)
		a.stateVersion = append(a.stateVersion, c.StateVersion)
		a.trigRev = append(a.trigRev, c.TriggerRevision)
		a.taskRev = append(a.taskRev, c.TaskRevision)
		a.digest = append(a.digest, c.ExecutionDigest[:])
		a.observed = append(a.observed, c.ObservedAtMs)
		a.next = append(a.next, ad.NextFireAtMs)
		a.cursor = append(a.cursor, pgtype.Int8{Int64: c.NextFireAtMs, Valid: c.Initialized})
		fireOrSkip := ad.Kind == controlplane.AdmitFire || ad.Kind == controlplane.AdmitSkip
		a.scheduledFor = append(a.scheduledFor, pgtype.Int8{Int64: ad.ScheduledForMs, Valid: fireOrSkip})
		var run, att pgtype.UUID
		var key, cp, qp pgtype.Text
		if ad.Kind == controlplane.AdmitFire {
			if ad.RunID == uuid.Nil || ad.AttemptID == uuid.Nil || ad.IdempotencyKey == "" {
				return a, errs.Invalidf("runId", "a fire admission needs run id, attempt id and idempotency key")
			}
			run, att = pgUUID(ad.RunID), pgUUID(ad.AttemptID)
			key = pgtype.Text{String: ad.IdempotencyKey, Valid: true}
			cp = pgtype.Text{String: string(ad.CreatedPayload), Valid: true}
			qp = pgtype.Text{String: string(ad.QueuedPayload), Valid: true}
		}
		a.runID = append(a.runID, run)
		a.attemptID = append(a.attemptID, att)
		a.key = append(a.key, key)
		a.createdPayload = append(a.createdPayload, cp)
		a.queuedPayload = append(a.queuedPayload, qp)
	}
	return a, nil
}

// Admit commits a batch of decided occurrences in one SERIALIZABLE
// transaction running admitSQL once (a batch of one is the per-occurrence
// mode). Refused rows (raced, stale, corrupt) write nothing and do not
// affect the others. A serialization failure re-runs the whole transaction
// up to MaxAttempts times with full-jitter backoff; Retries counts the
// re-runs. BEGIN, the statement and COMMIT are one pipeline, so a
// connection lost (or a context ended) once it was sent returns
// controlplane.ErrCommitUnknown (wrapped with the driver error) and is never re-run; an
// error the server answered (a SQLSTATE) means nothing committed.
func Admit(ctx context.Context, db postgres.Acquirer, batch []controlplane.Admission, opts controlplane.AdmitOptions) (controlplane.AdmitResult, error) {
	res, _, err := admit(ctx, db, batch, opts, nil)
	return res, err
}

// AdmitThenClaim is Admit with the next round's claim sent in the same
// round trip, as its own READ COMMITTED transaction after the admission's
// COMMIT: the server runs it only once the admission committed (an error
// anywhere in the admission skips it), so rounds still never overlap, and a
// coordinator working through a backlog pays one round trip per round
// instead of two. The claim is re-sent with every re-run of the admission.
// When Admit would fail, the claim did not run (or its outcome is unknown,
// with controlplane.ErrCommitUnknown).
func AdmitThenClaim(ctx context.Context, db postgres.Acquirer, batch []controlplane.Admission, opts controlplane.AdmitOptions, next controlplane.ClaimRequest) (controlplane.AdmitResult, controlplane.NextClaim, error) {
	if err := next.Validate(); err != nil {
		return controlplane.AdmitResult{}, controlplane.NextClaim{}, err
	}
	return admit(ctx, db, batch, opts, &next)
}

func admit(ctx context.Context, db postgres.Acquirer, batch []controlplane.Admission, opts controlplane.AdmitOptions, next *controlplane.ClaimRequest) (controlplane.AdmitResult, controlplane.NextClaim, error) {
	var res controlplane.AdmitResult
	var nc controlplane.NextClaim
	if len(batch) == 0 {
		return res, nc, nil
	}
	args, err := buildAdmitArgs(batch)
	if err != nil {
		return res, nc, err
	}
	attempts := opts.MaxAttempts
	if attempts <= 0 {
		attempts = 5
	}
	for i := range attempts {
		if i > 0 {
			res.Retries++
			backoff := min(2*time.Millisecond<<i, 100*time.Millisecond)
			t := time.NewTimer(rand.N(backoff) + time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return res, nc, ctx.Err()
			case <-t.C:
			}
		}
		res.Outcomes, nc, err = admitOnce(ctx, db, batch, args, next)
		if err == nil || !postgres.IsRetryable(err) {
			return res, nc, err
		}
	}
	return res, nc, err
}

func admitOnce(ctx context.Context, db postgres.Acquirer, batch []controlplane.Admission, a admitArgs, next *controlplane.ClaimRequest) ([]controlplane.Outcome, controlplane.NextClaim, error) {
	var nc controlplane.NextClaim
	conn, err := db.Acquire(ctx)
	if err != nil {
		return nil, nc, postgres.Translate(err)
	}
	defer conn.Release()
	// BEGIN, the plan settings, the admission statement and COMMIT travel
	// in one round trip (with the next claim, if asked for); the statement
	// refuses (and so rolls back) any batch whose write counts are wrong, so
	// nothing wrong can commit.
	var outcomes []controlplane.Outcome
	txs := []postgres.PipedTx{{Begin: postgres.BeginSerializable, SQL: admitSQL, Args: []any{a.ord, a.triggerID, a.owner, a.token,
		a.claimVersion, a.expires, a.stateVersion, a.trigRev, a.taskRev, a.execID, a.digest, a.cursor, a.observed,
		a.kind, a.scheduledFor, a.next, a.runID, a.attemptID, a.key, a.createdPayload, a.queuedPayload, a.tid},
		Read: func(rows pgx.Rows) (err error) {
			outcomes, err = readAdmitRows(rows, batch)
			return err
		}}}
	if next != nil {
		txs = append(txs, claimTx(*next, &nc.Claimed))
	}
	committed, err := postgres.RunPipeline(ctx, conn, txs...)
	if committed == 0 {
		return nil, nc, refusedCounts(err)
	}
	if committed < len(txs) {
		nc = controlplane.NextClaim{Err: err}
	}
	return outcomes, nc, nil
}

// refusedCounts turns the admission statement's own count assertion (see
// admitSQL) into an internal error that says what it found; any other error
// is returned as is.
func refusedCounts(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == postgres.SQLStateInvalidTextRepresentation && strings.Contains(pe.Message, "ql3 admission refused") {
		return errs.E(errs.Internal, "", "%s", pe.Message)
	}
	return err
}

// readAdmitRows reads the verdict rows and checks them against the write
// counts the statement reported (and already asserted before COMMIT).
func readAdmitRows(rows pgx.Rows, batch []controlplane.Admission) ([]controlplane.Outcome, error) {
	defer rows.Close()
	outcomes := make([]controlplane.Outcome, len(batch))
	wantRuns := int64(0)
	var runs, attempts, events, skipped, held int64
	n := 0
	for rows.Next() {
		var ord int32
		var fenceOK, currentOK, pinOK, decisionOK, advanced bool
		if err := rows.Scan(&ord, &fenceOK, &currentOK, &pinOK, &decisionOK, &advanced, &runs, &attempts, &events,
			&skipped, &held); err != nil {
			return nil, err
		}
		if ord < 0 || int(ord) >= len(batch) || outcomes[ord] != "" {
			return nil, errs.E(errs.Internal, "", "admission returned row %d twice or out of range", ord)
		}
		kind := batch[ord].Kind
		outcomes[ord] = outcomeOf(kind, fenceOK, currentOK, pinOK, decisionOK, advanced)
		if outcomes[ord] == controlplane.OutcomeAdmitted {
			wantRuns++
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if n != len(batch) || runs != wantRuns || attempts != wantRuns-skipped || events != 2*wantRuns-held {
		// Cannot happen: the statement asserted its counts before COMMIT. If
		// it does, the commit outcome is unknowable from here.
		return nil, errs.E(errs.Internal, "", "admission wrote %d runs, %d attempts, %d events for %d admitted of %d rows",
			runs, attempts, events, wantRuns, n)
	}
	return outcomes, nil
}

func outcomeOf(kind controlplane.AdmitKind, fenceOK, currentOK, pinOK, decisionOK, advanced bool) controlplane.Outcome {
	switch {
	case advanced:
		switch kind {
		case controlplane.AdmitFire:
			return controlplane.OutcomeAdmitted
		case controlplane.AdmitSkip:
			return controlplane.OutcomeSkipped
		case controlplane.AdmitInit:
			return controlplane.OutcomeInitialized
		}
		return controlplane.OutcomeReleased
	case !fenceOK:
		return controlplane.OutcomeRaced
	case !currentOK:
		return controlplane.OutcomeStale
	case !decisionOK, kind == controlplane.AdmitFire && !pinOK:
		return controlplane.OutcomeCorrupt
	}
	// Every check passed in the snapshot but the UPDATE matched nothing:
	// the row changed under us, which SERIALIZABLE reports as a failure, so
	// this is only reachable if the fence changed in between; count it raced.
	return controlplane.OutcomeRaced
}
