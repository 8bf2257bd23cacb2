package publication

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
)

// MaxCredentialGraceMs bounds how long a rotated-out credential stays valid.
const MaxCredentialGraceMs = 7 * 24 * 3600 * 1000

const workerColumns = `worker_id::text, name, coalesce(tls_identity, ''), status, version, created_at_ms, updated_at_ms, coalesce(disabled_at_ms, 0)`

func scanWorker(row pgx.Row) (controlplane.Worker, error) {
	var w controlplane.Worker
	err := row.Scan(&w.ID, &w.Name, &w.TLSIdentity, &w.Status, &w.Version, &w.CreatedAtMs, &w.UpdatedAtMs, &w.DisabledAtMs)
	return w, err
}

const credentialColumns = `credential_id::text, worker_id::text, status, created_at_ms, coalesce(expires_at_ms, 0), coalesce(revoked_at_ms, 0),
	coalesce(superseded_by::text, ''), coalesce(revoke_after_ms, 0), coalesce(revoke_reason, '')`

func scanCredential(row pgx.Row) (controlplane.WorkerCredential, error) {
	var c controlplane.WorkerCredential
	err := row.Scan(&c.ID, &c.WorkerID, &c.Status, &c.CreatedAtMs, &c.ExpiresAtMs, &c.RevokedAtMs,
		&c.SupersededBy, &c.RevokeAfterMs, &c.RevokeReason)
	return c, err
}

