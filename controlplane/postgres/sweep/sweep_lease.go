package sweep

// sweepLeaseSQL handles one RunLease found by the lease scan, as one
// statement (the caller sends BEGIN, it and COMMIT as one pipeline: one
// transaction per change, ADR 0013). Parameters: $1 lease id, $2 its
// session's advisory key, $3 its attempt's advisory key, $4 cancel grace
// (ms), $5 the session lock class, $6 the attempt lock class, and what
// becomes of the Run if the lease is lost, decided in Go by
// core/run.DecideLost from the scan's row: $7 the status (retry_wait |
// failed), $8 the backoff (ms), $9 the attempt count it was decided for.
//
// Order (ADR 0010): the session's shared advisory lock (waits for a claim
// or a transition of that session), then a TRY of the attempt's exclusive
// lock (held by an ACK, a completion or another replica's sweeper: skip it
// this pass), then the row locks (FOR UPDATE … SKIP LOCKED), then the
// database clock. The row locks and the clock depend on lk through n, and a
// LockRows node only locks rows the join below it produced, so no row is
// locked before the advisory locks are held. Everything is re-checked
// under the locks; a lease that moved on in between is left alone.
//
// Actions:
//
//	requeue  unstarted (attempt claimed, Run dispatching) and the lease
//	         expired, or its session is offline (replaced or not) or
//	         expired: lease released (reason lease_expired, session_replaced,
//	         session_offline or session_expired), Run → queued, the same
//	         Attempt stays claimed for the next offer (lease generation + 1);
//	         events run.lease_released + run.queued. Never lost: nothing ran.
//	cancel   unstarted with a cancel intent: lease released (cancelled),
//	         Attempt → cancelled, Run → cancelled (timed_out for a timeout
//	         intent); events run.lease_released + the status event.
//	lost     started (attempt starting or running) and the lease's authority
//	         ended more than the cancel grace ago — its expiry, or the
//	         session's close if earlier: lease released (lease_expired),
//	         Attempt → lost, Run → lost (event run.lost) and, in the same
//	         transaction, on to $7 (retry_wait after $8 ms, or failed: the
//	         policy's decision, made in Go), or cancelled when an intent is
//	         set (run.retry_scheduled | run.failed | run.cancelled). Only
//	         while the Run's attempt count is still $9 (else left for the
//	         next scan). The worker fenced itself by then (ADR 0013).
//	         A Run found lost otherwise is resolved by sweep_run.go.
//	release  a live lease whose Attempt already ended, or whose Run is not
//	         dispatching/running: the lease is released (stale), nothing
//	         else changes; event run.lease_released.
//
// The statement checks its own write counts against the action and
// otherwise fails (a non-constant cast to boolean, as in admitSQL), so a
// wrong change never commits.
const sweepLeaseSQL = `WITH lk AS MATERIALIZED (
	SELECT pg_advisory_xact_lock_shared($5::int4, $2::int4) IS NOT NULL
		AND pg_try_advisory_xact_lock($6::int4, $3::int4) AS ok
), n AS MATERIALIZED (
	SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms FROM lk WHERE lk.ok
), t AS MATERIALIZED (
	SELECT l.lease_id, l.lease_generation, l.expires_at_ms, l.worker_id, l.session_id, l.session_generation, l.offer_id,
		a.attempt_id, a.attempt, a.status AS attempt_status,
		r.run_id, r.project_id, r.status AS run_status, r.version AS run_version, r.cancel_reason,
		r.attempt_count,
		s.status AS session_status, s.lease_expires_at_ms AS session_expires_at_ms, s.closed_at_ms AS session_closed_at_ms,
		s.generation AS s_generation, n.ms
	FROM n
	JOIN ql3.run_leases l ON l.lease_id = $1::uuid AND l.status = 'leased'
	JOIN ql3.attempts a ON a.attempt_id = l.attempt_id
	JOIN ql3.runs r ON r.run_id = l.run_id
	JOIN ql3.worker_sessions s ON s.session_id = l.session_id
	FOR UPDATE OF l, a, r SKIP LOCKED
), d AS MATERIALIZED (
	SELECT t.*, x.action, x.reason, x.to_status, x.error_class,
		-- lost is left in the same transaction, by the policy (ADR 0013),
		-- as run.DecideLost decided ($7, $8):
		CASE WHEN x.action = 'lost' THEN CASE WHEN t.cancel_reason IS NOT NULL THEN 'cancelled'
			ELSE $7::text END END AS after_lost,
		$8::bigint AS backoff_ms
	FROM t CROSS JOIN LATERAL (
		SELECT y.action,
			CASE WHEN y.action = 'release' THEN 'stale'
				WHEN y.action = 'lost' THEN 'lease_expired'
				WHEN y.action = 'cancel' THEN 'cancelled'
				WHEN t.expires_at_ms <= t.ms THEN 'lease_expired'
				WHEN t.session_status = 'offline' AND EXISTS (SELECT 1 FROM ql3.worker_sessions s2
					WHERE s2.worker_id = t.worker_id AND s2.generation > t.s_generation) THEN 'session_replaced'
				WHEN t.session_status = 'offline' THEN 'session_offline'
				ELSE 'session_expired' END AS reason,
			CASE y.action WHEN 'requeue' THEN 'queued' WHEN 'lost' THEN 'lost'
				WHEN 'cancel' THEN CASE WHEN t.cancel_reason = 'timeout' THEN 'timed_out' ELSE 'cancelled' END END AS to_status,
			CASE y.action WHEN 'lost' THEN 'worker_lost'
				WHEN 'cancel' THEN CASE WHEN t.cancel_reason = 'timeout' THEN 'timeout' ELSE 'cancelled_by_user' END END AS error_class
		FROM (SELECT CASE
			WHEN t.attempt_status NOT IN ('claimed', 'starting', 'running')
				OR t.run_status NOT IN ('dispatching', 'running')
				OR (t.attempt_status = 'claimed' AND t.run_status <> 'dispatching') THEN 'release'
			WHEN t.attempt_status = 'claimed' AND t.cancel_reason IS NOT NULL THEN 'cancel'
			WHEN t.attempt_status = 'claimed' AND (t.expires_at_ms <= t.ms OR t.session_status = 'offline'
				OR t.session_expires_at_ms <= t.ms) THEN 'requeue'
			WHEN t.attempt_status <> 'claimed' AND t.attempt_count = $9::int
				AND least(t.expires_at_ms, coalesce(t.session_closed_at_ms, t.expires_at_ms)) + $4::bigint <= t.ms THEN 'lost'
			END AS action) y) x
	WHERE x.action IS NOT NULL
), rel AS (
	UPDATE ql3.run_leases l SET status = 'released', release_reason = d.reason, version = l.version + 1,
		ended_at_ms = greatest(d.ms, l.leased_at_ms), updated_at_ms = greatest(d.ms, l.updated_at_ms)
	FROM d WHERE l.lease_id = d.lease_id
	RETURNING l.lease_id
), att AS (
	UPDATE ql3.attempts a SET status = CASE WHEN d.action = 'lost' THEN 'lost' ELSE 'cancelled' END,
		version = a.version + 1, error_class = d.error_class,
		finished_at_ms = greatest(d.ms, a.created_at_ms), updated_at_ms = greatest(d.ms, a.updated_at_ms)
	FROM d WHERE a.attempt_id = d.attempt_id AND d.action IN ('lost', 'cancel')
	RETURNING a.attempt_id
), ru AS (
	UPDATE ql3.runs r SET status = coalesce(d.after_lost, d.to_status), version = r.version + 1,
		updated_at_ms = greatest(d.ms, r.updated_at_ms),
		error_class = CASE WHEN d.after_lost = 'cancelled' AND d.cancel_reason = 'timeout' THEN 'timeout'
			WHEN d.after_lost = 'cancelled' THEN 'cancelled_by_user' ELSE coalesce(d.error_class, r.error_class) END,
		not_before_ms = CASE WHEN d.after_lost = 'retry_wait' THEN d.ms + d.backoff_ms ELSE r.not_before_ms END,
		finished_at_ms = CASE WHEN d.action = 'cancel' OR d.after_lost IN ('cancelled', 'failed')
			THEN greatest(d.ms, r.created_at_ms) ELSE r.finished_at_ms END
	FROM d WHERE r.run_id = d.run_id AND r.version = d.run_version AND d.action IN ('requeue', 'cancel', 'lost')
	RETURNING r.run_id
), ev AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT d.run_id, m.seq + row_number() OVER (ORDER BY v.k), d.project_id, d.attempt, v.type, v.payload, d.ms
	FROM d
	CROSS JOIN LATERAL (SELECT coalesce(max(e.sequence), 0) AS seq FROM ql3.run_events e WHERE e.run_id = d.run_id) m
	CROSS JOIN LATERAL (VALUES
		(1, 'run.lease_released', d.action IN ('requeue', 'cancel', 'release'), jsonb_build_object(
			'attemptId', d.attempt_id, 'attemptNumber', d.attempt, 'reason', d.reason, 'workerId', d.worker_id,
			'sessionId', d.session_id, 'sessionGeneration', d.session_generation, 'offerId', d.offer_id,
			'leaseGeneration', d.lease_generation)),
		(2, 'run.queued', d.action = 'requeue', jsonb_build_object('from', d.run_status, 'to', 'queued',
			'attemptId', d.attempt_id, 'attemptNumber', d.attempt, 'reason', d.reason,
			'leaseGeneration', d.lease_generation + 1)),
		(3, CASE WHEN d.to_status = 'timed_out' THEN 'run.timed_out' ELSE 'run.cancelled' END, d.action = 'cancel',
			jsonb_build_object('from', d.run_status, 'to', d.to_status, 'attemptId', d.attempt_id,
			'attemptNumber', d.attempt, 'errorClass', d.error_class, 'reason', d.cancel_reason)),
		(4, 'run.lost', d.action = 'lost', jsonb_build_object('from', d.run_status, 'to', 'lost',
			'attemptId', d.attempt_id, 'attemptNumber', d.attempt, 'errorClass', 'worker_lost', 'reason', d.reason,
			'workerId', d.worker_id, 'sessionId', d.session_id, 'sessionGeneration', d.session_generation,
			'leaseGeneration', d.lease_generation)),
		(5, CASE d.after_lost WHEN 'retry_wait' THEN 'run.retry_scheduled' WHEN 'failed' THEN 'run.failed'
			ELSE 'run.cancelled' END, d.action = 'lost', jsonb_strip_nulls(jsonb_build_object('from', 'lost',
			'to', d.after_lost, 'attemptNumber', d.attempt,
			'errorClass', CASE WHEN d.after_lost <> 'cancelled' THEN 'worker_lost'
				WHEN d.cancel_reason = 'timeout' THEN 'timeout' ELSE 'cancelled_by_user' END,
			'reason', CASE WHEN d.after_lost = 'cancelled' THEN d.cancel_reason ELSE 'lease_expired' END,
			'retryAtMs', CASE WHEN d.after_lost = 'retry_wait' THEN d.ms + d.backoff_ms END)))
	) AS v(k, type, keep, payload)
	WHERE v.keep
	RETURNING run_id
), tally AS MATERIALIZED (
	SELECT (SELECT count(*) FROM rel) AS rel, (SELECT count(*) FROM att) AS att,
		(SELECT count(*) FROM ru) AS ru, (SELECT count(*) FROM ev) AS ev,
		(SELECT min(action) FROM d) AS action
)
SELECT lk.ok, coalesce(d.action, ''), coalesce(d.reason, ''), coalesce(d.after_lost, ''),
	CASE WHEN CASE coalesce(y.action, '')
		WHEN 'requeue' THEN y.rel = 1 AND y.att = 0 AND y.ru = 1 AND y.ev = 2
		WHEN 'cancel' THEN y.rel = 1 AND y.att = 1 AND y.ru = 1 AND y.ev = 2
		WHEN 'lost' THEN y.rel = 1 AND y.att = 1 AND y.ru = 1 AND y.ev = 2
		WHEN 'release' THEN y.rel = 1 AND y.att = 0 AND y.ru = 0 AND y.ev = 1
		ELSE y.rel + y.att + y.ru + y.ev = 0 END THEN true
	ELSE ('ql3 sweep refused: ' || coalesce(y.action, 'none') || ' wrote ' || y.rel || ' leases, ' || y.att
		|| ' attempts, ' || y.ru || ' runs, ' || y.ev || ' events')::boolean END
FROM lk CROSS JOIN tally y LEFT JOIN d ON true`

