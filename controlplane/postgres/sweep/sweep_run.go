package sweep

// sweepRunSQL handles one Run found by a Run scan, as one statement in its
// own transaction (like sweepLeaseSQL). Parameters: $1 run id, $2 the
// advisory key of its current Attempt (the one dispatch's claim and the
// ACKs lock), $3 cancel grace (ms), $4 the attempt lock class, $5 the id
// for a new Attempt (used only by promote), and what becomes of the Run if
// it is lost (resolve), decided in Go by core/run.DecideLost from the
// scan's row: $6 the status (retry_wait | failed), $7 the backoff (ms), $8
// the attempt count it was decided for.
//
// Actions, by the Run as it is under the locks:
//
//	cancel   a cancel intent on created | queued | retry_wait | lost →
//	         cancelled (timed_out for a timeout intent on queued or
//	         retry_wait); a claimed current Attempt → cancelled. The same
//	         for a waiting Run of a deleted task (intent shutdown, event
//	         reason task_deleted).
//	resolve  lost without intent, attempt count still $8 → $6: retry_wait
//	         (not_before = now + $7) or failed (worker_lost), as
//	         run.DecideLost decided; SQL selects, Go decides.
//	promote  retry_wait due (not_before ≤ now), no intent → Attempt N+1
//	         claimed, attempt_count N+1, queued_at = now, → queued. The Run
//	         is then what admission would have written for Attempt N+1.
//	queue    created (held by concurrency "replace") and no older active
//	         Run of the task is left → queued.
//	replace  created, older active Runs of the task remain: each of them
//	         without an intent (and not row-locked right now) gets the
//	         cancel intent "replace" and a run.cancel_requested event; this
//	         Run stays held.
//	timeout  dispatching | running, its started Attempt's durable deadline
//	         passed, no intent yet → cancel intent "timeout" +
//	         run.cancel_requested (the worker gets cancel at its next
//	         heartbeat; the completion ends timed_out).
//	requeue  dispatching with no live lease and the Attempt unstarted (the
//	         lease was released without moving the Run) → queued.
//	orphan   dispatching | running with no live lease and the Attempt
//	         started, the last lease ended more than the grace ago (or
//	         there never was one) → Attempt lost, Run lost (fail closed).
const sweepRunSQL = `WITH lk AS MATERIALIZED (
	SELECT pg_try_advisory_xact_lock($4::int4, $2::int4) AS ok
), n AS MATERIALIZED (
	SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms FROM lk WHERE lk.ok
), t AS MATERIALIZED (
	SELECT r.run_id, r.project_id, r.task_id, r.status AS run_status, r.version AS run_version, r.attempt_count,
		r.not_before_ms,
		r.cancel_reason, r.created_at_ms AS run_created_at_ms,
		a.attempt_id, a.status AS attempt_status, a.deadline_at_ms, n.ms, k.deleted_at_ms IS NOT NULL AS task_deleted
	FROM n
	JOIN ql3.runs r ON r.run_id = $1::uuid
		AND r.status IN ('created', 'queued', 'dispatching', 'running', 'retry_wait', 'lost')
	JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
	JOIN ql3.tasks k ON k.task_id = r.task_id
	FOR UPDATE OF r, a SKIP LOCKED
), f AS MATERIALIZED (
	SELECT t.*,
		EXISTS (SELECT 1 FROM ql3.run_leases l WHERE l.run_id = t.run_id AND l.status = 'leased') AS live_lease,
		(SELECT max(l.ended_at_ms) FROM ql3.run_leases l WHERE l.attempt_id = t.attempt_id) AS lease_ended_at_ms,
		EXISTS (SELECT 1 FROM ql3.runs o WHERE o.task_id = t.task_id AND o.run_id <> t.run_id
			AND o.status IN ('created', 'queued', 'dispatching', 'running', 'retry_wait', 'lost')
			AND (o.created_at_ms, o.run_id) < (t.run_created_at_ms, t.run_id)) AS older_active
	FROM t
), d AS MATERIALIZED (
	SELECT f.*, y.action, CASE y.action
			WHEN 'cancel' THEN CASE WHEN f.cancel_reason = 'timeout' AND f.run_status IN ('queued', 'retry_wait')
				THEN 'timed_out' ELSE 'cancelled' END
			WHEN 'resolve' THEN $6::text
			WHEN 'promote' THEN 'queued' WHEN 'queue' THEN 'queued' WHEN 'requeue' THEN 'queued'
			WHEN 'orphan' THEN 'lost' ELSE f.run_status END AS to_status,
		$7::bigint AS backoff_ms
	FROM f CROSS JOIN LATERAL (SELECT CASE
		WHEN (f.cancel_reason IS NOT NULL OR f.task_deleted)
			AND f.run_status IN ('created', 'queued', 'retry_wait', 'lost') THEN 'cancel'
		WHEN f.run_status = 'lost' AND f.attempt_count = $8::int THEN 'resolve'
		WHEN f.run_status = 'retry_wait' AND f.not_before_ms <= f.ms THEN 'promote'
		WHEN f.run_status = 'created' AND f.cancel_reason IS NULL AND NOT f.older_active THEN 'queue'
		WHEN f.run_status = 'created' AND f.cancel_reason IS NULL THEN 'replace'
		WHEN f.run_status IN ('dispatching', 'running') AND NOT f.live_lease AND f.attempt_status = 'claimed'
			AND f.run_status = 'dispatching' THEN 'requeue'
		WHEN f.run_status IN ('dispatching', 'running') AND NOT f.live_lease AND f.attempt_status IN ('starting', 'running')
			AND coalesce(f.lease_ended_at_ms, 0) + $3::bigint <= f.ms THEN 'orphan'
		WHEN f.run_status IN ('dispatching', 'running') AND f.cancel_reason IS NULL
			AND f.attempt_status IN ('starting', 'running') AND f.deadline_at_ms <= f.ms THEN 'timeout'
		END AS action) y
	WHERE y.action IS NOT NULL
), error_of AS MATERIALIZED (
	SELECT d.*, CASE
		WHEN d.to_status = 'timed_out' THEN 'timeout'
		WHEN d.to_status = 'cancelled' THEN 'cancelled_by_user'
		WHEN d.action IN ('resolve', 'orphan') THEN 'worker_lost' END AS error_class
	FROM d
), att_end AS (
	UPDATE ql3.attempts a SET status = CASE WHEN e.action = 'orphan' THEN 'lost' ELSE 'cancelled' END,
		version = a.version + 1, error_class = e.error_class,
		finished_at_ms = greatest(e.ms, a.created_at_ms), updated_at_ms = greatest(e.ms, a.updated_at_ms)
	FROM error_of e
	WHERE a.attempt_id = e.attempt_id AND (e.action = 'orphan' OR (e.action = 'cancel' AND e.attempt_status = 'claimed'))
	RETURNING a.attempt_id
), att_new AS (
	INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, created_at_ms, updated_at_ms)
	SELECT $5::uuid, e.run_id, e.attempt_count + 1, e.project_id, 'claimed', 'remote_worker', e.ms, e.ms
	FROM error_of e WHERE e.action = 'promote'
	RETURNING attempt_id
), ru AS (
	UPDATE ql3.runs r SET status = e.to_status, version = r.version + 1,
		updated_at_ms = greatest(e.ms, r.updated_at_ms),
		attempt_count = CASE WHEN e.action = 'promote' THEN r.attempt_count + 1 ELSE r.attempt_count END,
		queued_at_ms = CASE WHEN e.action IN ('promote', 'queue', 'requeue') THEN e.ms ELSE r.queued_at_ms END,
		not_before_ms = CASE WHEN e.to_status = 'retry_wait' THEN e.ms + e.backoff_ms ELSE r.not_before_ms END,
		error_class = coalesce(e.error_class, r.error_class),
		finished_at_ms = CASE WHEN e.to_status IN ('cancelled', 'timed_out', 'failed') THEN greatest(e.ms, r.created_at_ms)
			ELSE r.finished_at_ms END,
		cancel_requested_at_ms = CASE WHEN e.action = 'timeout' OR (e.action = 'cancel' AND r.cancel_reason IS NULL)
			THEN e.ms ELSE r.cancel_requested_at_ms END,
		cancel_reason = CASE WHEN e.action = 'timeout' THEN 'timeout'
			WHEN e.action = 'cancel' AND r.cancel_reason IS NULL THEN 'shutdown' ELSE r.cancel_reason END
	FROM error_of e
	WHERE r.run_id = e.run_id AND r.version = e.run_version AND e.action <> 'replace'
	RETURNING r.run_id
), replace_targets AS MATERIALIZED (
	SELECT x.run_id, e.ms FROM error_of e
	CROSS JOIN LATERAL (SELECT o2.run_id FROM ql3.runs o2
		WHERE o2.task_id = e.task_id AND o2.run_id <> e.run_id AND o2.cancel_requested_at_ms IS NULL
		  AND o2.status IN ('created', 'queued', 'dispatching', 'running', 'retry_wait', 'lost')
		  AND (o2.created_at_ms, o2.run_id) < (e.run_created_at_ms, e.run_id)
		ORDER BY o2.created_at_ms, o2.run_id LIMIT 64
		FOR UPDATE SKIP LOCKED) x
	WHERE e.action = 'replace'
), replaced AS (
	UPDATE ql3.runs o SET cancel_requested_at_ms = x.ms, cancel_reason = 'replace', version = o.version + 1,
		updated_at_ms = greatest(x.ms, o.updated_at_ms)
	FROM replace_targets x
	WHERE o.run_id = x.run_id
	RETURNING o.run_id, o.project_id, o.attempt_count, x.ms
), ev_replaced AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT p.run_id, coalesce((SELECT max(x.sequence) FROM ql3.run_events x WHERE x.run_id = p.run_id), 0) + 1,
		p.project_id, nullif(p.attempt_count, 0), 'run.cancel_requested',
		jsonb_build_object('reason', 'concurrency_replace', 'attemptNumber', p.attempt_count), p.ms
	FROM replaced p
	RETURNING run_id
), ev AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT e.run_id, coalesce((SELECT max(x.sequence) FROM ql3.run_events x WHERE x.run_id = e.run_id), 0) + 1,
		e.project_id, CASE WHEN e.action = 'promote' THEN e.attempt_count + 1 ELSE e.attempt_count END, v.type, v.payload, e.ms
	FROM error_of e CROSS JOIN LATERAL (SELECT
		CASE e.action WHEN 'timeout' THEN 'run.cancel_requested' ELSE 'run.' || CASE e.to_status
			WHEN 'retry_wait' THEN 'retry_scheduled' ELSE e.to_status END END AS type,
		jsonb_strip_nulls(jsonb_build_object('from', CASE WHEN e.action <> 'timeout' THEN e.run_status END,
			'to', CASE WHEN e.action <> 'timeout' THEN e.to_status END,
			'attemptId', CASE WHEN e.action = 'promote' THEN $5::uuid ELSE e.attempt_id END,
			'attemptNumber', CASE WHEN e.action = 'promote' THEN e.attempt_count + 1 ELSE e.attempt_count END,
			'errorClass', e.error_class,
			'reason', CASE e.action WHEN 'cancel' THEN coalesce(e.cancel_reason, 'task_deleted') WHEN 'timeout' THEN 'timeout'
				WHEN 'requeue' THEN 'lease_released' WHEN 'orphan' THEN 'lease_missing' WHEN 'resolve' THEN 'lease_expired' END,
			'retryAtMs', CASE WHEN e.to_status = 'retry_wait' THEN e.ms + e.backoff_ms END)) AS payload) v
	WHERE e.action <> 'replace'
	RETURNING run_id
), tally AS MATERIALIZED (
	SELECT (SELECT count(*) FROM att_end) AS att_end, (SELECT count(*) FROM att_new) AS att_new,
		(SELECT count(*) FROM ru) AS ru, (SELECT count(*) FROM ev) AS ev,
		(SELECT count(*) FROM replaced) AS replaced, (SELECT count(*) FROM ev_replaced) AS ev_replaced,
		(SELECT min(action) FROM d) AS action, (SELECT min(attempt_status) FROM d) AS attempt_status
)
SELECT lk.ok, coalesce(e.action, ''), coalesce(e.to_status, ''), y.replaced,
	CASE WHEN y.replaced = y.ev_replaced AND CASE coalesce(y.action, '')
		WHEN '' THEN y.att_end + y.att_new + y.ru + y.ev + y.replaced = 0
		WHEN 'replace' THEN y.att_end + y.att_new + y.ru + y.ev = 0
		WHEN 'promote' THEN y.att_new = 1 AND y.att_end = 0 AND y.ru = 1 AND y.ev = 1
		WHEN 'orphan' THEN y.att_end = 1 AND y.att_new = 0 AND y.ru = 1 AND y.ev = 1
		WHEN 'cancel' THEN y.att_end = (CASE WHEN y.attempt_status = 'claimed' THEN 1 ELSE 0 END)
			AND y.att_new = 0 AND y.ru = 1 AND y.ev = 1
		ELSE y.att_end = 0 AND y.att_new = 0 AND y.ru = 1 AND y.ev = 1 END THEN true
	ELSE ('ql3 sweep refused: ' || coalesce(y.action, 'none') || ' wrote ' || y.att_end || '+' || y.att_new
		|| ' attempts, ' || y.ru || ' runs, ' || y.ev || '+' || y.ev_replaced || ' events')::boolean END
FROM lk CROSS JOIN tally y LEFT JOIN error_of e ON true`

