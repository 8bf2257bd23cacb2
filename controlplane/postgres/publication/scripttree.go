package publication

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/core/spec"
)

// Script trees (ADR 0052). A script task's execution revision pins the
// tree of the script's folder (the file and everything beside and below
// it, so require('./utils') works): an immutable snapshot of the
// project's scripts folder, keyed by core/scriptpath.TreeDigest and
// naming blobs by SHA-256. A change of the folder re-pins every script
// task whose tree it changed (RepinScriptTasks, a new task and execution
// revision with the same spec); a Run keeps the execution revision, and so
// the tree, it was admitted with.

// pinScriptTree returns the script_dir and script_tree of a new execution
// revision: NULLs for argv and shell tasks; for a script task the tree of
// its folder, which must hold the file.
func pinScriptTree(ctx context.Context, tx pgx.Tx, projectID uuid.UUID, cmd spec.Command) (dir, tree any, err error) {
	file, field := scriptFile(cmd)
	if file == "" {
		return nil, nil, nil
	}
	var kind string
	err = tx.QueryRow(ctx, `SELECT kind FROM ql3.script_entries WHERE project_id = $1 AND path = $2`, projectID, file).Scan(&kind)
	if (errors.Is(err, pgx.ErrNoRows) || (err == nil && kind != "file")) && cmd.Script == nil {
		// A shell task's task line may name a script not written yet, as
		// QingLong (and its Open API clients) allow: it is pinned when the
		// file is written (RepinScriptTasks); until then a worker refuses
		// to start it, saying so.
		return nil, nil, nil
	}
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && kind != "file") {
		return nil, nil, errs.Invalidf(field, "%q is not a file of the project's scripts folder (write it first: PUT /api/v1/projects/{project}/scripts/content)", file)
	}
	if err != nil {
		return nil, nil, err
	}
	d := scriptpath.Dir(file)
	digest, err := SnapshotScriptTree(ctx, tx, projectID, d)
	if err != nil {
		return nil, nil, errs.Prefix(strings.TrimSuffix(field, ".file"), err)
	}
	return d, digest[:], nil
}

// scriptFile is the file of the scripts folder cmd runs, "" for none: a
// script task's, or the FILE of a shell task's `task FILE [ARGS]` line
// (scriptpath.ShellTask), which the cluster runs as a script task runs —
// its tree pinned here, the worker starting the interpreter on it — while
// the task keeps its spec as written. field names it in errors.
func scriptFile(cmd spec.Command) (file, field string) {
	if cmd.Script != nil {
		return cmd.Script.File, "spec.script.file"
	}
	if cmd.Shell != nil {
		if tc, ok, err := scriptpath.ShellTask(cmd.Shell.Command); ok && err == nil {
			return tc.File, "spec.shell.command"
		}
	}
	return "", ""
}

// checkShellTask refuses, at publish, a shell task's `task` line that the
// edge's helper would refuse at run time (the same message: malformed,
// conc/desi) or whose file no interpreter runs.
func checkShellTask(cmd spec.Command) error {
	if cmd.Shell == nil {
		return nil
	}
	tc, ok, err := scriptpath.ShellTask(cmd.Shell.Command)
	switch {
	case !ok:
		return nil
	case err != nil:
		return errs.Prefix("spec.shell", err)
	}
	_, err = scriptpath.DefaultInterpretersTable().For("spec.shell.command", tc.File)
	return err
}

// SnapshotScriptTree records the tree of dir ("" = the whole folder) of a
// project's scripts folder as it is in tx and returns its digest. The same
// files give the same digest, stored once.
func SnapshotScriptTree(ctx context.Context, tx pgx.Tx, projectID uuid.UUID, dir string) (canonjson.Digest, error) {
	if d, ok := treeMemoOf(ctx).get(projectID, dir); ok { // importtx.go
		return d, nil
	}
	rows, err := tx.Query(ctx, `SELECT path, sha256, size, executable FROM ql3.script_entries
		WHERE project_id = $1 AND kind = 'file' AND ($2::text = '' OR starts_with(path, $2::text || '/'))
		ORDER BY path`, projectID, dir)
	if err != nil {
		return canonjson.Digest{}, err
	}
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	files, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (scriptpath.TreeFile, error) {
		var f scriptpath.TreeFile
		var sum []byte
		if err := r.Scan(&f.Path, &sum, &f.Size, &f.Executable); err != nil {
			return f, err
		}
		if len(sum) != len(f.SHA256) {
			return f, fmt.Errorf("postgres: script blob digest has %d bytes", len(sum))
		}
		copy(f.SHA256[:], sum)
		f.Path = strings.TrimPrefix(f.Path, prefix)
		return f, nil
	})
	if err != nil {
		return canonjson.Digest{}, err
	}
	digest, err := scriptpath.TreeDigest(files)
	if err != nil {
		return canonjson.Digest{}, err
	}
	var total int64
	for _, f := range files {
		total += f.Size
	}
	treeMemoOf(ctx).put(projectID, dir, digest)
	tag, err := tx.Exec(ctx, `INSERT INTO ql3.script_trees (project_id, digest, files, bytes, created_at_ms)
		VALUES ($1, $2, $3, $4, `+dbNowMs+`) ON CONFLICT DO NOTHING`, projectID, digest[:], len(files), total)
	if err != nil || tag.RowsAffected() == 0 {
		return digest, err
	}
	b := &pgx.Batch{}
	for _, f := range files {
		b.Queue(`INSERT INTO ql3.script_tree_files (project_id, tree_digest, path, sha256, size, executable)
			VALUES ($1, $2, $3, $4, $5, $6)`, projectID, digest[:], f.Path, f.SHA256[:], f.Size, f.Executable)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return canonjson.Digest{}, err
	}
	return digest, nil
}

