// Package renewal is heartbeat renewal (ADR 0012), on the runtime role.
// The ingress commits the session heartbeat first, then asks here, on the runtime pool, under the session's shared
// advisory lock: every listed attempt gets exactly one control, in order.
//
//	extend  the lease is held by exactly this session and generation, the
//	        session is live by database time, the lease is live; a started
//	        lease is extended to now + Lease.StartedMs (an unstarted one keeps
//	        its expiry: only the starting ACK passes the barrier)
//	cancel  as extend, and the Run has a cancel intent or the attempt's
//	        durable deadline has passed; carries the cancel grace
//	revoke  anything else: the session is not live, the lease was released,
//	        completed, expired or re-offered. Lease fields are given only
//	        for a lease this session held; an attempt it never held is not
//	        described (that would leak another worker's run).
package renewal

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/pipetx"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
)

const sqlRenew = `WITH n AS (SELECT ` + postgres.DBNowMs + ` AS ms),
live AS (
	SELECT EXISTS (SELECT 1 FROM ql3.worker_sessions s, n
		WHERE s.session_id = $1::uuid AND s.worker_id = $2::uuid AND s.generation = $3::bigint
			AND s.status <> 'offline' AND s.lease_expires_at_ms > n.ms) AS ok),
ids AS (SELECT t.id, t.ord FROM unnest($4::uuid[]) WITH ORDINALITY AS t(id, ord)),
cur AS (
	SELECT ids.ord, l.lease_id, l.run_id, l.lease_generation, l.version, l.expires_at_ms, l.status AS lstatus,
		a.status AS astatus, a.deadline_at_ms, r.cancel_requested_at_ms IS NOT NULL AS cancel
	FROM ids
	LEFT JOIN LATERAL (SELECT * FROM ql3.run_leases l
		WHERE l.attempt_id = ids.id AND l.session_id = $1::uuid AND l.worker_id = $2::uuid
			AND l.session_generation = $3::bigint
		ORDER BY l.lease_generation DESC LIMIT 1) l ON true
	LEFT JOIN ql3.attempts a ON a.attempt_id = l.attempt_id
	LEFT JOIN ql3.runs r ON r.run_id = l.run_id),
upd AS (
	UPDATE ql3.run_leases x SET expires_at_ms = greatest(x.expires_at_ms, n.ms + $5::bigint),
		version = x.version + 1, updated_at_ms = n.ms
	FROM cur, n, live
	WHERE live.ok AND x.lease_id = cur.lease_id AND x.status = 'leased' AND x.expires_at_ms > n.ms
		AND cur.astatus IN ('starting', 'running')
	RETURNING x.lease_id, x.version, x.expires_at_ms)
SELECT cur.lease_id IS NOT NULL, cur.run_id, coalesce(cur.lease_generation, 0),
	coalesce(u.version, cur.version, 0), coalesce(u.expires_at_ms, cur.expires_at_ms, 0), u.lease_id IS NOT NULL,
	coalesce(cur.lstatus, ''), coalesce(cur.astatus, ''), coalesce(cur.cancel, false),
	coalesce(cur.deadline_at_ms <= n.ms, false), live.ok, n.ms
FROM cur LEFT JOIN upd u ON u.lease_id = cur.lease_id CROSS JOIN live CROSS JOIN n
ORDER BY cur.ord`

// Renew implements controlplane.LeasePort.RenewForHeartbeat on db: a
// started lease is extended to now + startedMs; cancel carries
// cancelGraceMs.
func Renew(ctx context.Context, db postgres.Acquirer, startedMs, cancelGraceMs int64, p controlplane.Principal,
	sessionID string, generation int64, attemptIDs []string) ([]protocol.LeaseControl, error) {
	if len(attemptIDs) > protocol.MaxCapacity {
		return nil, errs.TooLargef("runningAttemptIds", "has %d entries, limit is %d", len(attemptIDs), protocol.MaxCapacity)
	}
	workerID, err := postgres.ParseID("workerId", p.WorkerID)
	if err != nil {
		return nil, err
	}
	sid, err := postgres.ParseID("sessionId", sessionID)
	if err != nil {
		return nil, err
	}
	if len(attemptIDs) == 0 {
		return []protocol.LeaseControl{}, nil
	}
	// An id that is not a UUID was never an attempt of ours: revoke it
	// undescribed, without asking the database about it.
	ids := make([]uuid.UUID, len(attemptIDs))
	for i, s := range attemptIDs {
		if id, err := uuid.Parse(s); err == nil && len(s) == 36 {
			ids[i] = id
		}
	}
	var out []protocol.LeaseControl
	// One round trip: BEGIN, the lock, the renewal and COMMIT.
	err = pipetx.Run(ctx, db, func(ctx context.Context, tx *pipetx.Tx) error {
		out = make([]protocol.LeaseControl, 0, len(attemptIDs))
		b := &pgx.Batch{}
		b.Queue(postgres.SQLLockShared, postgres.LockClassSession, postgres.LockObjectKey(sid))
		b.Queue(sqlRenew, sid, workerID, generation, ids, startedMs)
		b.Queue("COMMIT")
		br, err := tx.Begin(ctx, b)
		if err != nil {
			return postgres.Errorf(err, "postgres: begin renewal")
		}
		defer func() { _ = br.Close() }()
		if _, err := br.Exec(); err != nil {
			return postgres.Errorf(err, "postgres: session lock")
		}
		rows, err := br.Query()
		if err != nil {
			return postgres.Errorf(err, "postgres: renew leases")
		}
		i := 0
		for rows.Next() {
			var held, extended, cancel, pastDeadline, live bool
			var runID *uuid.UUID
			var leaseGen, version, expires, nowMs int64
			var lstatus, astatus string
			if err := rows.Scan(&held, &runID, &leaseGen, &version, &expires, &extended, &lstatus, &astatus,
				&cancel, &pastDeadline, &live, &nowMs); err != nil {
				return postgres.Errorf(err, "postgres: renew leases")
			}
			c := protocol.LeaseControl{V: protocol.Version, AttemptID: attemptIDs[i], Action: protocol.LeaseRevoke}
			i++
			if !held || ids[i-1] == (uuid.UUID{}) {
				out = append(out, c)
				continue
			}
			c.RunID, c.LeaseGeneration, c.LeaseVersion, c.LeaseExpiresAtMs = runID.String(), leaseGen, version, expires
			unstartedHeld := astatus == "claimed" && lstatus == "leased" && expires > nowMs
			if live && (extended || unstartedHeld) {
				c.Action = protocol.LeaseExtend
				if cancel || pastDeadline {
					c.Action, c.CancelGraceMs = protocol.LeaseCancel, cancelGraceMs
				}
			}
			out = append(out, c)
		}
		if err := rows.Err(); err != nil {
			return postgres.Errorf(err, "postgres: renew leases")
		}
		rows.Close()
		if i != len(attemptIDs) {
			return errs.E(errs.Internal, "", "renewal answered %d of %d attempts", i, len(attemptIDs))
		}
		if _, err := br.Exec(); err != nil {
			return postgres.Errorf(err, "postgres: commit renewal")
		}
		tx.MarkCommitted()
		return br.Close()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
