package notifystore

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/notifykit"
)

// Relay is controlplane.ScriptNotify on a ql3_runtime pool (the role the
// lease protocol and the outbox already use): a remote script's
// sendNotify, relayed by its worker under the attempt's lease.
type Relay struct {
	db       *pgxpool.Pool
	pol      notifykit.Policy
	calls    notifykit.ScriptCalls
	now      func() time.Time
	onQueued func()
}

var _ controlplane.ScriptNotify = (*Relay)(nil)

// NewRelay returns the port; onQueued (may be nil) wakes this replica's
// deliverer after rows were added; now nil is time.Now.
func NewRelay(runtime *pgxpool.Pool, pol notifykit.Policy, now func() time.Time, onQueued func()) *Relay {
	if now == nil {
		now = time.Now
	}
	return &Relay{db: runtime, pol: pol.WithDefaults(), now: now, onQueued: onQueued}
}

// sqlRelayLease reads the lease (share-locked, so the attempt cannot end
// while its message is queued), the Run's project and task, and the
// execution revision's required labels, in database time.
const sqlRelayLease = `SELECT l.worker_id::text, l.session_id::text, l.session_generation, l.offer_id::text, l.token_digest,
	l.lease_generation, l.version, l.status, l.expires_at_ms, l.run_id::text, r.project_id::text, r.task_id::text,
	coalesce((SELECT array_agg(x.key || '=' || x.value ORDER BY x.key) FROM jsonb_each_text(e.placement->'required'->'labels') x), '{}'),
	` + nowMs + `
FROM ql3.run_leases l
JOIN ql3.runs r ON r.run_id = l.run_id
JOIN ql3.execution_revisions e ON e.execution_revision_id = r.execution_revision_id
WHERE l.attempt_id = $1::uuid AND l.lease_generation = $2::bigint
FOR SHARE OF l`

// LeaseNotify implements controlplane.ScriptNotify. Each row's key names
// the attempt and the relay's call number, so a resent call is queued once
// and a retry attempt of the same Run does not collide with the first.
func (r *Relay) LeaseNotify(ctx context.Context, p controlplane.Principal, q protocol.NotifySendRequest) (int, error) {
	if err := q.Validate(); err != nil {
		return 0, err
	}
	m, err := q.DecodeMessage()
	if err != nil {
		return 0, err
	}
	queued := 0
	err = postgres.InTx(ctx, r.db, postgres.TxOptions{}, func(ctx context.Context, tx pgx.Tx) error {
		var obs fence.LeaseFence
		var token []byte
		var status, project, task string
		var labels []string
		var dbNow int64
		err := tx.QueryRow(ctx, sqlRelayLease, q.AttemptID, q.LeaseGeneration).Scan(&obs.WorkerID, &obs.SessionID,
			&obs.SessionGeneration, &obs.OfferID, &token, &obs.LeaseGeneration, &obs.LeaseVersion, &status, &obs.ExpiresAtMs,
			&obs.RunID, &project, &task, &labels, &dbNow)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.E(errs.Conflict, "attemptId", "no such lease")
		}
		if err != nil {
			return err
		}
		obs.AttemptID = q.AttemptID
		if len(token) == sha256.Size {
			copy(obs.TokenDigest[:], token)
		}
		if err := q.Fence(p.WorkerID, obs.LeaseVersion, obs.ExpiresAtMs).Holds(obs, 0); err != nil {
			return err
		}
		if status != "leased" || obs.ExpiresAtMs <= dbNow {
			return errs.E(errs.Conflict, "leaseGeneration", "the attempt is over: its lease is no longer live")
		}
		now := r.now().UnixMilli()
		if _, err := r.calls.Charge(obs.RunID, now); err != nil {
			return errs.E(errs.Unavailable, controlplane.ErrNotifyRateLimited, "%s", err.Error())
		}
		rules, err := listRules(ctx, tx, `SELECT `+ruleColumns+` FROM ql3.notify_rules WHERE project_id = $1::uuid AND enabled ORDER BY name LIMIT 256`, project)
		if err != nil {
			return err
		}
		rows := r.pol.ScriptRows(rules, obs.RunID, task, labels, q.Seq, m, now)
		for i := range rows {
			rows[i].ProjectID = project
			rows[i].Key = cn.ScriptIdempotencyKey(rows[i].RuleID, rows[i].ChannelID, q.AttemptID, q.Seq)
			if _, err := insertRow(ctx, tx, rows[i]); err != nil {
				return err
			}
		}
		queued = len(rows)
		return nil
	})
	var coded *errs.Error
	if errors.As(err, &coded) { // a refusal from inside the transaction
		return 0, err
	}
	if err != nil {
		return 0, postgres.Translate(err)
	}
	if queued > 0 && r.onQueued != nil {
		r.onQueued()
	}
	return queued, nil
}
