package scriptstore

import (
	"context"
	"sort"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// AuditReplace is the audit action of a folder published whole (a
// subscription's pull, ADR 0061).
const AuditReplace = "script.replace"

var _ controlplane.ScriptDirPublisher = (*Store)(nil)

// ReplaceScriptDir makes dir hold exactly the files walk yields, in one
// transaction: every path through scriptpath.Clean, the folder's limits
// checked over the result, files a live script task still runs kept (and
// reported), the script tasks of the folder re-pinned, one audit line.
func (s *Store) ReplaceScriptDir(ctx context.Context, projectID, dir string, walk func(yield func(controlplane.ScriptDirFile) error) error) (controlplane.ScriptDirResult, error) {
	dc, err := scriptpath.Clean("path", dir, false)
	if err != nil {
		return controlplane.ScriptDirResult{}, err
	}
	var res controlplane.ScriptDirResult
	err = s.inTx(ctx, projectID, func(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
		res = controlplane.ScriptDirResult{}
		e, ok, err := getEntry(ctx, tx, project, dc)
		if err != nil {
			return err
		}
		if ok && e.kind != controlplane.ScriptKindDir {
			return errs.Conflictf("%q is a file in the scripts folder, not a folder", dc)
		}
		// Files a live script task runs stay, whatever the new tree holds.
		rows, err := tx.Query(ctx, `SELECT DISTINCT e.canonical_spec::jsonb->'script'->>'file'
			FROM ql3.tasks t JOIN ql3.execution_revisions e ON e.task_id = t.task_id AND e.task_revision = t.head_revision
			WHERE t.project_id = $1 AND t.deleted_at_ms IS NULL
			  AND starts_with(e.canonical_spec::jsonb->'script'->>'file', $2 || '/')`, project, dc)
		if err != nil {
			return err
		}
		running, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		before, err := getUsage(ctx, tx, project)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM ql3.script_entries WHERE project_id = $1 AND starts_with(path, $2 || '/')
			AND NOT (path = ANY($3::text[]))`, project, dc, running)
		if err != nil {
			return err
		}
		res.Removed = int(tag.RowsAffected())
		dirs := map[string]bool{}
		ensureDir := func(d string) error {
			var chain []string
			for ; d != "" && !dirs[d]; d = scriptpath.Dir(d) {
				chain = append(chain, d)
			}
			for i := len(chain) - 1; i >= 0; i-- {
				c := chain[i]
				dirs[c] = true
				e, ok, err := getEntry(ctx, tx, project, c)
				if err != nil {
					return err
				}
				if ok && e.kind != controlplane.ScriptKindDir {
					return errs.Conflictf("%q is a file in the scripts folder, the tree has a folder there", c)
				}
				if !ok {
					if err := insertDir(ctx, tx, project, c); err != nil {
						return err
					}
				}
			}
			return nil
		}
		written := map[string]bool{}
		err = walk(func(f controlplane.ScriptDirFile) error {
			p, err := scriptpath.Clean("path", dc+"/"+f.Path, false)
			if err != nil {
				return err
			}
			if int64(len(f.Data)) > scriptpath.MaxFileBytes {
				return errs.TooLargef("path", "%q is %d bytes, limit is %d", p, len(f.Data), scriptpath.MaxFileBytes)
			}
			if err := ensureDir(scriptpath.Dir(p)); err != nil {
				return err
			}
			if e, ok, err := getEntry(ctx, tx, project, p); err != nil {
				return err
			} else if ok && e.kind == controlplane.ScriptKindDir {
				return errs.Conflictf("%q is a folder in the scripts folder, the tree has a file there", p)
			}
			if _, err := putFile(ctx, tx, project, p, f.Data, f.Executable); err != nil {
				return err
			}
			written[p] = true
			res.Files++
			res.Bytes += int64(len(f.Data))
			return nil
		})
		if err != nil {
			return err
		}
		if err := ensureDir(dc); err != nil {
			return err
		}
		for _, p := range running {
			if !written[p] {
				res.Kept = append(res.Kept, p)
			}
		}
		sort.Strings(res.Kept)
		after, err := getUsage(ctx, tx, project)
		if err != nil {
			return err
		}
		if err := scriptpath.CheckLimits(before.entries, before.bytes, after.entries-before.entries, after.bytes-before.bytes); err != nil {
			return err
		}
		if res.Repinned, err = publication.RepinScriptTasks(ctx, tx, project, []string{dc}); err != nil {
			return err
		}
		return audit(ctx, tx, AuditReplace, project, map[string]any{"path": dc, "files": res.Files, "bytes": res.Bytes,
			"removed": res.Removed, "kept": len(res.Kept)})
	})
	return res, err
}
