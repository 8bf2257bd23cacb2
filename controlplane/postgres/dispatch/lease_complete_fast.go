package dispatch

import (
	"context"
	"crypto/sha256"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/run"
)

// The fenced completion (ADR 0031): the common case of a completion — a
// first report of success by a started, running Attempt whose Run has no
// cancel intent — in one round trip and one implicit transaction
// (fencedWrite: locks, the Run's row lock, this statement). It writes exactly what recordCompletion
// writes for that case: Attempt and Run succeeded, the lease completed,
// each stream that has a row or reported bytes closed (truncated when the
// stored log is short), one run.succeeded event whose payload carries
// reason log_length_mismatch when the stored and reported lengths differ.
// Anything else — another status, an error class, a replay (the Attempt
// has a completion digest), a late or drifted report, a cancel intent, a
// finishedAtMs beyond the skew — finds no row, writes nothing, and takes
// the full path, which decides duplicate, late, conflict or the override.

// sqlCompleteFenced: $1..$8 the fence (fenceSQL), $9 exit code, $10
// signal, $11 stdout bytes, $12 stderr bytes, $13 completion digest, $14
// finishedAtMs, $15 the allowed skew, $16 the event payload without the
// attempt number and reason.
const sqlCompleteFenced = `WITH n AS (SELECT ` + postgres.DBNowMs + ` AS ms),
f AS (
	SELECT l.lease_id, l.project_id, a.attempt
	FROM ql3.run_leases l, ql3.attempts a, ql3.runs r, ql3.worker_sessions s, n
	WHERE ` + fenceSQL + ` AND a.status = 'running' AND a.completion_digest IS NULL
		AND r.status = 'running' AND r.cancel_requested_at_ms IS NULL AND $14::bigint <= n.ms + $15::bigint),
st AS MATERIALIZED (
	SELECT v.stream, v.reported, x.length_bytes AS stored, x.run_id IS NOT NULL AS has_row
	FROM f CROSS JOIN (VALUES ('stdout', $11::bigint), ('stderr', $12::bigint)) AS v(stream, reported)
	LEFT JOIN ql3.run_log_streams x ON x.run_id = $1::uuid AND x.attempt = f.attempt AND x.stream = v.stream),
a AS (
	UPDATE ql3.attempts x SET status = 'succeeded', error_class = NULL, exit_code = $9::int, signal = nullif($10::text, ''),
		stdout_bytes = $11::bigint, stderr_bytes = $12::bigint, completion_digest = $13::bytea,
		finished_at_ms = n.ms, version = x.version + 1, updated_at_ms = n.ms, masked_count = $17::bigint
	FROM f, n WHERE x.attempt_id = $2::uuid AND x.status = 'running'
	RETURNING x.attempt),
ru AS (
	UPDATE ql3.runs x SET status = 'succeeded', error_class = NULL, version = x.version + 1, updated_at_ms = n.ms, finished_at_ms = n.ms
	FROM n, a WHERE x.run_id = $1::uuid AND x.status = 'running'
	RETURNING 1),
lu AS (
	UPDATE ql3.run_leases x SET status = 'completed', ended_at_ms = n.ms, updated_at_ms = n.ms, version = x.version + 1
	FROM f, n, a WHERE x.lease_id = f.lease_id AND x.status = 'leased'
	RETURNING 1),
so AS (
	INSERT INTO ql3.run_log_streams AS x (run_id, attempt, stream, project_id, closed, truncated, created_at_ms, updated_at_ms)
	SELECT $1::uuid, a.attempt, st.stream, f.project_id, true, st.reported > 0, n.ms, n.ms
	FROM a, f, n, st
	WHERE st.has_row OR st.reported > 0
	ON CONFLICT (run_id, attempt, stream) DO UPDATE SET closed = true,
		truncated = x.truncated OR x.length_bytes <> (CASE x.stream WHEN 'stdout' THEN $11::bigint ELSE $12::bigint END),
		updated_at_ms = greatest(x.created_at_ms, EXCLUDED.updated_at_ms)
	RETURNING 1),
ev AS (
	INSERT INTO ql3.run_events (run_id, sequence, project_id, attempt, type, payload, created_at_ms)
	SELECT $1::uuid, ` + nextSeq + ` + 1, f.project_id, a.attempt, 'run.succeeded',
		$16::jsonb || jsonb_build_object('attemptNumber', a.attempt)
			|| CASE WHEN EXISTS (SELECT 1 FROM st WHERE coalesce(st.stored, 0) <> st.reported)
				THEN jsonb_build_object('reason', 'log_length_mismatch') ELSE '{}'::jsonb END,
		n.ms
	FROM f, a, ru, n
	RETURNING 1)
SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM ru), (SELECT count(*) FROM lu), (SELECT count(*) FROM so),
	(SELECT count(*) FROM st WHERE has_row OR reported > 0), (SELECT count(*) FROM ev)
FROM f`

// completeFenced tries the one-round-trip completion. ok false: the full
// path decides.
func (d *Dispatcher) completeFenced(ctx context.Context, p controlplane.Principal, c protocol.Completion,
	digest [sha256.Size]byte) (bool, error) {
	if c.Status != run.AttemptSucceeded || c.ErrorClass != "" {
		return false, nil
	}
	ref := c.LeaseRef
	var ids [4]uuid.UUID
	for i, f := range []struct{ field, s string }{{"runId", ref.RunID}, {"attemptId", ref.AttemptID},
		{"sessionId", ref.SessionID}, {"workerId", p.WorkerID}} {
		id, err := parseID(f.field, f.s)
		if err != nil {
			return false, err
		}
		ids[i] = id
	}
	runID, attemptID, sessionID, workerID := ids[0], ids[1], ids[2], ids[3]
	token := ref.LeaseToken.Digest()
	payload, err := run.Payload{AttemptID: attemptID.String(), From: string(run.RunRunning),
		To: string(run.RunSucceeded), ExitCode: c.ExitCode, Signal: c.Signal, StdoutBytes: c.StdoutBytes,
		StderrBytes: c.StderrBytes, LogTruncated: c.LogTruncated}.Encode()
	if err != nil {
		return false, errs.E(errs.Internal, "", "completion payload: %v", err)
	}
	var exit *int32
	if c.ExitCode != nil {
		v := int32(*c.ExitCode)
		exit = &v
	}
	hit, err := d.fencedWrite(ctx, runID, attemptID, sessionID, "completion", func(row pgx.Row) (bool, error) {
		var na, nr, nl, ns, wantStreams, nev int64
		err := row.Scan(&na, &nr, &nl, &ns, &wantStreams, &nev)
		switch {
		case err == pgx.ErrNoRows:
			return false, nil
		case err != nil:
			return false, err
		case na != 1 || nr != 1 || nl != 1 || ns != wantStreams || nev != 1:
			// Locks are held and the fence held: only a schema drift gets
			// here. Its writes commit at the Sync all the same.
			return false, errs.E(errs.Internal, "", "completion wrote attempt %d run %d lease %d streams %d events %d",
				na, nr, nl, ns, nev)
		}
		return true, nil
	}, sqlCompleteFenced, runID, attemptID, ref.LeaseGeneration, workerID, sessionID, ref.Generation, ref.OfferID,
		token[:], exit, c.Signal, c.StdoutBytes, c.StderrBytes, digest[:], c.FinishedAtMs, int64(MaxCompletionSkewMs),
		string(payload), c.MaskedCount)
	if err != nil || !hit {
		return false, err
	}
	d.stats.fencedCompletions.Add(1)
	return true, nil
}
