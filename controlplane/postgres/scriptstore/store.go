// Package scriptstore is the cluster's per-project scripts folder in
// PostgreSQL (issue 22, ADR 0052): each distinct content is one row of
// script_blobs, keyed by its SHA-256 and stored once per project; the
// folder is script_entries (path → blob, or a folder). Nothing is kept on a
// replica's disk, so every replica serves the same folder.
//
// The rules are the edge's (core/scriptpath and core/scriptarchive): clean
// relative paths, no links of any kind (the store has none to follow), the
// limits of a folder checked in the transaction that changes it, a write
// guarded by If-None-Match: * or If-Match: <sha256>. Every change is one
// SERIALIZABLE transaction that also writes its audit line and re-pins the
// script tasks whose tree it changed (publication.RepinScriptTasks).
//
// The worker side (a leased attempt reading the tree its Run pins) and the
// retention of unreferenced blobs are in fetch.go and sweep.go.
package scriptstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// DB is what a Store needs: *pgxpool.Pool satisfies it.
type DB interface {
	postgres.DB
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Store is the scripts folders of every project, on the admin role.
type Store struct{ db DB }

var _ controlplane.Scripts = (*Store)(nil)

// New returns a Store over an admin pool.
func New(db DB) *Store { return &Store{db: db} }

const dbNowMs = postgres.DBNowMs

// Audit actions of the scripts folder.
const (
	AuditCreate = "script.create"
	AuditWrite  = "script.write"
	AuditMkdir  = "script.mkdir"
	AuditMove   = "script.move"
	AuditDelete = "script.delete"
	AuditUpload = "script.upload"
)

func parseProject(id string) (uuid.UUID, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return uuid.Nil, errs.Invalidf("project", "must be a project id (UUID), got %.64q", id)
	}
	return u, nil
}

func (s *Store) inTx(ctx context.Context, projectID string, fn func(ctx context.Context, tx pgx.Tx, project uuid.UUID) error) error {
	project, err := parseProject(projectID)
	if err != nil {
		return err
	}
	return postgres.InTx(ctx, s.db, postgres.Serializable, func(ctx context.Context, tx pgx.Tx) error {
		if err := lockActiveProject(ctx, tx, project); err != nil {
			return err
		}
		return fn(ctx, tx, project)
	})
}

// lockActiveProject holds the project's row FOR SHARE and refuses a
// project that is not active.
func lockActiveProject(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM ql3.projects WHERE project_id = $1 FOR SHARE`, project).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return errs.NotFoundf("no project %s", project)
	}
	if err != nil {
		return err
	}
	if status != "active" {
		return errs.E(errs.Conflict, "project", "project %s is %s: its scripts folder is read-only", project, status)
	}
	return nil
}

// audit writes the change's audit line in its transaction.
func audit(ctx context.Context, tx pgx.Tx, action string, project uuid.UUID, details map[string]any) error {
	return publication.InsertAudit(ctx, tx, action, "project", project.String(), details)
}

// entry is one row of script_entries.
type entry struct {
	kind string
	sum  []byte
	size int64
}

func getEntry(ctx context.Context, q postgres.DB, project uuid.UUID, p string) (entry, bool, error) {
	var e entry
	err := q.QueryRow(ctx, `SELECT kind, sha256, size FROM ql3.script_entries WHERE project_id = $1 AND path = $2`, project, p).
		Scan(&e.kind, &e.sum, &e.size)
	if errors.Is(err, pgx.ErrNoRows) {
		return entry{}, false, nil
	}
	return e, err == nil, err
}

type usage struct {
	entries int
	bytes   int64
}

func getUsage(ctx context.Context, tx pgx.Tx, project uuid.UUID) (usage, error) {
	var u usage
	err := tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(size), 0) FROM ql3.script_entries WHERE project_id = $1`, project).
		Scan(&u.entries, &u.bytes)
	return u, err
}

