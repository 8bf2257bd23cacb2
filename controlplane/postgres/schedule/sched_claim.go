package schedule

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
)

// Cluster scheduler storage (issue 5, ADR 0006): the row-lease claim, the
// atomic admission and the startup-recovery source. Each operation is one
// hand-written statement; the coordinator (controlplane/coordinator) owns the
// loop and the decisions.
//
// Time: every fence time comes from clock_timestamp() inside the statement
// that writes or checks it. No caller supplies a clock.

// claimSchedulesSQL is the claim: one statement, committed on its own.
//
// It selects schedules of active projects whose trigger is at the schedule's
// revision and enabled, with an enabled task, that are due (cursor at or
// before the database time) or uninitialised (cursor NULL) and have no live
// claim (none, or expired by database time), in the coordinator's order,
// FOR UPDATE OF the schedule SKIP LOCKED (rows another replica is claiming
// or admitting right now are passed over, never waited for), LIMIT the
// budget. It writes owner, a fresh token, claim_version + 1, the expiry
// (database time + lease), bumps state_version and stamps updated_at_ms with
// the claim-acquired time — except on a takeover (the row still carries an
// expired claim: its holder died or stalled before admitting), which keeps
// updated_at_ms, the first claim's observation, so the decision measures
// lateness from it (ADR 0002 rule 5). It returns the claim-acquired time
// (greatest(updated_at_ms, database time)) beside it. No cron math, no id generation besides the token
// and no worker I/O happen under the row locks.
//
// Only rows marked active (migration 0004: publication clears it for
// disabled triggers and tasks and archived projects) are in the due index;
// the eligibility subquery stays authoritative.
//
// The order "next_fire_at_ms NULLS FIRST, project_id, trigger_id" is written
// as coalesce(next_fire_at_ms, <bigint minimum>), project_id, trigger_id —
// the same order — so that "due or uninitialised" is a range of
// trigger_schedules_due_idx (migration 0003, partial on active since 0004) and the scan stops at the
// budget. The database time is an InitPlan ((SELECT ms FROM db_now)), read
// once and usable as an index bound; db_now is MATERIALIZED so
// clock_timestamp() is read once per statement. The UPDATE finds the
// locked rows through an array InitPlan (= ANY, primary-key lookups) rather
// than a join the planner may hash against the whole table. Eligibility (project,
// trigger head, enabled flags) is a per-row subquery, so the planner cannot
// turn it into a join that sorts the whole table.
const claimSchedulesSQL = `WITH db_now AS MATERIALIZED (
	SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms
), candidate AS (
	SELECT s.trigger_id
	FROM ql3.trigger_schedules s
	WHERE coalesce(s.next_fire_at_ms, -9223372036854775808) <= (SELECT ms FROM db_now)
	  AND s.active
	  AND (s.claim_token IS NULL OR s.claim_expires_at_ms <= (SELECT ms FROM db_now))
	  AND ` + scheduleEligibleSQL + `
	ORDER BY coalesce(s.next_fire_at_ms, -9223372036854775808), s.project_id, s.trigger_id
	LIMIT $2::int
	FOR UPDATE OF s SKIP LOCKED
), claimed AS (
	UPDATE ql3.trigger_schedules s SET
		claim_owner = $1::text,
		claim_token = gen_random_uuid(),
		claim_version = s.claim_version + 1,
		claim_expires_at_ms = n.ms + $3::bigint,
		state_version = s.state_version + 1,
		updated_at_ms = CASE WHEN s.claim_token IS NULL THEN greatest(s.updated_at_ms, n.ms) ELSE s.updated_at_ms END
	FROM db_now n
	WHERE s.trigger_id = ANY (ARRAY(SELECT trigger_id FROM candidate))
	RETURNING s.ctid, s.trigger_id, s.project_id, s.trigger_revision, s.next_fire_at_ms, s.last_scheduled_at_ms,
		s.state_version, s.claim_owner, s.claim_token, s.claim_version, s.claim_expires_at_ms, s.updated_at_ms,
		greatest(s.updated_at_ms, n.ms) AS acquired_at_ms
)
SELECT c.ctid, c.trigger_id, c.project_id, r.task_id, c.trigger_revision, r.task_revision, r.execution_revision_id,
	r.execution_digest, r.expression, r.time_zone, r.misfire_policy, r.misfire_grace_ms, r.activated_at_ms,
	c.next_fire_at_ms, c.last_scheduled_at_ms, c.state_version,
	c.claim_owner, c.claim_token, c.claim_version, c.claim_expires_at_ms, c.updated_at_ms, c.acquired_at_ms
FROM claimed c
JOIN ql3.trigger_revisions r ON r.trigger_id = c.trigger_id AND r.revision = c.trigger_revision
ORDER BY c.next_fire_at_ms NULLS FIRST, c.project_id, c.trigger_id`

// scheduleEligibleSQL is true for a schedule row s whose project is active,
// whose trigger is at s's revision with that revision enabled, and whose
// task is enabled.
const scheduleEligibleSQL = `coalesce((SELECT p.status = 'active' AND t.head_revision = s.trigger_revision AND r.enabled AND k.enabled
		FROM ql3.triggers t
		JOIN ql3.trigger_revisions r ON r.trigger_id = t.trigger_id AND r.revision = s.trigger_revision
		JOIN ql3.tasks k ON k.task_id = r.task_id
		JOIN ql3.projects p ON p.project_id = s.project_id
		WHERE t.trigger_id = s.trigger_id), false)`

