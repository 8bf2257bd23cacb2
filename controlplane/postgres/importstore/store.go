// Package importstore is the cluster's import ledger and the one
// transaction of an apply (ADR 0063): the plan's script files into the
// project's scripts folder (scriptstore.PutFilesTx), its tasks with their
// triggers and labels (publication's CreateTaskTx), its env entries sealed
// in QingLong order (envstore.CreateEnvsTx), the audit lines, the row
// mapping (import_rows) and the ledger row (import_ledger, migration 0021)
// — all of it committed together or not at all. A plan digest already in
// the project's ledger writes nothing and answers existing.
package importstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/depstore"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/scriptstore"
	"github.com/ql3/ql3/controlplane/postgres/substore"
	"github.com/ql3/ql3/core/errs"
)

var _ controlplane.ImportStore = (*Store)(nil)

// AuditApply is the audit line of an applied plan.
const AuditApply = "import.apply"

// DB is what a Store needs: *pgxpool.Pool on the admin role satisfies it.
type DB interface {
	postgres.DB
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Store writes imports as ql3_admin.
type Store struct {
	db   DB
	pub  *publication.Publisher
	envs *envstore.Store
	// Hook, when set, is called at the named points inside the apply's
	// transaction (tests kill the process there): "begun", "files",
	// "tasks", "envs", "ledger" (everything written, before the commit).
	Hook func(point string)
}

// New returns a Store; envs must be unlocked to apply a plan with env
// entries.
func New(db DB, pub *publication.Publisher, envs *envstore.Store) *Store {
	return &Store{db: db, pub: pub, envs: envs}
}

func (s *Store) hook(p string) {
	if s.Hook != nil {
		s.Hook(p)
	}
}

func projectUUID(id string) (uuid.UUID, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return uuid.Nil, errs.NotFoundf("project %.64q not found", id)
	}
	return u, nil
}

// ImportRecord implements controlplane.ImportStore.
func (s *Store) ImportRecord(ctx context.Context, projectID, digest string) (controlplane.ImportRecord, error) {
	pid, err := projectUUID(projectID)
	if err != nil {
		return controlplane.ImportRecord{}, err
	}
	return readRecord(ctx, s.db, pid, digest)
}

func readRecord(ctx context.Context, q postgres.DB, pid uuid.UUID, digest string) (controlplane.ImportRecord, error) {
	r := controlplane.ImportRecord{ProjectID: pid.String(), PlanDigest: digest}
	err := q.QueryRow(ctx, `SELECT zone, source, actor, applied_at_ms, summary::text FROM ql3.import_ledger
		WHERE project_id = $1 AND plan_digest = $2`, pid, digest).Scan(&r.Zone, &r.Source, &r.Actor, &r.AppliedAtMs, &r.Summary)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, errs.NotFoundf("no import of plan %.80s in project %s", digest, pid)
	}
	if err != nil {
		return r, err
	}
	rows, err := q.Query(ctx, `SELECT kind, source_id, target_id FROM ql3.import_rows
		WHERE project_id = $1 AND plan_digest = $2 ORDER BY kind, source_id`, pid, digest)
	if err != nil {
		return r, err
	}
	r.Rows, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (controlplane.ImportRow, error) {
		var x controlplane.ImportRow
		err := row.Scan(&x.Kind, &x.SourceID, &x.TargetID)
		return x, err
	})
	return r, err
}