// missingDirs returns the folders of p's ancestors that do not exist yet,
// outermost first; an ancestor that is a file is a conflict.
func missingDirs(ctx context.Context, tx pgx.Tx, project uuid.UUID, p string) ([]string, error) {
	var missing []string
	for d := scriptpath.Dir(p); d != ""; d = scriptpath.Dir(d) {
		e, ok, err := getEntry(ctx, tx, project, d)
		if err != nil {
			return nil, err
		}
		if ok && e.kind != controlplane.ScriptKindDir {
			return nil, errs.Conflictf("%q is a file, not a folder", d)
		}
		if ok {
			break
		}
		missing = append([]string{d}, missing...)
	}
	return missing, nil
}

func insertDir(ctx context.Context, tx pgx.Tx, project uuid.UUID, p string) error {
	_, err := tx.Exec(ctx, `INSERT INTO ql3.script_entries (project_id, path, parent, kind, mtime_ms)
		VALUES ($1, $2, $3, 'dir', `+dbNowMs+`)`, project, p, scriptpath.Dir(p))
	return err
}

// putFile stores data as a blob (once per project) and points p at it.
func putFile(ctx context.Context, tx pgx.Tx, project uuid.UUID, p string, data []byte, exec bool) (string, error) {
	sum := sha256.Sum256(data)
	if _, err := tx.Exec(ctx, `INSERT INTO ql3.script_blobs (project_id, sha256, size, content, created_at_ms)
		VALUES ($1, $2, $3, $4, `+dbNowMs+`) ON CONFLICT DO NOTHING`, project, sum[:], len(data), data); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO ql3.script_entries (project_id, path, parent, kind, sha256, size, executable, mtime_ms)
		VALUES ($1, $2, $3, 'file', $4, $5, $6, `+dbNowMs+`)
		ON CONFLICT (project_id, path) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size,
			executable = excluded.executable OR ql3.script_entries.executable, mtime_ms = excluded.mtime_ms`,
		project, p, scriptpath.Dir(p), sum[:], len(data), exec); err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

// ListScripts lists one level of a folder: folders first, then files, by
// name.
func (s *Store) ListScripts(ctx context.Context, projectID, dir string) ([]controlplane.ScriptEntry, error) {
	project, err := parseProject(projectID)
	if err != nil {
		return nil, err
	}
	d, err := scriptpath.Clean("path", dir, true)
	if err != nil {
		return nil, err
	}
	if d != "" {
		e, ok, err := getEntry(ctx, s.db, project, d)
		if err != nil {
			return nil, postgres.TranslateDriver(err)
		}
		if !ok {
			return nil, errs.NotFoundf("no folder %q in the scripts folder", d)
		}
		if e.kind != controlplane.ScriptKindDir {
			return nil, errs.Invalidf("path", "%q is a file, not a folder", d)
		}
	}
	rows, err := s.db.Query(ctx, `SELECT path, kind, size, mtime_ms, sha256 FROM ql3.script_entries
		WHERE project_id = $1 AND parent = $2 ORDER BY kind, path LIMIT $3`, project, d, scriptpath.MaxEntries)
	if err != nil {
		return nil, postgres.TranslateDriver(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (controlplane.ScriptEntry, error) {
		var e controlplane.ScriptEntry
		var p string
		var sum []byte
		if err := r.Scan(&p, &e.Kind, &e.Size, &e.MtimeMs, &sum); err != nil {
			return e, err
		}
		e.Name, e.SHA256 = scriptpath.Base(p), hex.EncodeToString(sum)
		return e, nil
	})
	if out == nil {
		out = []controlplane.ScriptEntry{}
	}
	return out, postgres.TranslateDriver(err)
}

// ReadScript returns a file's bytes and its ETag (the SHA-256 hex).
func (s *Store) ReadScript(ctx context.Context, projectID, path string) ([]byte, string, error) {
	project, err := parseProject(projectID)
	if err != nil {
		return nil, "", err
	}
	p, err := scriptpath.Clean("path", path, false)
	if err != nil {
		return nil, "", err
	}
	var kind string
	var sum, data []byte
	err = s.db.QueryRow(ctx, `SELECT e.kind, e.sha256, b.content FROM ql3.script_entries e
		LEFT JOIN ql3.script_blobs b ON b.project_id = e.project_id AND b.sha256 = e.sha256
		WHERE e.project_id = $1 AND e.path = $2`, project, p).Scan(&kind, &sum, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", errs.NotFoundf("no file %q in the scripts folder", p)
	}
	if err != nil {
		return nil, "", postgres.TranslateDriver(err)
	}
	if kind != controlplane.ScriptKindFile {
		return nil, "", errs.Invalidf("path", "%q is a folder", p)
	}
	return data, hex.EncodeToString(sum), nil
}

// WriteScript creates (IfNoneMatch) or replaces (IfMatch) a file, making
// its missing folders.
func (s *Store) WriteScript(ctx context.Context, projectID, path string, data []byte, pre controlplane.ScriptPrecondition) (controlplane.ScriptWriteResult, error) {
	p, err := scriptpath.Clean("path", path, false)
	if err != nil {
		return controlplane.ScriptWriteResult{}, err
	}
	if len(data) > scriptpath.MaxFileBytes {
		return controlplane.ScriptWriteResult{}, errs.TooLargef("content", "is %d bytes, limit is %d (64 MiB) per file", len(data), scriptpath.MaxFileBytes)
	}
	if pre.IfNoneMatch == (pre.IfMatch != "") {
		return controlplane.ScriptWriteResult{}, errs.Invalidf("If-Match", "exactly one of If-None-Match: * (create) and If-Match: <ETag> (replace) is required")
	}
	var res controlplane.ScriptWriteResult
	err = s.inTx(ctx, projectID, func(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
		res = controlplane.ScriptWriteResult{}
		cur, exists, err := getEntry(ctx, tx, project, p)
		if err != nil {
			return err
		}
		if exists && cur.kind == controlplane.ScriptKindDir {
			return errs.Conflictf("%q is a folder", p)
		}
		curTag := ""
		if exists {
			curTag = hex.EncodeToString(cur.sum)
		}
		switch {
		case pre.IfNoneMatch && exists:
			return &controlplane.ScriptStaleError{Current: curTag}
		case pre.IfMatch != "" && !exists:
			return &controlplane.ScriptStaleError{}
		case pre.IfMatch != "" && pre.IfMatch != "*" && pre.IfMatch != curTag:
			return &controlplane.ScriptStaleError{Current: curTag}
		}
		missing, err := missingDirs(ctx, tx, project, p)
		if err != nil {
			return err
		}
		u, err := getUsage(ctx, tx, project)
		if err != nil {
			return err
		}
		add := len(missing)
		if !exists {
			add++
		}
		if err := scriptpath.CheckLimits(u.entries, u.bytes, add, int64(len(data))-cur.size); err != nil {
			return err
		}
		for _, d := range missing {
			if err := insertDir(ctx, tx, project, d); err != nil {
				return err
			}
		}
		if res.ETag, err = putFile(ctx, tx, project, p, data, false); err != nil {
			return err
		}
		res.Created = !exists
		if res.Repinned, err = publication.RepinScriptTasks(ctx, tx, project, []string{p}); err != nil {
			return err
		}
		action := AuditWrite
		if res.Created {
			action = AuditCreate
		}
		return audit(ctx, tx, action, project, map[string]any{"path": p, "sha256": res.ETag, "size": len(data), "repinned": res.Repinned})
	})
	return res, err
}

// MkdirScript makes a folder (and its missing parents).
func (s *Store) MkdirScript(ctx context.Context, projectID, path string) error {
	p, err := scriptpath.Clean("path", path, false)
	if err != nil {
		return err
	}
	return s.inTx(ctx, projectID, func(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
		if _, exists, err := getEntry(ctx, tx, project, p); err != nil || exists {
			if exists {
				return errs.Conflictf("%q already exists", p)
			}
			return err
		}
		missing, err := missingDirs(ctx, tx, project, p)
		if err != nil {
			return err
		}
		u, err := getUsage(ctx, tx, project)
		if err != nil {
			return err
		}
		if err := scriptpath.CheckLimits(u.entries, u.bytes, len(missing)+1, 0); err != nil {
			return err
		}
		for _, d := range append(missing, p) {
			if err := insertDir(ctx, tx, project, d); err != nil {
				return err
			}
		}
		return audit(ctx, tx, AuditMkdir, project, map[string]any{"path": p})
	})
}

// under is the SQL condition "path is $2 or below it".
const under = `(path = $2 OR starts_with(path, $2 || '/'))`

// MoveScript renames a file or a folder (with everything in it), never
// over an existing path.
func (s *Store) MoveScript(ctx context.Context, projectID, from, to string) error {
	fc, err := scriptpath.Clean("from", from, false)
	if err != nil {
		return err
	}
	tc, err := scriptpath.Clean("to", to, false)
	if err != nil {
		return err
	}
	if tc == fc || strings.HasPrefix(tc, fc+"/") {
		return errs.Invalidf("to", "%q cannot move into itself", fc)
	}
	return s.inTx(ctx, projectID, func(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
		if _, ok, err := getEntry(ctx, tx, project, fc); err != nil || !ok {
			if err == nil {
				err = errs.NotFoundf("no %q in the scripts folder", fc)
			}
			return err
		}
		if _, ok, err := getEntry(ctx, tx, project, tc); err != nil || ok {
			if ok {
				err = errs.Conflictf("%q already exists", tc)
			}
			return err
		}
		missing, err := missingDirs(ctx, tx, project, tc)
		if err != nil {
			return err
		}
		u, err := getUsage(ctx, tx, project)
		if err != nil {
			return err
		}
		if err := scriptpath.CheckLimits(u.entries, u.bytes, len(missing), 0); err != nil {
			return err
		}
		for _, d := range missing {
			if err := insertDir(ctx, tx, project, d); err != nil {
				return err
			}
		}
		// New path = to || the rest after from; the parent follows.
		if _, err := tx.Exec(ctx, `UPDATE ql3.script_entries
			SET path = $3 || substr(path, length($2) + 1),
			    parent = CASE WHEN path = $2 THEN $4 ELSE $3 || substr(parent, length($2) + 1) END,
			    mtime_ms = `+dbNowMs+`
			WHERE project_id = $1 AND `+under, project, fc, tc, scriptpath.Dir(tc)); err != nil {
			return err
		}
		if _, err := publication.RepinScriptTasks(ctx, tx, project, []string{fc, tc}); err != nil {
			return err
		}
		return audit(ctx, tx, AuditMove, project, map[string]any{"from": fc, "to": tc})
	})
}

// DeleteScript deletes a file, an empty folder, or (recursive) a folder
// with everything in it.
func (s *Store) DeleteScript(ctx context.Context, projectID, path string, recursive bool) error {
	p, err := scriptpath.Clean("path", path, false)
	if err != nil {
		return err
	}
	return s.inTx(ctx, projectID, func(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
		e, ok, err := getEntry(ctx, tx, project, p)
		if err != nil {
			return err
		}
		if !ok {
			return errs.NotFoundf("no %q in the scripts folder", p)
		}
		if e.kind == controlplane.ScriptKindDir && !recursive {
			var children bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ql3.script_entries WHERE project_id = $1 AND parent = $2)`,
				project, p).Scan(&children); err != nil {
				return err
			}
			if children {
				return errs.Conflictf("folder %q is not empty (delete it with recursive=true)", p)
			}
		}
		tag, err := tx.Exec(ctx, `DELETE FROM ql3.script_entries WHERE project_id = $1 AND `+under, project, p)
		if err != nil {
			return err
		}
		if _, err := publication.RepinScriptTasks(ctx, tx, project, []string{p}); err != nil {
			return err
		}
		return audit(ctx, tx, AuditDelete, project, map[string]any{"path": p, "entries": tag.RowsAffected()})
	})
}
