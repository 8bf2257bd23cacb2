package runops

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/placement/matcher"
)

// Reads of the operator surface that need runtime facts (sessions, leases,
// log chunks). The runtime pool reads them; nothing here writes.

// maxWaitSessions bounds the sessions one explanation looks at.
const maxWaitSessions = 1024

// controlplane.WaitReason explains why the Run has not started; ok is false for a Run
// that is dispatching, running or finished.
func (o *RunOps) WaitReason(ctx context.Context, runRef string) (controlplane.WaitReason, bool, error) {
	runID, err := uuid.Parse(runRef)
	if err != nil {
		return controlplane.WaitReason{}, false, errs.NotFoundf("no run %.64q", runRef)
	}
	ws, err := o.waitingRuns(ctx, []uuid.UUID{runID})
	if err != nil {
		return controlplane.WaitReason{}, false, err
	}
	if len(ws) == 0 {
		return controlplane.WaitReason{}, false, errs.NotFoundf("no run %s", runID)
	}
	w, ok := ws[0].early()
	if !ok || w.Reason != "" {
		return w, ok, nil
	}
	sessions, truncated, err := o.liveSessions(ctx)
	if err != nil {
		return controlplane.WaitReason{}, false, err
	}
	m, pin, err := dispatch.RevisionMatcher(ws[0].revID, ws[0].canonical, ws[0].digest)
	if err != nil {
		return controlplane.WaitReason{}, false, err
	}
	return placementWait(revPlacement{m, pin}, sessions, truncated), true, nil
}

// MaxWaitReasons bounds the Runs of one WaitReasons call (a list page).
const MaxWaitReasons = 200

// WaitReasons gives the short reason (controlplane.WaitReason.Reason) for each of the
// Runs (a list page, ≤ MaxWaitReasons) that has not started; others are
// absent from the map. It costs two reads for the whole page — the Runs
// with their execution revisions and the live sessions, once — and one
// placement compile per distinct revision.
func (o *RunOps) WaitReasons(ctx context.Context, runRefs []string) (map[string]string, error) {
	if len(runRefs) > MaxWaitReasons {
		return nil, errs.Invalidf("runs", "at most %d, got %d", MaxWaitReasons, len(runRefs))
	}
	ids := make([]uuid.UUID, 0, len(runRefs))
	for _, ref := range runRefs {
		if id, err := uuid.Parse(ref); err == nil {
			ids = append(ids, id)
		}
	}
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	ws, err := o.waitingRuns(ctx, ids)
	if err != nil {
		return nil, err
	}
	var sessions []liveSession
	var truncated, loaded bool
	revs := map[uuid.UUID]revPlacement{}
	for _, r := range ws {
		w, ok := r.early()
		if !ok {
			continue
		}
		if w.Reason == "" {
			if !loaded {
				if sessions, truncated, err = o.liveSessions(ctx); err != nil {
					return nil, err
				}
				loaded = true
			}
			rp, seen := revs[r.revID]
			if !seen {
				if rp.m, rp.worker, err = dispatch.RevisionMatcher(r.revID, r.canonical, r.digest); err != nil {
					return nil, err
				}
				revs[r.revID] = rp
			}
			w = placementWait(rp, sessions, truncated)
		}
		out[r.id.String()] = w.Reason
	}
	return out, nil
}

// waitingRun is what explaining one Run needs.
type waitingRun struct {
	id, revID         uuid.UUID
	status, canonical string
	digest            []byte
	notBefore         int64
	cancel            bool
}

// early answers what the Run's own row decides; Reason "" with ok means
// the Run is queued and the live sessions decide (placementWait).
func (r waitingRun) early() (controlplane.WaitReason, bool) {
	switch {
	case r.cancel && (r.status == "created" || r.status == "queued" || r.status == "retry_wait" || r.status == "lost"):
		return controlplane.WaitReason{Reason: controlplane.WaitCancelling}, true
	case r.status == "created":
		return controlplane.WaitReason{Reason: controlplane.WaitConcurrency}, true
	case r.status == "retry_wait":
		return controlplane.WaitReason{Reason: controlplane.WaitRetryBackoff, NotBeforeMs: r.notBefore}, true
	case r.status != "queued":
		return controlplane.WaitReason{}, false
	}
	return controlplane.WaitReason{}, true
}