// RegisterWorker creates an active worker. Names and TLS identities are
// unique.
func (p *Publisher) RegisterWorker(ctx context.Context, in controlplane.WorkerInput) (controlplane.Worker, error) {
	if err := checkPubName("name", &in.Name); err != nil {
		return controlplane.Worker{}, err
	}
	if err := checkTLSIdentity(in.TLSIdentity); err != nil {
		return controlplane.Worker{}, err
	}
	var out controlplane.Worker
	err := postgres.InTx(ctx, p.db, postgres.TxOptions{TxOptions: postgres.Serializable.TxOptions, MaxAttempts: p.maxAttempts}, func(ctx context.Context, tx pgx.Tx) error {
		var nameTaken, identityTaken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ql3.workers WHERE name = $1),
			EXISTS (SELECT 1 FROM ql3.workers WHERE tls_identity = $2)`, in.Name, in.TLSIdentity).Scan(&nameTaken, &identityTaken); err != nil {
			return err
		}
		switch {
		case nameTaken:
			return errs.E(errs.Conflict, "name", "a worker named %q already exists", in.Name)
		case identityTaken:
			return errs.E(errs.Conflict, "tlsIdentity", "another worker already has this TLS identity")
		}
		id, err := controlplane.NewID()
		if err != nil {
			return err
		}
		var identity any
		if in.TLSIdentity != "" {
			identity = in.TLSIdentity
		}
		out, err = scanWorker(tx.QueryRow(ctx, `INSERT INTO ql3.workers (worker_id, name, tls_identity, status, created_at_ms, updated_at_ms)
			VALUES ($1, $2, $3, 'active', `+dbNowMs+`, `+dbNowMs+`) RETURNING `+workerColumns, id, in.Name, identity))
		if err != nil {
			return err
		}
		return InsertAudit(ctx, tx, AuditWorkerRegister, "worker", out.ID, map[string]any{"name": out.Name})
	})
	return out, err
}

// GetWorker returns a worker by id or name.
func (p *Publisher) GetWorker(ctx context.Context, ref string) (controlplane.Worker, error) {
	var row pgx.Row
	if id, err := uuid.Parse(ref); err == nil && len(ref) == 36 {
		row = p.db.QueryRow(ctx, `SELECT `+workerColumns+` FROM ql3.workers WHERE worker_id = $1 OR name = $2`, id, ref)
	} else {
		row = p.db.QueryRow(ctx, `SELECT `+workerColumns+` FROM ql3.workers WHERE name = $1`, ref)
	}
	w, err := scanWorker(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return controlplane.Worker{}, errs.NotFoundf("no worker with id or name %.130q", ref)
	}
	return w, pubReadErr(err)
}

// ListWorkers returns workers in id order.
func (p *Publisher) ListWorkers(ctx context.Context, page controlplane.ListRequest) (controlplane.ListPage[controlplane.Worker], error) {
	limit, after, err := normalizeList(page)
	if err != nil {
		return controlplane.ListPage[controlplane.Worker]{}, err
	}
	rows, err := p.db.Query(ctx, `SELECT `+workerColumns+` FROM ql3.workers
		WHERE ($1::uuid IS NULL OR worker_id > $1::uuid) ORDER BY worker_id LIMIT $2`, after, limit+1)
	if err != nil {
		return controlplane.ListPage[controlplane.Worker]{}, pubReadErr(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.Worker, error) { return scanWorker(r) })
	if err != nil {
		return controlplane.ListPage[controlplane.Worker]{}, pubReadErr(err)
	}
	return listPageOf(items, limit, func(x controlplane.Worker) string { return x.ID }), nil
}

// IssueWorkerCredential adds an active credential to an active worker and
// returns it with its text, which exists nowhere else: show it once.
func (p *Publisher) IssueWorkerCredential(ctx context.Context, workerID string) (controlplane.WorkerCredential, string, error) {
	return p.issueCredential(ctx, workerID, -1)
}

// DefaultCredentialGraceMs is how long a rotated-out credential stays valid
// at most when the worker never presents its successor (24 h).
const DefaultCredentialGraceMs = 24 * 3600 * 1000

// RotateWorkerCredentials issues credential B and supersedes every other
// active credential of the worker (observe-then-revoke, ADR 0010): each
// stays valid until a session of the worker presents B — then the
// ingress refuses it at once and ReconcileCredentials marks it revoked —
// or until graceMs from now, whichever comes first. graceMs is only that
// upper bound (nil: DefaultCredentialGraceMs). An explicit 0 revokes the
// others at once, for a credential known to be compromised; it cuts off a
// running worker until it has B.
func (p *Publisher) RotateWorkerCredentials(ctx context.Context, workerID string, graceMs *int64) (controlplane.WorkerCredential, string, error) {
	grace := int64(DefaultCredentialGraceMs)
	if graceMs != nil {
		grace = *graceMs
	}
	if grace < 0 || grace > MaxCredentialGraceMs {
		return controlplane.WorkerCredential{}, "", errs.Invalidf("graceMs", "must be 0..%d, got %d", MaxCredentialGraceMs, grace)
	}
	return p.issueCredential(ctx, workerID, grace)
}

// issueCredential issues one credential; graceMs < 0 leaves the others
// alone, 0 revokes them, > 0 supersedes them with that upper bound.
func (p *Publisher) issueCredential(ctx context.Context, workerRef string, graceMs int64) (controlplane.WorkerCredential, string, error) {
	wid, err := parsePubID("worker", workerRef)
	if err != nil {
		return controlplane.WorkerCredential{}, "", errs.NotFoundf("no worker %.64q", workerRef)
	}
	credID, err := controlplane.NewID()
	if err != nil {
		return controlplane.WorkerCredential{}, "", err
	}
	text, digest, err := postgres.NewWorkerCredential(credID)
	if err != nil {
		return controlplane.WorkerCredential{}, "", err
	}
	var out controlplane.WorkerCredential
	err = postgres.InTx(ctx, p.db, postgres.TxOptions{TxOptions: postgres.Serializable.TxOptions, MaxAttempts: p.maxAttempts}, func(ctx context.Context, tx pgx.Tx) error {
		var status string
		err := tx.QueryRow(ctx, `SELECT status FROM ql3.workers WHERE worker_id = $1 FOR UPDATE`, wid).Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFoundf("no worker %s", wid)
		}
		if err != nil {
			return err
		}
		if status != "active" {
			return errs.Conflictf("worker %s is disabled", wid)
		}
		out, err = scanCredential(tx.QueryRow(ctx, `INSERT INTO ql3.worker_credentials (credential_id, worker_id, secret_digest, status, created_at_ms)
			VALUES ($1, $2, $3, 'active', `+dbNowMs+`) RETURNING `+credentialColumns, credID, wid, digest[:]))
		if err != nil {
			return err
		}
		switch {
		case graceMs == 0:
			_, err = tx.Exec(ctx, `UPDATE ql3.worker_credentials SET status = 'revoked', revoked_at_ms = `+dbNowMs+`, revoke_reason = 'admin'
				WHERE worker_id = $1::uuid AND status = 'active' AND credential_id <> $2::uuid`, wid, credID)
		case graceMs > 0:
			// A credential already superseded keeps its earlier deadline.
			_, err = tx.Exec(ctx, `WITH now AS MATERIALIZED (SELECT `+dbNowMs+` AS ms)
				UPDATE ql3.worker_credentials c
				SET superseded_by = $2::uuid, superseded_at_ms = now.ms,
				    revoke_after_ms = least(coalesce(c.revoke_after_ms, now.ms + $3::bigint), now.ms + $3::bigint)
				FROM now
				WHERE c.worker_id = $1::uuid AND c.status = 'active' AND c.credential_id <> $2::uuid`, wid, credID, graceMs)
		}
		if err != nil {
			return err
		}
		if graceMs < 0 {
			return InsertAudit(ctx, tx, AuditCredentialIssue, "worker_credential", out.ID, map[string]any{"workerId": out.WorkerID})
		}
		return InsertAudit(ctx, tx, AuditCredentialRotate, "worker_credential", out.ID, map[string]any{"workerId": out.WorkerID, "graceMs": graceMs})
	})
	if err != nil {
		return controlplane.WorkerCredential{}, "", err
	}
	return out, text, nil
}

// MaxReconcilePage bounds one ReconcileCredentials pass.
const MaxReconcilePage = 256

// ReconcileCredentials revokes superseded credentials whose successor a
// session of the worker has presented (reason superseded) or whose upper
// bound passed (grace_elapsed), at most MaxReconcilePage per call, each
// with an audit line, in one transaction. It runs on the admin pool (the
// ingress role cannot update credentials); replicas may run it at once
// (SKIP LOCKED). It returns how many it revoked.
func (p *Publisher) ReconcileCredentials(ctx context.Context) (int, error) {
	n := 0
	err := postgres.InTx(ctx, p.db, postgres.TxOptions{TxOptions: pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, MaxAttempts: p.maxAttempts}, func(ctx context.Context, tx pgx.Tx) error {
		n = 0
		rows, err := tx.Query(ctx, `WITH now AS MATERIALIZED (SELECT `+dbNowMs+` AS ms)
			SELECT c.credential_id, c.worker_id,
			       CASE WHEN EXISTS (SELECT 1 FROM ql3.worker_sessions s WHERE s.credential_id = c.superseded_by
			                         AND s.credential_observed_at_ms >= c.superseded_at_ms)
			            THEN 'superseded' ELSE 'grace_elapsed' END
			FROM ql3.worker_credentials c, now
			WHERE c.status = 'active' AND c.superseded_by IS NOT NULL
			  AND (c.revoke_after_ms <= now.ms OR EXISTS (SELECT 1 FROM ql3.worker_sessions s
			        WHERE s.credential_id = c.superseded_by AND s.credential_observed_at_ms >= c.superseded_at_ms))
			ORDER BY c.revoke_after_ms, c.credential_id
			LIMIT $1::integer
			FOR UPDATE OF c SKIP LOCKED`, MaxReconcilePage)
		if err != nil {
			return err
		}
		type due struct {
			cred, worker uuid.UUID
			reason       string
		}
		list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (due, error) {
			var d due
			return d, r.Scan(&d.cred, &d.worker, &d.reason)
		})
		if err != nil {
			return err
		}
		for _, d := range list {
			auditID, err := controlplane.NewID()
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `WITH now AS MATERIALIZED (SELECT `+dbNowMs+` AS ms),
				upd AS (UPDATE ql3.worker_credentials c SET status = 'revoked', revoked_at_ms = now.ms, revoke_reason = $2::text
				        FROM now WHERE c.credential_id = $1::uuid AND c.status = 'active' RETURNING c.credential_id)
				INSERT INTO ql3.audit_log (audit_id, at_ms, actor_kind, action, subject_kind, subject_id, outcome, details)
				SELECT $3::uuid, now.ms, 'system', 'credential.revoke', 'worker_credential', $1::uuid::text, 'ok',
				       jsonb_build_object('reason', $2::text, 'workerId', $4::uuid::text)
				FROM upd, now`, d.cred, d.reason, auditID, d.worker); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// RevokeWorkerCredential revokes one credential of a worker. Revoking a
// revoked credential is a no-op.
func (p *Publisher) RevokeWorkerCredential(ctx context.Context, workerRef, credentialRef string) (controlplane.WorkerCredential, error) {
	wid, err := parsePubID("worker", workerRef)
	if err != nil {
		return controlplane.WorkerCredential{}, errs.NotFoundf("no worker %.64q", workerRef)
	}
	cid, err := parsePubID("credential", credentialRef)
	if err != nil {
		return controlplane.WorkerCredential{}, errs.NotFoundf("no credential %.64q", credentialRef)
	}
	var out controlplane.WorkerCredential
	err = postgres.InTx(ctx, p.db, postgres.TxOptions{TxOptions: postgres.Serializable.TxOptions, MaxAttempts: p.maxAttempts}, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		out, err = scanCredential(tx.QueryRow(ctx, `UPDATE ql3.worker_credentials
			SET status = 'revoked', revoked_at_ms = coalesce(revoked_at_ms, `+dbNowMs+`), revoke_reason = coalesce(revoke_reason, 'admin')
			WHERE credential_id = $1 AND worker_id = $2 RETURNING `+credentialColumns, cid, wid))
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFoundf("worker %s has no credential %s", wid, cid)
		}
		if err != nil {
			return err
		}
		return InsertAudit(ctx, tx, AuditCredentialRevoke, "worker_credential", out.ID, map[string]any{"workerId": out.WorkerID, "reason": out.RevokeReason})
	})
	return out, err
}

// ListWorkerCredentials returns a worker's credentials, newest first
// (digests are never read back).
func (p *Publisher) ListWorkerCredentials(ctx context.Context, workerRef string) ([]controlplane.WorkerCredential, error) {
	w, err := p.GetWorker(ctx, workerRef)
	if err != nil {
		return nil, err
	}
	rows, err := p.db.Query(ctx, `SELECT `+credentialColumns+` FROM ql3.worker_credentials
		WHERE worker_id = $1 ORDER BY created_at_ms DESC, credential_id DESC LIMIT $2`, w.ID, controlplane.MaxListLimit)
	if err != nil {
		return nil, pubReadErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.WorkerCredential, error) { return scanCredential(r) })
	if out == nil {
		out = []controlplane.WorkerCredential{}
	}
	return out, pubReadErr(err)
}

// checkTLSIdentity validates an optional certificate identity: at most 256
// bytes of printable ASCII.
func checkTLSIdentity(s string) error {
	if len(s) > 256 {
		return errs.Invalidf("tlsIdentity", "must be at most 256 bytes, got %d", len(s))
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return errs.Invalidf("tlsIdentity", "must be printable ASCII without spaces")
		}
	}
	return nil
}