// ClaimSchedules runs the claim statement in its own READ COMMITTED
// transaction (BEGIN, the plan settings, the claim and COMMIT in one round
// trip: the claim is durable before any decision is made) and returns what
// it granted, in claim order. An error without a SQLSTATE leaves it unknown
// whether the claim committed; such claims simply run out.
func ClaimSchedules(ctx context.Context, db postgres.Acquirer, req controlplane.ClaimRequest) ([]controlplane.ClaimedSchedule, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	conn, err := db.Acquire(ctx)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	defer conn.Release()
	var out []controlplane.ClaimedSchedule
	if _, err := postgres.RunPipeline(ctx, conn, claimTx(req, &out)); err != nil {
		return nil, err
	}
	return out, nil
}

// claimTx is the claim as one pipelined transaction; its rows land in *out.
func claimTx(req controlplane.ClaimRequest, out *[]controlplane.ClaimedSchedule) postgres.PipedTx {
	return postgres.PipedTx{Begin: "BEGIN ISOLATION LEVEL READ COMMITTED", SQL: claimSchedulesSQL,
		Args: []any{req.Owner, req.Budget, req.Lease.Milliseconds()},
		Read: func(rows pgx.Rows) (err error) {
			*out, err = pgx.AppendRows((*out)[:0], rows, scanClaimed)
			return err
		}}
}

func scanClaimed(row pgx.CollectableRow) (controlplane.ClaimedSchedule, error) {
	var c controlplane.ClaimedSchedule
	var digest []byte
	var misfire string
	var next, last *int64
	var token uuid.UUID
	var tid pgtype.TID
	if err := row.Scan(&tid, &c.TriggerID, &c.ProjectID, &c.TaskID, &c.TriggerRevision, &c.TaskRevision,
		&c.ExecutionRevisionID, &digest, &c.Expression, &c.TimeZone, &misfire, &c.GraceMs, &c.ActivatedAtMs,
		&next, &last, &c.StateVersion, &c.Fence.Owner, &token, &c.Fence.Version, &c.Fence.ExpiresAtMs,
		&c.ObservedAtMs, &c.AcquiredAtMs); err != nil {
		return c, err
	}
	c.TupleID = controlplane.TupleID{Block: tid.BlockNumber, Offset: tid.OffsetNumber, Valid: tid.Valid}
	if len(digest) != len(c.ExecutionDigest) {
		return c, errs.E(errs.Internal, "", "execution digest of trigger %s has %d bytes", c.TriggerID, len(digest))
	}
	copy(c.ExecutionDigest[:], digest)
	c.Misfire = schedule.MisfirePolicy(misfire)
	if next != nil {
		c.Initialized, c.NextFireAtMs = true, *next
	}
	if last != nil {
		c.LastScheduledAtMs = *last
	}
	c.Fence.Token = token
	return c, nil
}

// nextDueSQL finds the earliest moment a claim round could find work, as a
// delay from the database time: the first claimable schedule in claim order
// (same eligibility as the claim), or the earliest expiry of a live claim on
// a due row, whichever comes first. A live claim's holder normally admits
// the row long before it expires; if the holder died or stalled, the row
// becomes claimable exactly at its expiry, and waking then (instead of up to
// one cadence later) keeps the takeover prompt. Claimed rows are due or
// uninitialised, so they sit in the due prefix of trigger_schedules_due_idx;
// only the first heldScanRows entries of that prefix are looked at, which
// bounds the probe under a backlog (when rounds run back to back anyway).
// NULL when there is neither; a negative delay means "due now".
const nextDueSQL = `WITH db_now AS MATERIALIZED (
	SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms
), claimable AS (
	SELECT coalesce(s.next_fire_at_ms, (SELECT ms FROM db_now)) AS at
	FROM ql3.trigger_schedules s
	WHERE s.active
	  AND (s.claim_token IS NULL OR s.claim_expires_at_ms <= (SELECT ms FROM db_now))
	  AND ` + scheduleEligibleSQL + `
	ORDER BY coalesce(s.next_fire_at_ms, -9223372036854775808), s.project_id, s.trigger_id
	LIMIT 1
), held AS (
	SELECT min(x.claim_expires_at_ms) AS at
	FROM (SELECT s.claim_token, s.claim_expires_at_ms
		FROM ql3.trigger_schedules s
		WHERE coalesce(s.next_fire_at_ms, -9223372036854775808) <= (SELECT ms FROM db_now) AND s.active
		ORDER BY coalesce(s.next_fire_at_ms, -9223372036854775808), s.project_id, s.trigger_id
		LIMIT ` + heldScanRows + `) x
	WHERE x.claim_token IS NOT NULL AND x.claim_expires_at_ms > (SELECT ms FROM db_now)
)
SELECT least((SELECT at FROM claimable), (SELECT at FROM held)) - (SELECT ms FROM db_now)`

// heldScanRows bounds how much of the due prefix NextDue reads for live
// claims (budget × replicas rows are claimed at a time).
const heldScanRows = "256"

// NextDue returns how long, by database time, until a claim round could
// find work: the earliest claimable schedule is due, or the earliest live
// claim on a due row expires. ok is false when there is neither.
func NextDue(ctx context.Context, db postgres.DB) (delay time.Duration, ok bool, err error) {
	var ms *int64
	if err = db.QueryRow(ctx, nextDueSQL).Scan(&ms); err != nil {
		return 0, false, postgres.Translate(err)
	}
	if ms == nil {
		return 0, false, nil
	}
	return time.Duration(*ms) * time.Millisecond, true, nil
}

// ScheduleNotifyChannel is the LISTEN/NOTIFY channel migration 0003's
// trigger notifies when publication resets a schedule.
const ScheduleNotifyChannel = "ql3_schedules"
