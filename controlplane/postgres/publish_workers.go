package postgres

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/core/errs"
)

// WorkerRecord is a registered worker.
type WorkerRecord struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	TLSIdentity  string `json:"tlsIdentity,omitempty"`
	Status       string `json:"status"`
	Version      int64  `json:"version"`
	CreatedAtMs  int64  `json:"createdAtMs"`
	UpdatedAtMs  int64  `json:"updatedAtMs"`
	DisabledAtMs int64  `json:"disabledAtMs,omitempty"`
}

// WorkerInput registers a worker. TLSIdentity is the certificate identity
// (e.g. its subject common name or URI SAN) the ingress binds to it.
type WorkerInput struct {
	Name        string
	TLSIdentity string
}

// WorkerCredential describes a credential; the secret itself is returned
// once, by IssueWorkerCredential and RotateWorkerCredentials, and never
// stored.
type WorkerCredential struct {
	ID          string `json:"id"`
	WorkerID    string `json:"workerId"`
	Status      string `json:"status"`
	CreatedAtMs int64  `json:"createdAtMs"`
	ExpiresAtMs int64  `json:"expiresAtMs,omitempty"`
	RevokedAtMs int64  `json:"revokedAtMs,omitempty"`
}

// MaxCredentialGraceMs bounds how long a rotated-out credential stays valid.
const MaxCredentialGraceMs = 7 * 24 * 3600 * 1000

const workerColumns = `worker_id::text, name, coalesce(tls_identity, ''), status, version, created_at_ms, updated_at_ms, coalesce(disabled_at_ms, 0)`

func scanWorker(row pgx.Row) (WorkerRecord, error) {
	var w WorkerRecord
	err := row.Scan(&w.ID, &w.Name, &w.TLSIdentity, &w.Status, &w.Version, &w.CreatedAtMs, &w.UpdatedAtMs, &w.DisabledAtMs)
	return w, err
}

const credentialColumns = `credential_id::text, worker_id::text, status, created_at_ms, coalesce(expires_at_ms, 0), coalesce(revoked_at_ms, 0)`

func scanCredential(row pgx.Row) (WorkerCredential, error) {
	var c WorkerCredential
	err := row.Scan(&c.ID, &c.WorkerID, &c.Status, &c.CreatedAtMs, &c.ExpiresAtMs, &c.RevokedAtMs)
	return c, err
}

// RegisterWorker creates an active worker. Names and TLS identities are
// unique.
func (p *Publisher) RegisterWorker(ctx context.Context, in WorkerInput) (WorkerRecord, error) {
	if err := checkPubName("name", in.Name); err != nil {
		return WorkerRecord{}, err
	}
	if err := checkTLSIdentity(in.TLSIdentity); err != nil {
		return WorkerRecord{}, err
	}
	var out WorkerRecord
	err := InTx(ctx, p.db, TxOptions{TxOptions: Serializable.TxOptions, MaxAttempts: p.maxAttempts}, func(ctx context.Context, tx pgx.Tx) error {
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
		id, err := newPubID()
		if err != nil {
			return err
		}
		var identity any
		if in.TLSIdentity != "" {
			identity = in.TLSIdentity
		}
		out, err = scanWorker(tx.QueryRow(ctx, `INSERT INTO ql3.workers (worker_id, name, tls_identity, status, created_at_ms, updated_at_ms)
			VALUES ($1, $2, $3, 'active', `+dbNowMs+`, `+dbNowMs+`) RETURNING `+workerColumns, id, in.Name, identity))
		return err
	})
	return out, err
}

// GetWorker returns a worker by id or name.
func (p *Publisher) GetWorker(ctx context.Context, ref string) (WorkerRecord, error) {
	var row pgx.Row
	if id, err := uuid.Parse(ref); err == nil && len(ref) == 36 {
		row = p.db.QueryRow(ctx, `SELECT `+workerColumns+` FROM ql3.workers WHERE worker_id = $1 OR name = $2`, id, ref)
	} else {
		row = p.db.QueryRow(ctx, `SELECT `+workerColumns+` FROM ql3.workers WHERE name = $1`, ref)
	}
	w, err := scanWorker(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return WorkerRecord{}, errs.NotFoundf("no worker with id or name %.130q", ref)
	}
	return w, pubReadErr(err)
}