func (o *RunOps) waitingRuns(ctx context.Context, ids []uuid.UUID) ([]waitingRun, error) {
	rows, err := o.db.Query(ctx, `SELECT r.run_id, r.status, r.not_before_ms, r.cancel_requested_at_ms IS NOT NULL,
		e.execution_revision_id, e.canonical_spec, e.digest
		FROM ql3.runs r JOIN ql3.execution_revisions e ON e.execution_revision_id = r.execution_revision_id
		WHERE r.run_id = ANY($1::uuid[])`, ids)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (waitingRun, error) {
		var r waitingRun
		return r, row.Scan(&r.id, &r.status, &r.notBefore, &r.cancel, &r.revID, &r.canonical, &r.digest)
	})
	if err != nil {
		return nil, postgres.TranslateDriver(err)
	}
	return out, nil
}

// liveSession is a session that could take work now.
type liveSession struct {
	caps             string
	capacity, leases int
	worker           string
}

// revPlacement is a revision's placement: m (nil: none) and the worker it
// is pinned to ("" for any).
type revPlacement struct {
	m      *matcher.Matcher
	worker string
}

// liveSessions reads up to maxWaitSessions live sessions; truncated says
// there were more.
func (o *RunOps) liveSessions(ctx context.Context) ([]liveSession, bool, error) {
	rows, err := o.db.Query(ctx, `SELECT s.capabilities::text, s.capacity,
		(SELECT count(*) FROM ql3.run_leases l WHERE l.session_id = s.session_id AND l.status = 'leased'
			AND l.expires_at_ms > `+postgres.DBNowMs+`), s.worker_id::text
		FROM ql3.worker_sessions s JOIN ql3.workers w ON w.worker_id = s.worker_id
		WHERE s.status = 'online' AND s.lease_expires_at_ms > `+postgres.DBNowMs+` AND w.status = 'active'
		ORDER BY s.session_id LIMIT $1`, maxWaitSessions+1)
	if err != nil {
		return nil, false, postgres.Translate(err)
	}
	sessions, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (liveSession, error) {
		var l liveSession
		return l, r.Scan(&l.caps, &l.capacity, &l.leases, &l.worker)
	})
	if err != nil {
		return nil, false, postgres.TranslateDriver(err)
	}
	if len(sessions) > maxWaitSessions {
		return sessions[:maxWaitSessions], true, nil
	}
	return sessions, false, nil
}

// placementWait explains a queued Run whose revision places by rp (no
// matcher: every worker qualifies) by the live sessions; a session of
// another worker than the pinned one counts under "worker".
func placementWait(rp revPlacement, sessions []liveSession, truncated bool) controlplane.WaitReason {
	w := controlplane.WaitReason{LiveSessions: len(sessions), Truncated: truncated}
	m := rp.m
	for _, s := range sessions {
		if rp.worker != "" && s.worker != rp.worker {
			countMismatch(&w, "worker")
			continue
		}
		if m != nil {
			caps, err := placement.DecodeCapabilities([]byte(s.caps))
			if err != nil {
				countMismatch(&w, "capability_invalid")
				continue
			}
			if res := m.Match(caps); !res.OK {
				countMismatch(&w, res.Category)
				continue
			}
		}
		w.Eligible++
		w.FreeSlots += max(s.capacity-s.leases, 0)
	}
	switch {
	case w.LiveSessions == 0:
		w.Reason = controlplane.WaitNoLiveSession
	case w.Eligible == 0:
		w.Reason = controlplane.WaitPlacement
	case w.FreeSlots == 0:
		w.Reason = controlplane.WaitNoFreeCapacity
	default:
		w.Reason = controlplane.WaitForPull
	}
	return w
}

// countMismatch counts one live session under the first placement
// requirement it fails.
func countMismatch(w *controlplane.WaitReason, category string) {
	if w.Mismatch == nil {
		w.Mismatch = map[string]int{}
	}
	w.Mismatch[category]++
}

// Log reads (DESIGN.md §8: never held whole in memory).
const (
	// MaxLogRead bounds one range read.
	MaxLogRead = 1 << 20
	// maxLogChunk is the schema's largest chunk (run_log_chunks.data).
	maxLogChunk = 1 << 20
)

