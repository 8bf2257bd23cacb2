package publication

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
)

// Audit lines (ADR 0005, ADR 0023): every admin mutation writes exactly one
// low-sensitivity row into ql3.audit_log inside the mutation's own
// transaction, so a mutation that rolls back leaves no line and a committed
// one always has its line. A row names who (actor), what (action), on what
// (subject) and a few non-secret details; never a token, a credential, a
// digest of either, a spec or a DSN.

// Audit actions of admin mutations (publication kinds are reused as is).
const (
	AuditTokenCreate      = "api_token.create"
	AuditTokenRevoke      = "api_token.revoke"
	AuditWorkerRegister   = "worker.register"
	AuditCredentialIssue  = "credential.issue"
	AuditCredentialRotate = "credential.rotate"
	AuditCredentialRevoke = "credential.revoke"
)

// InsertAudit writes the audit line of one mutation in tx, as ctx's actor,
// with outcome ok. details must hold nothing secret; it is bounded by the
// column (4 KiB), which our small maps never approach.
func InsertAudit(ctx context.Context, tx pgx.Tx, action, subjectKind, subjectID string, details map[string]any) error {
	a := controlplane.ActorOf(ctx)
	if details == nil {
		details = map[string]any{}
	}
	body, err := json.Marshal(details)
	if err != nil {
		return errs.E(errs.Internal, "", "encode audit details: %v", err)
	}
	id, err := controlplane.NewID()
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO ql3.audit_log (audit_id, at_ms, actor_kind, actor_id, action, subject_kind, subject_id, outcome, remote_addr, details)
		VALUES ($1, `+dbNowMs+`, $2, $3, $4, $5, $6, 'ok', $7, $8::text::jsonb)`,
		id, a.Kind, postgres.NullIfEmpty(a.ID, 128), action, postgres.NullIfEmpty(subjectKind, 64), postgres.NullIfEmpty(subjectID, 128),
		postgres.NullIfEmpty(postgres.PeerIP(a.RemoteAddr), 64), string(body))
	return err
}

// auditSubjectOf is what the audit line of a publication result names;
// ok is false for a result that is not a publication record.
func auditSubjectOf(res any) (kind, id string, details map[string]any, ok bool) {
	switch r := res.(type) {
	case controlplane.Project:
		return "project", r.ID, map[string]any{"name": r.Name, "status": r.Status, "version": r.Version}, true
	case controlplane.Task:
		return "task", r.ID, map[string]any{"projectId": r.ProjectID, "name": r.Name, "revision": r.Revision, "enabled": r.Enabled}, true
	case controlplane.Trigger:
		return "trigger", r.ID, map[string]any{"taskId": r.TaskID, "revision": r.Revision, "enabled": r.Enabled}, true
	}
	return "", "", nil, false
}

func encodeAuditCursor(r controlplane.AuditRecord) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(r.AtMs, 10) + "/" + r.ID))
}

// ListAudit returns audit lines newest first, keyset-paginated on (at_ms,
// audit_id) (index audit_log_at_idx), at most controlplane.MaxListLimit per page.
func (p *Publisher) ListAudit(ctx context.Context, f controlplane.AuditFilter) (controlplane.ListPage[controlplane.AuditRecord], error) {
	limit, err := f.Page.PageLimit()
	if err != nil {
		return controlplane.ListPage[controlplane.AuditRecord]{}, err
	}
	for _, v := range []struct {
		field, val string
		max        int
	}{{"action", f.Action, 64}, {"subject", f.SubjectID, 128}, {"actor", f.ActorID, 128}} {
		if len(v.val) > v.max {
			return controlplane.ListPage[controlplane.AuditRecord]{}, errs.Invalidf(v.field, "must be at most %d bytes", v.max)
		}
	}
	var afterMs any
	var afterID *uuid.UUID
	if f.Page.Cursor != "" {
		ms, id, err := decodeRunCursor(f.Page.Cursor)
		if err != nil {
			return controlplane.ListPage[controlplane.AuditRecord]{}, err
		}
		afterMs, afterID = ms, &id
	}
	rows, err := p.db.Query(ctx, `SELECT audit_id::text, at_ms, actor_kind, coalesce(actor_id, ''), action,
		coalesce(subject_kind, ''), coalesce(subject_id, ''), outcome, coalesce(remote_addr, ''), details::text
		FROM ql3.audit_log
		WHERE ($1::bigint IS NULL OR (at_ms, audit_id) < ($1::bigint, $2::uuid))
		  AND ($3::text = '' OR action = $3::text)
		  AND ($4::text = '' OR subject_id = $4::text)
		  AND ($5::text = '' OR actor_id = $5::text)
		ORDER BY at_ms DESC, audit_id DESC LIMIT $6`,
		afterMs, afterID, f.Action, f.SubjectID, f.ActorID, limit+1)
	if err != nil {
		return controlplane.ListPage[controlplane.AuditRecord]{}, pubReadErr(err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.AuditRecord, error) {
		var a controlplane.AuditRecord
		var details string
		err := r.Scan(&a.ID, &a.AtMs, &a.ActorKind, &a.ActorID, &a.Action, &a.SubjectKind, &a.SubjectID,
			&a.Outcome, &a.RemoteAddr, &details)
		a.Details = json.RawMessage(details)
		return a, err
	})
	if err != nil {
		return controlplane.ListPage[controlplane.AuditRecord]{}, pubReadErr(err)
	}
	page := listPageOf(items, limit, func(controlplane.AuditRecord) string { return "" })
	if len(items) > limit {
		page.NextCursor = encodeAuditCursor(items[limit-1])
	}
	return page, nil
}