// ApplyImport implements controlplane.ImportStore: one SERIALIZABLE
// transaction (retried whole on a serialization failure).
func (s *Store) ApplyImport(ctx context.Context, b controlplane.ImportBatch) (controlplane.ImportRecord, bool, error) {
	pid, err := projectUUID(b.ProjectID)
	if err != nil {
		return controlplane.ImportRecord{}, false, err
	}
	if b.PlanDigest == "" || len(b.PlanDigest) > 80 {
		return controlplane.ImportRecord{}, false, errs.Invalidf("plan", "must be a plan digest, got %.80q", b.PlanDigest)
	}
	if b.Summary == "" {
		b.Summary = "{}"
	}
	var (
		rec      controlplane.ImportRecord
		existing bool
	)
	err = postgres.InTx(ctx, s.db, postgres.TxOptions{TxOptions: postgres.Serializable.TxOptions, MaxAttempts: 8},
		func(ctx context.Context, tx pgx.Tx) error {
			existing = false
			var status string
			err := tx.QueryRow(ctx, `SELECT status FROM ql3.projects WHERE project_id = $1 FOR UPDATE`, pid).Scan(&status)
			if errors.Is(err, pgx.ErrNoRows) {
				return errs.NotFoundf("project %s not found", pid)
			}
			if err != nil {
				return err
			}
			if status != "active" {
				return errs.E(errs.Conflict, "project", "project %s is %s: nothing can be imported into it", pid, status)
			}
			if r, err := readRecord(ctx, tx, pid, b.PlanDigest); err == nil {
				rec, existing = r, true
				return nil
			} else if errs.Code(err) != errs.NotFound {
				return err
			}
			s.hook("begun")
			rows, err := s.write(ctx, tx, b)
			if err != nil {
				return err
			}
			var now int64
			actor := controlplane.ActorOf(ctx)
			who := actor.Kind
			if actor.ID != "" {
				who += ":" + actor.ID
			}
			if err := tx.QueryRow(ctx, `INSERT INTO ql3.import_ledger (project_id, plan_digest, zone, source, applied_at_ms, actor, summary)
				VALUES ($1, $2, $3, $4, `+postgres.DBNowMs+`, $5, $6::text::jsonb) RETURNING applied_at_ms`,
				pid, b.PlanDigest, b.Zone, postgres.Clip(b.Source, 4096), postgres.Clip(who, 128), b.Summary).Scan(&now); err != nil {
				return err
			}
			if len(rows) > 0 {
				kinds, ids, targets := make([]string, len(rows)), make([]int64, len(rows)), make([]string, len(rows))
				for i, r := range rows {
					kinds[i], ids[i], targets[i] = r.Kind, r.SourceID, r.TargetID
				}
				if _, err := tx.Exec(ctx, `INSERT INTO ql3.import_rows (project_id, plan_digest, kind, source_id, target_id)
					SELECT $1, $2, k, s, t FROM unnest($3::text[], $4::bigint[], $5::text[]) AS x(k, s, t)`,
					pid, b.PlanDigest, kinds, ids, targets); err != nil {
					return err
				}
			}
			counts := map[string]int{}
			for _, r := range rows {
				counts[r.Kind]++
			}
			if err := publication.InsertAudit(ctx, tx, AuditApply, "project", pid.String(), map[string]any{
				"planDigest": b.PlanDigest, "zone": b.Zone, "tasks": counts["task"], "envs": counts["env"], "files": counts["script"], "dependencies": counts["dependency"],
				"subscriptions": counts["subscription"]}); err != nil {
				return err
			}
			s.hook("ledger")
			rec, err = readRecord(ctx, tx, pid, b.PlanDigest)
			return err
		})
	return rec, existing, err
}

// write puts the files first (a script task pins the tree it runs from
// when it is created), then the tasks, then the env entries.
func (s *Store) write(ctx context.Context, tx pgx.Tx, b controlplane.ImportBatch) ([]controlplane.ImportRow, error) {
	var rows []controlplane.ImportRow
	if len(b.Files) > 0 {
		files := make([]scriptstore.PutFile, len(b.Files))
		for i, f := range b.Files {
			files[i] = scriptstore.PutFile{Path: f.Path, Size: f.Size, SHA256: f.SHA256, Read: f.Read}
			rows = append(rows, controlplane.ImportRow{Kind: "script", SourceID: f.Index, TargetID: f.Path})
		}
		if _, err := scriptstore.PutFilesTx(ctx, tx, b.ProjectID, files); err != nil {
			return nil, err
		}
	}
	s.hook("files")
	// The folder is final from here on: each script folder's tree is
	// snapshotted once for all the tasks that run from it.
	ctx = publication.WithTreeMemo(ctx)
	for _, t := range b.Tasks {
		t.Task.ProjectID = b.ProjectID
		created, err := s.pub.CreateTaskTx(ctx, tx, t.Task, t.Labels)
		if err != nil {
			return nil, errs.Prefix(fmt.Sprintf("tasks[source %d]", t.SourceID), err)
		}
		rows = append(rows, controlplane.ImportRow{Kind: "task", SourceID: t.SourceID, TargetID: created.ID})
	}
	s.hook("tasks")
	if len(b.Envs) > 0 {
		c, err := s.envs.Cipher()
		if err != nil {
			return nil, err
		}
		in := make([]controlplane.EnvInput, len(b.Envs))
		for i, e := range b.Envs {
			in[i] = e.Entry
		}
		out, err := envstore.CreateEnvsTx(ctx, tx, c, b.ProjectID, in)
		if err != nil {
			return nil, errs.Prefix("envs", err)
		}
		for i, e := range out {
			rows = append(rows, controlplane.ImportRow{Kind: "env", SourceID: b.Envs[i].SourceID, TargetID: e.ID})
		}
	}
	s.hook("envs")
	for _, d := range b.Deps {
		d.Dependency.ProjectID = b.ProjectID
		created, err := depstore.CreateDependencyTx(ctx, tx, d.Dependency)
		if err != nil {
			return nil, errs.Prefix(fmt.Sprintf("dependencies[source %d]", d.SourceID), err)
		}
		rows = append(rows, controlplane.ImportRow{Kind: "dependency", SourceID: d.SourceID, TargetID: created.ID})
	}
	for _, sub := range b.Subs {
		created, err := substore.CreateSubscriptionTx(ctx, tx, b.ProjectID, sub.Subscription)
		if err != nil {
			return nil, errs.Prefix(fmt.Sprintf("subscriptions[source %d]", sub.SourceID), err)
		}
		rows = append(rows, controlplane.ImportRow{Kind: "subscription", SourceID: sub.SourceID, TargetID: created.ID})
	}
	return rows, nil
}