// ReadLog reads up to limit bytes of stream ("stdout" or "stderr") of the
// Run's Attempt attempt (0: the current one) from offset. An offset past
// the stored bytes of a complete stream is invalid; past the stored bytes
// of a growing one it returns no data.
func (o *RunOps) ReadLog(ctx context.Context, runRef string, attempt int, stream string, offset, limit int64) (controlplane.LogRange, error) {
	runID, err := uuid.Parse(runRef)
	if err != nil {
		return controlplane.LogRange{}, errs.NotFoundf("no run %.64q", runRef)
	}
	switch {
	case stream != "stdout" && stream != "stderr":
		return controlplane.LogRange{}, errs.Invalidf("stream", "must be stdout or stderr, got %.16q", stream)
	case offset < 0:
		return controlplane.LogRange{}, errs.Invalidf("offset", "must not be negative")
	case limit < 1 || limit > MaxLogRead:
		return controlplane.LogRange{}, errs.Invalidf("limit", "must be 1..%d bytes, got %d", MaxLogRead, limit)
	case attempt < 0 || attempt > 16:
		return controlplane.LogRange{}, errs.Invalidf("attempt", "must be 1..16, got %d", attempt)
	}
	out := controlplane.LogRange{Stream: stream, Offset: offset, NextOffset: offset}
	var attemptStatus string
	err = o.db.QueryRow(ctx, `SELECT a.attempt, a.status, coalesce(s.length_bytes, 0), coalesce(s.stored_bytes, 0),
		coalesce(s.truncated, false), coalesce(s.closed, false)
		FROM ql3.runs r JOIN ql3.attempts a ON a.run_id = r.run_id
			AND a.attempt = CASE WHEN $2::int = 0 THEN r.attempt_count ELSE $2::int END
		LEFT JOIN ql3.run_log_streams s ON s.run_id = a.run_id AND s.attempt = a.attempt AND s.stream = $3::text
		WHERE r.run_id = $1::uuid`, runID, attempt, stream).Scan(&out.Attempt, &attemptStatus, &out.Size, &out.Stored,
		&out.Truncated, &out.Complete)
	if errors.Is(err, pgx.ErrNoRows) {
		return controlplane.LogRange{}, errs.NotFoundf("no attempt %d of run %s", attempt, runID)
	}
	if err != nil {
		return controlplane.LogRange{}, postgres.Translate(err)
	}
	switch attemptStatus {
	case "succeeded", "failed", "cancelled", "timed_out", "lost":
		out.Complete = true
	}
	if offset > out.Stored {
		if out.Complete {
			return controlplane.LogRange{}, errs.Invalidf("offset", "%d is past the end of the log (%d bytes)", offset, out.Stored)
		}
		return out, nil
	}
	rows, err := o.db.Query(ctx, `SELECT offset_bytes, data FROM ql3.run_log_chunks
		WHERE run_id = $1 AND attempt = $2 AND stream = $3 AND offset_bytes > $4::bigint - $6::bigint
		  AND offset_bytes < $4::bigint + $5::bigint
		ORDER BY offset_bytes`, runID, out.Attempt, stream, offset, limit, int64(maxLogChunk))
	if err != nil {
		return controlplane.LogRange{}, postgres.Translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var at int64
		var data []byte
		if err := rows.Scan(&at, &data); err != nil {
			return controlplane.LogRange{}, postgres.TranslateDriver(err)
		}
		end := at + int64(len(data))
		if end <= out.NextOffset {
			continue
		}
		if at > out.NextOffset {
			break // a gap: what follows was not stored (yet)
		}
		from := out.NextOffset - at
		take := min(int64(len(data))-from, offset+limit-out.NextOffset)
		out.Data = append(out.Data, data[from:from+take]...)
		out.NextOffset += take
		if out.NextOffset >= offset+limit {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return controlplane.LogRange{}, postgres.TranslateDriver(err)
	}
	// Complete for the reader only once everything stored was read.
	out.Complete = out.Complete && out.NextOffset >= out.Stored
	return out, nil
}

// controlplane.WorkerSession returns the worker's newest session (ok false: none yet).
func (o *RunOps) WorkerSession(ctx context.Context, workerRef string) (controlplane.WorkerSession, bool, error) {
	var s controlplane.WorkerSession
	var caps string
	err := o.db.QueryRow(ctx, `SELECT s.session_id::text, s.generation, s.status, s.lease_expires_at_ms <= `+postgres.DBNowMs+`,
		s.capacity, (SELECT count(*) FROM ql3.run_leases l WHERE l.session_id = s.session_id AND l.status = 'leased'),
		coalesce(s.credential_id::text, ''), coalesce(s.credential_observed_at_ms, 0),
		coalesce((SELECT a.details ->> 'agentVersion' FROM ql3.audit_log a WHERE a.actor_kind = 'worker'
			AND a.actor_id = s.worker_id::text AND a.action = 'session.open' AND a.subject_id = s.session_id::text
			ORDER BY a.at_ms DESC LIMIT 1), ''),
		s.heartbeat_at_ms, s.lease_expires_at_ms, s.opened_at_ms, coalesce(s.closed_at_ms, 0), s.capabilities::text
		FROM ql3.worker_sessions s JOIN ql3.workers w ON w.worker_id = s.worker_id
		WHERE w.worker_id::text = $1 OR w.name = $1
		ORDER BY s.generation DESC LIMIT 1`, workerRef).Scan(&s.SessionID, &s.Generation, &s.Status, &s.Expired,
		&s.Capacity, &s.LiveLeases, &s.CredentialID, &s.CredentialSeenMs, &s.AgentVersion, &s.HeartbeatAtMs,
		&s.LeaseExpiresAtMs, &s.OpenedAtMs, &s.ClosedAtMs, &caps)
	if errors.Is(err, pgx.ErrNoRows) {
		return controlplane.WorkerSession{}, false, nil
	}
	if err != nil {
		return controlplane.WorkerSession{}, false, postgres.Translate(err)
	}
	s.Capabilities = json.RawMessage(caps)
	return s, true, nil
}

// DisableWorker disables a worker on the admin pool (workers are the admin
// role's): status disabled, every active credential revoked (reason
// worker_disabled) and the audit line, in one transaction. Its session can
// no longer authenticate; once the session's heartbeat lease passes, the
// sweeper handles its leases. Disabling a disabled worker changes nothing
// (changed false, no audit line).
func DisableWorker(ctx context.Context, admin postgres.DB, workerRef string) (changed bool, err error) {
	auditID, err := controlplane.NewID()
	if err != nil {
		return false, err
	}
	var found bool
	var disabled int64
	err = admin.QueryRow(ctx, `WITH n AS MATERIALIZED (SELECT `+postgres.DBNowMs+` AS ms),
	w AS MATERIALIZED (SELECT worker_id, status FROM ql3.workers WHERE worker_id::text = $1::text OR name = $1::text
		ORDER BY worker_id LIMIT 1 FOR UPDATE),
	up AS (UPDATE ql3.workers x SET status = 'disabled', disabled_at_ms = n.ms, version = x.version + 1,
		updated_at_ms = greatest(n.ms, x.updated_at_ms)
		FROM w, n WHERE x.worker_id = w.worker_id AND w.status = 'active' RETURNING x.worker_id),
	cr AS (UPDATE ql3.worker_credentials c SET status = 'revoked', revoked_at_ms = n.ms, revoke_reason = 'worker_disabled'
		FROM up, n WHERE c.worker_id = up.worker_id AND c.status = 'active' RETURNING 1),
	au AS (INSERT INTO ql3.audit_log (audit_id, at_ms, actor_kind, actor_id, action, subject_kind, subject_id, outcome,
			remote_addr, details)
		SELECT $2::uuid, n.ms, $3::text, $4::text, 'worker.disable', 'worker', up.worker_id::text, 'ok', $5::text,
			jsonb_build_object('credentialsRevoked', (SELECT count(*) FROM cr))
		FROM up, n RETURNING 1)
	SELECT EXISTS (SELECT 1 FROM w), (SELECT count(*) FROM up) + 0 * (SELECT count(*) FROM au)`,
		append([]any{workerRef}, auditArgs(ctx, auditID)...)...).Scan(&found, &disabled)
	switch {
	case err != nil:
		return false, postgres.Translate(err)
	case !found:
		return false, errs.NotFoundf("no worker %.64q", workerRef)
	}
	return disabled == 1, nil
}