// runScanCols is what every Run scan returns: the Run, its current
// Attempt, and the attempt count and retry policy run.DecideLost decides a
// lost Run by.
const runScanCols = `r.run_id, a.attempt_id, r.attempt_count, r.retry_on_lost, r.retry_max_attempts,
	r.retry_backoff_base_ms, r.retry_backoff_max_ms`

// Run scans (database time). Each returns runScanCols, at most $1 rows, after the keyset ($2 run id: the nil
// UUID for the first page) where it pages.
const (
	// Lost Runs (runs_lost_idx).
	lostCandidatesSQL = `SELECT ` + runScanCols + ` FROM ql3.runs r
	JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
	WHERE r.status = 'lost' ORDER BY r.updated_at_ms, r.run_id LIMIT $1::int`
	// Cancel intents on Runs that are not executing (runs_cancel_pending_idx).
	cancelCandidatesSQL = `SELECT ` + runScanCols + ` FROM ql3.runs r
	JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
	WHERE r.cancel_requested_at_ms IS NOT NULL AND r.status IN ('created', 'queued', 'retry_wait', 'lost')
	ORDER BY r.cancel_requested_at_ms, r.run_id LIMIT $1::int`
	// Held Runs (runs_held_idx), keyset by run id.
	heldCandidatesSQL = `SELECT ` + runScanCols + ` FROM ql3.runs r
	JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
	WHERE r.status = 'created' AND r.cancel_requested_at_ms IS NULL AND r.run_id > $2::uuid
	ORDER BY r.run_id LIMIT $1::int`
	// In-flight Runs without a live lease (runs_in_flight_idx), keyset by id.
	orphanCandidatesSQL = `SELECT ` + runScanCols + ` FROM ql3.runs r
	JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
	WHERE r.status IN ('dispatching', 'running') AND r.run_id > $2::uuid
	  AND NOT EXISTS (SELECT 1 FROM ql3.run_leases l WHERE l.run_id = r.run_id AND l.status = 'leased')
	ORDER BY r.run_id LIMIT $1::int`
	// Started Attempts past their durable deadline (attempts_deadline_idx).
	timeoutCandidatesSQL = `SELECT ` + runScanCols + ` FROM ql3.attempts a
	JOIN ql3.runs r ON r.run_id = a.run_id AND r.attempt_count = a.attempt
	WHERE a.status IN ('starting', 'running') AND a.finished_at_ms IS NULL
	  AND a.deadline_at_ms <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint
	  AND r.cancel_requested_at_ms IS NULL AND r.status IN ('dispatching', 'running')
	ORDER BY a.deadline_at_ms, a.attempt_id LIMIT $1::int`
	// Waiting Runs of deleted tasks (tasks are few; runs_task_active_idx).
	deletedCandidatesSQL = `SELECT ` + runScanCols + ` FROM ql3.tasks k
	JOIN ql3.runs r ON r.task_id = k.task_id AND r.status IN ('created', 'queued', 'retry_wait', 'lost')
	JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
	WHERE k.deleted_at_ms IS NOT NULL AND r.cancel_requested_at_ms IS NULL
	ORDER BY r.created_at_ms, r.run_id LIMIT $1::int`
	// Due retries (runs_retry_wait_idx).
	retryCandidatesSQL = `SELECT ` + runScanCols + ` FROM ql3.runs r
	JOIN ql3.attempts a ON a.run_id = r.run_id AND a.attempt = r.attempt_count
	WHERE r.status = 'retry_wait' AND r.cancel_requested_at_ms IS NULL
	  AND r.not_before_ms <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint
	ORDER BY r.not_before_ms, r.run_id LIMIT $1::int`
)