// ListWorkers returns workers in id order.
func (p *Publisher) ListWorkers(ctx context.Context, page ListRequest) (ListPage[WorkerRecord], error) {
	limit, after, err := page.normalize()
	if err != nil {
		return ListPage[WorkerRecord]{}, err
	}
	rows, err := p.db.Query(ctx, `SELECT `+workerColumns+` FROM ql3.workers
		WHERE ($1::uuid IS NULL OR worker_id > $1::uuid) ORDER BY worker_id LIMIT $2`, after, limit+1)
	if err != nil {
		return ListPage[WorkerRecord]{}, pubReadErr(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (WorkerRecord, error) { return scanWorker(r) })
	if err != nil {
		return ListPage[WorkerRecord]{}, pubReadErr(err)
	}
	return listPageOf(items, limit, func(x WorkerRecord) string { return x.ID }), nil
}

// IssueWorkerCredential adds an active credential to an active worker and
// returns it with its text, which exists nowhere else: show it once.
func (p *Publisher) IssueWorkerCredential(ctx context.Context, workerID string) (WorkerCredential, string, error) {
	return p.issueCredential(ctx, workerID, -1)
}

// RotateWorkerCredentials issues a new credential and retires every other
// active one of the worker: revoked at once when graceMs is 0, otherwise
// expiring graceMs from now (so a fleet can pick up the new file first).
func (p *Publisher) RotateWorkerCredentials(ctx context.Context, workerID string, graceMs int64) (WorkerCredential, string, error) {
	if graceMs < 0 || graceMs > MaxCredentialGraceMs {
		return WorkerCredential{}, "", errs.Invalidf("graceMs", "must be 0..%d, got %d", MaxCredentialGraceMs, graceMs)
	}
	return p.issueCredential(ctx, workerID, graceMs)
}

// issueCredential issues one credential; graceMs < 0 leaves the others alone.
func (p *Publisher) issueCredential(ctx context.Context, workerRef string, graceMs int64) (WorkerCredential, string, error) {
	wid, err := parsePubID("worker", workerRef)
	if err != nil {
		return WorkerCredential{}, "", errs.NotFoundf("no worker %.64q", workerRef)
	}
	credID, err := newPubID()
	if err != nil {
		return WorkerCredential{}, "", err
	}
	text, digest, err := newWorkerCredential(credID)
	if err != nil {
		return WorkerCredential{}, "", err
	}
	var out WorkerCredential
	err = InTx(ctx, p.db, TxOptions{TxOptions: Serializable.TxOptions, MaxAttempts: p.maxAttempts}, func(ctx context.Context, tx pgx.Tx) error {
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
		switch {
		case graceMs == 0:
			_, err = tx.Exec(ctx, `UPDATE ql3.worker_credentials SET status = 'revoked', revoked_at_ms = `+dbNowMs+`
				WHERE worker_id = $1 AND status = 'active'`, wid)
		case graceMs > 0:
			_, err = tx.Exec(ctx, `UPDATE ql3.worker_credentials
				SET expires_at_ms = greatest(created_at_ms + 1, least(coalesce(expires_at_ms, `+dbNowMs+` + $2), `+dbNowMs+` + $2))
				WHERE worker_id = $1 AND status = 'active'`, wid, graceMs)
		}
		if err != nil {
			return err
		}
		out, err = scanCredential(tx.QueryRow(ctx, `INSERT INTO ql3.worker_credentials (credential_id, worker_id, secret_digest, status, created_at_ms)
			VALUES ($1, $2, $3, 'active', `+dbNowMs+`) RETURNING `+credentialColumns, credID, wid, digest[:]))
		return err
	})
	if err != nil {
		return WorkerCredential{}, "", err
	}
	return out, text, nil
}

// RevokeWorkerCredential revokes one credential of a worker. Revoking a
// revoked credential is a no-op.
func (p *Publisher) RevokeWorkerCredential(ctx context.Context, workerRef, credentialRef string) (WorkerCredential, error) {
	wid, err := parsePubID("worker", workerRef)
	if err != nil {
		return WorkerCredential{}, errs.NotFoundf("no worker %.64q", workerRef)
	}
	cid, err := parsePubID("credential", credentialRef)
	if err != nil {
		return WorkerCredential{}, errs.NotFoundf("no credential %.64q", credentialRef)
	}
	var out WorkerCredential
	err = InTx(ctx, p.db, TxOptions{TxOptions: Serializable.TxOptions, MaxAttempts: p.maxAttempts}, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		out, err = scanCredential(tx.QueryRow(ctx, `UPDATE ql3.worker_credentials
			SET status = 'revoked', revoked_at_ms = coalesce(revoked_at_ms, `+dbNowMs+`)
			WHERE credential_id = $1 AND worker_id = $2 RETURNING `+credentialColumns, cid, wid))
		if errors.Is(err, pgx.ErrNoRows) {
			return errs.NotFoundf("worker %s has no credential %s", wid, cid)
		}
		return err
	})
	return out, err
}

// ListWorkerCredentials returns a worker's credentials, newest first
// (digests are never read back).
func (p *Publisher) ListWorkerCredentials(ctx context.Context, workerRef string) ([]WorkerCredential, error) {
	w, err := p.GetWorker(ctx, workerRef)
	if err != nil {
		return nil, err
	}
	rows, err := p.db.Query(ctx, `SELECT `+credentialColumns+` FROM ql3.worker_credentials
		WHERE worker_id = $1 ORDER BY created_at_ms DESC, credential_id DESC LIMIT $2`, w.ID, MaxListLimit)
	if err != nil {
		return nil, pubReadErr(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (WorkerCredential, error) { return scanCredential(r) })
	if out == nil {
		out = []WorkerCredential{}
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
