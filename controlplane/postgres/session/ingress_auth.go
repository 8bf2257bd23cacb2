package session

import (
	"context"
	"crypto/subtle"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
)

// WorkerAuth authenticates worker ingress requests and writes their denial
// audit lines, on the ingress role (ql3_worker_ingress). That role may read
// worker_credentials — which hold only the SHA-256 of each credential text,
// never a secret — so the digest comparison happens here, in constant time,
// and no other role is involved. (The runtime role cannot read
// credentials at all; grants_test proves both.)
type WorkerAuth struct{ db postgres.DB }

// NewWorkerAuth returns the authenticator over an ingress-role pool.
func NewWorkerAuth(db postgres.DB) *WorkerAuth { return &WorkerAuth{db: db} }

var (
	_ controlplane.Authenticator = (*WorkerAuth)(nil)
	_ controlplane.Auditor       = (*WorkerAuth)(nil)
)

// sqlAuthenticate reads everything one decision needs in one round trip:
// the credential, its worker and whether a superseding credential has been
// observed (observe-then-revoke: the old credential stops working the moment
// the new one is seen, before the admin reconciler marks it revoked).
const sqlAuthenticate = `
SELECT w.worker_id::text, w.status, coalesce(w.tls_identity, ''), c.secret_digest, c.status,
       coalesce(c.expires_at_ms, 0), coalesce(c.revoke_after_ms, 0),
       c.superseded_by IS NOT NULL AND EXISTS (
           SELECT 1 FROM ql3.worker_sessions s
           WHERE s.credential_id = c.superseded_by AND s.credential_observed_at_ms >= c.superseded_at_ms),
       ` + postgres.DBNowMs + `
FROM ql3.worker_credentials c JOIN ql3.workers w ON w.worker_id = c.worker_id
WHERE c.credential_id = $1::uuid`

// Authenticate checks a presented credential and client certificate:
// credential well-formed, known, its digest equal (constant time), active,
// not expired, not superseded by an observed successor; worker active; the
// worker's tls_identity one of the certificate's identities. Every refusal
// is an *controlplane.Denied with a reason category; nothing of the credential
// reaches an error, a log line or the database.
func (a *WorkerAuth) Authenticate(ctx context.Context, p controlplane.Presented) (controlplane.Principal, error) {
	credID, digest, err := postgres.ParseWorkerCredential(string(p.Credential))
	if err != nil {
		return controlplane.Principal{}, &controlplane.Denied{Reason: controlplane.ReasonMalformed}
	}
	var (
		workerID, workerStatus, identity, credStatus string
		stored                                       []byte
		expiresAt, revokeAfter, now                  int64
		successorSeen                                bool
	)
	err = a.db.QueryRow(ctx, sqlAuthenticate, credID).Scan(&workerID, &workerStatus, &identity, &stored,
		&credStatus, &expiresAt, &revokeAfter, &successorSeen, &now)
	if errors.Is(err, pgx.ErrNoRows) {
		return controlplane.Principal{}, &controlplane.Denied{Reason: controlplane.ReasonUnknownCredential}
	}
	if err != nil {
		return controlplane.Principal{}, postgres.Translate(err)
	}
	if subtle.ConstantTimeCompare(stored, digest[:]) != 1 {
		return controlplane.Principal{}, &controlplane.Denied{Reason: controlplane.ReasonWrongSecret, WorkerID: workerID}
	}
	deny := func(reason string) (controlplane.Principal, error) {
		return controlplane.Principal{}, &controlplane.Denied{Reason: reason, WorkerID: workerID}
	}
	switch {
	case credStatus != "active":
		return deny(controlplane.ReasonCredentialRevoked)
	case expiresAt != 0 && expiresAt <= now:
		return deny(controlplane.ReasonCredentialExpired)
	case successorSeen || (revokeAfter != 0 && revokeAfter <= now):
		return deny(controlplane.ReasonCredentialReplaced)
	case workerStatus != "active":
		return deny(controlplane.ReasonWorkerDisabled)
	case identity == "" || !slices.Contains(p.CertIdentities, identity):
		return deny(controlplane.ReasonCertNotBound)
	}
	return controlplane.Principal{WorkerID: workerID, CredentialID: credID, TLSIdentity: identity}, nil
}

const sqlAuditDenied = `
INSERT INTO ql3.audit_log (audit_id, at_ms, actor_kind, actor_id, action, subject_kind, subject_id, outcome, remote_addr, details)
VALUES ($1::uuid, ` + postgres.DBNowMs + `, 'worker', nullif($2::text, ''), 'ingress.denied', 'route', nullif($3::text, ''), 'denied',
        nullif($4::text, ''),
        jsonb_strip_nulls(jsonb_build_object('reason', $5::text, 'certIdentity', nullif($6::text, ''), 'trustGeneration', $7::bigint)))`

// AuditDenied writes one low-sensitivity denial line.
func (a *WorkerAuth) AuditDenied(ctx context.Context, d controlplane.Denial) error {
	id, err := controlplane.NewID()
	if err != nil {
		return err
	}
	_, err = a.db.Exec(ctx, sqlAuditDenied, id, postgres.Clip(d.WorkerID, 128), postgres.Clip(d.Route, 128), postgres.Clip(d.RemoteAddr, 64),
		postgres.Clip(d.Reason, 64), postgres.Clip(d.CertIdentity, 256), int64(d.TrustGeneration))
	return postgres.Translate(err)
}

// clip shortens s to at most n bytes (audit columns are bounded).
