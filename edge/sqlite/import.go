package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/envcrypt"
)

var _ edge.ImportStore = (*Store)(nil)

// ApplyImport implements edge.ImportStore: the ledger row, every task with
// its triggers, every env entry (sealed, in the batch's order, after the
// existing ones), the row mapping and the audit lines in one durable
// transaction (ADR 0056). A digest already in the ledger writes nothing.
func (s *Store) ApplyImport(ctx context.Context, b edge.ImportBatch) (edge.ImportRecord, bool, error) {
	if b.PlanDigest == "" || b.Zone == "" {
		return edge.ImportRecord{}, false, errs.Invalidf("plan", "a plan digest and its zone are required")
	}
	valid := make([]edge.ValidTask, len(b.Tasks))
	for i, t := range b.Tasks {
		v, err := edge.CheckNewTask(t.Task)
		if err != nil {
			return edge.ImportRecord{}, false, errs.Prefix(fmt.Sprintf("tasks[source %d]", t.SourceID), err)
		}
		valid[i] = v
	}
	envIn := make([]edge.EnvInput, len(b.Envs))
	for i, e := range b.Envs {
		in := e.Entry
		if err := validateEnvInput(in); err != nil {
			return edge.ImportRecord{}, false, errs.Prefix(fmt.Sprintf("envs[source %d]", e.SourceID), err)
		}
		envIn[i] = in
	}
	subs := make([]edge.NewSubscription, len(b.Subscriptions))
	for i, x := range b.Subscriptions {
		v, err := edge.CheckSubscription(x.Subscription)
		if err != nil {
			return edge.ImportRecord{}, false, errs.Prefix(fmt.Sprintf("subscriptions[source %d]", x.SourceID), err)
		}
		subs[i] = v
	}
	deps := make([]edge.NewDependency, len(b.Dependencies))
	for i, x := range b.Dependencies {
		v, err := edge.CheckDependency(x.Dependency)
		if err != nil {
			return edge.ImportRecord{}, false, errs.Prefix(fmt.Sprintf("dependencies[source %d]", x.SourceID), err)
		}
		deps[i] = v
	}
	var c *envcrypt.Cipher
	if len(envIn) > 0 {
		var err error
		if c, err = s.envCipher(); err != nil {
			return edge.ImportRecord{}, false, err
		}
	}
	now := s.clock.Now().UnixMilli()
	var (
		rec      edge.ImportRecord
		existing bool
	)
	err := s.envWrite(ctx, func(tx *wtx, sg *signals) error {
		r, err := importRecord(ctx, tx, b.PlanDigest)
		switch {
		case err == nil:
			rec, existing = r, true
			return nil
		case errs.Code(err) != errs.NotFound:
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO import_ledger (plan_digest, zone, source, applied_at_ms, actor, summary, files_pending)
            VALUES (?, ?, ?, ?, ?, ?, ?)`, b.PlanDigest, b.Zone, b.Source, now, b.Actor, b.Summary, boolInt(b.FilesPending)); err != nil {
			return err
		}
		rec = edge.ImportRecord{PlanDigest: b.PlanDigest, Zone: b.Zone, Source: b.Source, AppliedAtMs: now, Actor: b.Actor,
			Summary: b.Summary, FilesPending: b.FilesPending}
		row := func(kind string, sourceID int64, target string) error {
			rec.Rows = append(rec.Rows, edge.ImportRow{Kind: kind, SourceID: sourceID, TargetID: target})
			_, err := tx.ExecContext(ctx, `INSERT INTO import_rows (plan_digest, kind, source_id, target_id) VALUES (?, ?, ?, ?)`,
				b.PlanDigest, kind, sourceID, target)
			return err
		}
		for i, v := range valid {
			id := newID()
			if err := createTaskTx(ctx, tx, sg, id, v, now); err != nil {
				return errs.Prefix(fmt.Sprintf("tasks[source %d]", b.Tasks[i].SourceID), err)
			}
			if err := row("task", b.Tasks[i].SourceID, id); err != nil {
				return err
			}
		}
		if len(envIn) > 0 {
			entries, err := insertEnvs(ctx, tx, c, envIn, now)
			if err != nil {
				return errs.Prefix("envs", err)
			}
			for i, e := range entries {
				if err := row("env", b.Envs[i].SourceID, e.ID); err != nil {
					return err
				}
			}
			if err := insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditEnvCreate,
				Target: strconv.Itoa(len(entries)) + " entries", Actor: b.Actor, Detail: "imported from QingLong, plan " + short(b.PlanDigest)}); err != nil {
				return err
			}
		}
		for i, v := range subs {
			id := newID()
			if err := createSubscriptionTx(ctx, tx, id, v, now, b.Actor); err != nil {
				return errs.Prefix(fmt.Sprintf("subscriptions[source %d]", b.Subscriptions[i].SourceID), err)
			}
			if err := row("subscription", b.Subscriptions[i].SourceID, id); err != nil {
				return err
			}
		}
		for i, v := range deps {
			id := newID()
			if err := createDependencyTx(ctx, tx, id, v, now, b.Actor); err != nil {
				return errs.Prefix(fmt.Sprintf("dependencies[source %d]", b.Dependencies[i].SourceID), err)
			}
			if err := row("dependency", b.Dependencies[i].SourceID, id); err != nil {
				return err
			}
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditImportApply, Target: short(b.PlanDigest),
			Actor: b.Actor, Detail: fmt.Sprintf("zone %s: %d tasks, %d env entries, %d subscriptions, %d dependencies",
				b.Zone, len(valid), len(envIn), len(subs), len(deps))})
	})
	if err != nil {
		return edge.ImportRecord{}, false, err
	}
	return rec, existing, nil
}

// short is a digest as an audit line shows it.
func short(digest string) string {
	if len(digest) > 7+16 {
		return digest[:7+16]
	}
	return digest
}

func validateEnvInput(in edge.EnvInput) error {
	return env.Entry{Name: in.Name, Value: in.Value, Remarks: in.Remarks, Labels: in.Labels}.Validate()
}

// ImportRecord implements edge.ImportStore.
func (s *Store) ImportRecord(ctx context.Context, digest string) (edge.ImportRecord, error) {
	return importRecord(ctx, s.reader, digest)
}

func importRecord(ctx context.Context, q queryer, digest string) (edge.ImportRecord, error) {
	var (
		r       edge.ImportRecord
		pending int
	)
	err := q.QueryRowContext(ctx, `SELECT plan_digest, zone, source, applied_at_ms, actor, summary, files_pending
        FROM import_ledger WHERE plan_digest = ?`, digest).Scan(&r.PlanDigest, &r.Zone, &r.Source, &r.AppliedAtMs, &r.Actor, &r.Summary, &pending)
	if errors.Is(err, sql.ErrNoRows) {
		return edge.ImportRecord{}, errs.NotFoundf("no import of plan %s", digest)
	}
	if err != nil {
		return edge.ImportRecord{}, translate(err)
	}
	r.FilesPending = pending == 1
	rows, err := q.QueryContext(ctx, `SELECT kind, source_id, target_id FROM import_rows WHERE plan_digest = ? ORDER BY kind, source_id`, digest)
	if err != nil {
		return edge.ImportRecord{}, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var ir edge.ImportRow
		if err := rows.Scan(&ir.Kind, &ir.SourceID, &ir.TargetID); err != nil {
			return edge.ImportRecord{}, translate(err)
		}
		r.Rows = append(r.Rows, ir)
	}
	return r, translate(rows.Err())
}

// PendingImports implements edge.ImportStore.
func (s *Store) PendingImports(ctx context.Context) ([]edge.ImportRecord, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT plan_digest FROM import_ledger WHERE files_pending = 1 ORDER BY applied_at_ms LIMIT 64`)
	if err != nil {
		return nil, translate(err)
	}
	var digests []string
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			rows.Close()
			return nil, translate(err)
		}
		digests = append(digests, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	out := make([]edge.ImportRecord, 0, len(digests))
	for _, d := range digests {
		r, err := s.ImportRecord(ctx, d)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// FinishImportFiles implements edge.ImportStore.
func (s *Store) FinishImportFiles(ctx context.Context, digest string, files int, actor string) error {
	now := s.clock.Now().UnixMilli()
	return s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		res, err := tx.ExecContext(ctx, `UPDATE import_ledger SET files_pending = 0 WHERE plan_digest = ? AND files_pending = 1`, digest)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // already finished
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditImportFiles, Target: short(digest),
			Actor: actor, Detail: fmt.Sprintf("%d script files in place", files)})
	})
}