// leaseCandidatesSQL is the lease scan: live leases that a sweep change
// would act on by database time, oldest expiry first, limit $2 (each
// branch stops at $2 itself, so a page reads about a page). The three
// branches are index paths: expired leases (run_leases_expiry_idx), the
// live leases of sessions that are offline or expired (run_leases_session_idx
// over the live leases, at most the sum of session capacities), and
// dispatching Runs with a cancel intent (runs_cancel_pending_idx). The
// session branch is driven by the sessions (few) rather than the leases
// (many): sessions that went offline within the last $3 ms (older ones'
// leases have expired by their own TTL and are in the first branch) and
// live sessions whose heartbeat lease passed (worker_sessions_lease_idx).
// The branch is gated by an uncorrelated EXISTS over those sessions (a
// one-time filter): with no such session it does not run at all. Without
// the gate the planner walked run_leases_expiry_idx over every expired
// lease and filtered by session — 25 ms of a 26 ms scan with 7,000 expired
// leases of a live session (sweep.sh STATEMENTS=1). With a dead session
// the branch still costs that walk; see the note of issue 10.
// Started leases become candidates only once their authority ended more
// than the cancel grace ($1 ms) ago. Each row also carries its Run's
// attempt count and retry policy, for run.DecideLost.
const leaseCandidatesSQL = `WITH n AS MATERIALIZED (
	SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms
), c AS ((
	SELECT l.lease_id, l.session_id, l.attempt_id, l.expires_at_ms
	FROM ql3.run_leases l CROSS JOIN n
	JOIN ql3.attempts a ON a.attempt_id = l.attempt_id
	WHERE l.status = 'leased' AND l.expires_at_ms <= n.ms
	  AND (a.status NOT IN ('starting', 'running') OR l.expires_at_ms + $1::bigint <= n.ms)
	ORDER BY l.expires_at_ms, l.lease_id LIMIT $2::int
	) UNION (
	SELECT l.lease_id, l.session_id, l.attempt_id, l.expires_at_ms
	FROM ql3.worker_sessions s CROSS JOIN n
	JOIN ql3.run_leases l ON l.session_id = s.session_id AND l.status = 'leased'
	JOIN ql3.attempts a ON a.attempt_id = l.attempt_id
	WHERE ((s.status = 'offline' AND s.closed_at_ms > n.ms - $3::bigint)
		OR (s.status <> 'offline' AND s.lease_expires_at_ms <= n.ms))
	  AND EXISTS (SELECT 1 FROM ql3.worker_sessions s0
		WHERE (s0.status = 'offline' AND s0.closed_at_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint - $3::bigint)
		   OR (s0.status <> 'offline' AND s0.lease_expires_at_ms <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint))
	  AND (a.status NOT IN ('starting', 'running')
		OR least(l.expires_at_ms, coalesce(s.closed_at_ms, l.expires_at_ms)) + $1::bigint <= n.ms)
	ORDER BY l.expires_at_ms, l.lease_id LIMIT $2::int
	) UNION (
	SELECT l.lease_id, l.session_id, l.attempt_id, l.expires_at_ms
	FROM ql3.runs r
	JOIN ql3.run_leases l ON l.run_id = r.run_id AND l.status = 'leased'
	JOIN ql3.attempts a ON a.attempt_id = l.attempt_id AND a.status = 'claimed'
	WHERE r.cancel_requested_at_ms IS NOT NULL AND r.status = 'dispatching'
	ORDER BY l.expires_at_ms, l.lease_id LIMIT $2::int
))
SELECT p.lease_id, p.session_id, p.attempt_id, r.attempt_count, r.retry_on_lost, r.retry_max_attempts,
	r.retry_backoff_base_ms, r.retry_backoff_max_ms
FROM (SELECT lease_id, session_id, attempt_id, expires_at_ms FROM c ORDER BY expires_at_ms, lease_id LIMIT $2::int) p
-- one Run per page row, by primary keys (LIMIT 1 keeps it a nested loop:
-- a join planned over the whole runs table cost every sweep a scan of it)
CROSS JOIN LATERAL (SELECT r.attempt_count, r.retry_on_lost, r.retry_max_attempts, r.retry_backoff_base_ms,
		r.retry_backoff_max_ms
	FROM ql3.attempts a JOIN ql3.runs r ON r.run_id = a.run_id WHERE a.attempt_id = p.attempt_id LIMIT 1) r
ORDER BY p.expires_at_ms, p.lease_id`