// RepinScriptTasks gives every live script task of the project whose tree
// covers one of changed (paths of the scripts folder that were written,
// moved or deleted in tx) a new task revision with the same spec and the
// tree as it is now, and moves its triggers onto it; so it does to a
// shell task's task line published before its file existed once the file
// is written. A task whose script file is gone is a conflict naming it: a
// script a task runs is not deleted or moved away under it. It returns how
// many tasks moved.
func RepinScriptTasks(ctx context.Context, tx pgx.Tx, projectID uuid.UUID, changed []string) (int, error) {
	if len(changed) == 0 {
		return 0, nil
	}
	rows, err := tx.Query(ctx, `SELECT t.task_id, t.name, t.head_revision, e.canonical_spec, e.script_dir, e.script_tree
		FROM ql3.tasks t
		JOIN ql3.execution_revisions e ON e.task_id = t.task_id AND e.task_revision = t.head_revision
		WHERE t.project_id = $1 AND t.deleted_at_ms IS NULL AND ((e.script_tree IS NOT NULL
		  AND EXISTS (SELECT 1 FROM unnest($2::text[]) c(p)
		              WHERE e.script_dir = '' OR c.p = e.script_dir OR starts_with(c.p, e.script_dir || '/')
		                 OR starts_with(e.script_dir, c.p || '/')))
		  OR (e.script_tree IS NULL AND e.canonical_spec::jsonb->'shell'->>'command' ~ '^\s*(ql3-)?task\s'))
		ORDER BY t.task_id FOR UPDATE OF t`, projectID, changed)
	if err != nil {
		return 0, err
	}
	type pinned struct {
		id        uuid.UUID
		name      string
		head      int64
		canonical string
		dir       *string
		tree      []byte
	}
	tasks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pinned, error) {
		var p pinned
		err := r.Scan(&p.id, &p.name, &p.head, &p.canonical, &p.dir, &p.tree)
		return p, err
	})
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, t := range tasks {
		cmd, err := spec.Decode([]byte(t.canonical))
		if err != nil {
			return moved, errs.E(errs.Internal, "", "stored spec of task %s does not decode: %v", t.id, err)
		}
		cs, err := compileSpec(cmd)
		if err != nil {
			return moved, errs.E(errs.Internal, "", "stored spec of task %s does not compile: %v", t.id, err)
		}
		var kind string
		file, _ := scriptFile(cmd)
		if t.tree == nil && (file == "" || !coversAny(changed, file)) {
			continue // an unpinned task line whose file this change did not write
		}
		err = tx.QueryRow(ctx, `SELECT kind FROM ql3.script_entries WHERE project_id = $1 AND path = $2`, projectID, file).Scan(&kind)
		if t.tree == nil && (errors.Is(err, pgx.ErrNoRows) || (err == nil && kind != "file")) {
			continue
		}
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && kind != "file") {
			return moved, errs.E(errs.Conflict, "path", "task %q (%s) runs %q: change or delete the task first", t.name, t.id, file)
		}
		if err != nil {
			return moved, err
		}
		dir := scriptpath.Dir(file)
		if t.dir != nil {
			dir = *t.dir
		}
		now, err := SnapshotScriptTree(ctx, tx, projectID, dir)
		if err != nil {
			return moved, errs.E(errs.Conflict, "path", "task %q (%s) would run a tree that is not valid: %v", t.name, t.id, err)
		}
		if string(now[:]) == string(t.tree) {
			continue
		}
		rev := t.head + 1
		if _, err := tx.Exec(ctx, `INSERT INTO ql3.task_revisions (task_id, revision, project_id, spec, spec_digest, created_at_ms)
			VALUES ($1, $2, $3, $4::text::jsonb, $5, `+dbNowMs+`)`, t.id, rev, projectID, string(cs.canonical), cs.digest[:]); err != nil {
			return moved, err
		}
		pin, err := insertExecutionRevision(ctx, tx, projectID, t.id, rev, cs)
		if err != nil {
			return moved, err
		}
		if _, err := tx.Exec(ctx, `UPDATE ql3.tasks SET head_revision = $2, updated_at_ms = greatest(updated_at_ms, `+dbNowMs+`)
			WHERE task_id = $1 AND head_revision = $3`, t.id, rev, t.head); err != nil {
			return moved, err
		}
		if err := repinTriggers(ctx, tx, t.id, rev, pin, projectID); err != nil {
			return moved, err
		}
		moved++
	}
	return moved, nil
}

// coversAny: file is one of paths or lies inside one of them.
func coversAny(paths []string, file string) bool {
	for _, p := range paths {
		if p == file || p == "" || strings.HasPrefix(file, p+"/") {
			return true
		}
	}
	return false
}
