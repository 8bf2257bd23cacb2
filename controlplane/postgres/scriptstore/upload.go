package scriptstore

import (
	"context"
	"io"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptarchive"
	"github.com/ql3/ql3/core/scriptpath"
)

// UploadScripts unpacks an archive into dir in one transaction: the whole
// archive is checked first (core/scriptarchive: clean names, only files
// and folders, the limits), then against the folder (no file replaced
// unless overwrite, no file where a folder is or the other way round, the
// folder's limits), and nothing is written unless all of it passes.
func (s *Store) UploadScripts(ctx context.Context, projectID, dir, format string, src io.ReaderAt, size int64, overwrite bool) (controlplane.ScriptUploadResult, error) {
	dc, err := scriptpath.Clean("path", dir, true)
	if err != nil {
		return controlplane.ScriptUploadResult{}, err
	}
	members, err := scriptarchive.ReadArchive(format, src, size)
	if err != nil {
		return controlplane.ScriptUploadResult{}, err
	}
	full := func(p string) string {
		if dc == "" {
			return p
		}
		return dc + "/" + p
	}
	var res controlplane.ScriptUploadResult
	err = s.inTx(ctx, projectID, func(ctx context.Context, tx pgx.Tx, project uuid.UUID) error {
		res = controlplane.ScriptUploadResult{}
		u, err := getUsage(ctx, tx, project)
		if err != nil {
			return err
		}
		var addEntries int
		var addBytes int64
		newDirs := map[string]bool{}
		var dirs []string
		wantDir := func(d string) error {
			for ; d != "" && !newDirs[d]; d = scriptpath.Dir(d) {
				e, ok, err := getEntry(ctx, tx, project, d)
				if err != nil {
					return err
				}
				if ok && e.kind != controlplane.ScriptKindDir {
					return errs.Conflictf("archive: %q is a file in the scripts folder, the archive has a folder there", d)
				}
				if ok {
					return nil
				}
				newDirs[d] = true
				dirs = append(dirs, d)
				addEntries++
			}
			return nil
		}
		if err := wantDir(dc); err != nil {
			return err
		}
		for _, m := range members {
			p := full(m.Path)
			if _, err := scriptpath.Clean("archive", p, false); err != nil {
				return err
			}
			if m.Dir {
				if err := wantDir(p); err != nil {
					return err
				}
				continue
			}
			if err := wantDir(scriptpath.Dir(p)); err != nil {
				return err
			}
			e, ok, err := getEntry(ctx, tx, project, p)
			switch {
			case err != nil:
				return err
			case ok && e.kind == controlplane.ScriptKindDir:
				return errs.Conflictf("archive: %q is a folder in the scripts folder, the archive has a file there", p)
			case ok && !overwrite:
				return errs.Conflictf("archive: %q already exists (upload with overwrite=true to replace it)", p)
			case ok:
				addBytes += m.Size - e.size
			default:
				addEntries++
				addBytes += m.Size
			}
		}
		if err := scriptpath.CheckLimits(u.entries, u.bytes, addEntries, addBytes); err != nil {
			return err
		}
		// Outermost first: a folder's parent is made before it.
		for len(dirs) > 0 {
			progress := false
			rest := dirs[:0]
			for _, d := range dirs {
				if parent := scriptpath.Dir(d); parent != "" && newDirs[parent] {
					rest = append(rest, d)
					continue
				}
				if err := insertDir(ctx, tx, project, d); err != nil {
					return err
				}
				delete(newDirs, d)
				res.Folders++
				progress = true
			}
			dirs = rest
			if !progress {
				return errs.E(errs.Internal, "", "archive: folders do not resolve")
			}
		}
		changed := []string{dc}
		err = scriptarchive.WalkArchiveFiles(format, src, size, func(m scriptarchive.ArchiveMember, r io.Reader) error {
			data, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			if _, err := putFile(ctx, tx, project, full(m.Path), data, m.Executable); err != nil {
				return err
			}
			res.Files++
			res.Bytes += m.Size
			return nil
		})
		if err != nil {
			return err
		}
		if _, err := publication.RepinScriptTasks(ctx, tx, project, changed); err != nil {
			return err
		}
		return audit(ctx, tx, AuditUpload, project, map[string]any{"path": dc, "format": format,
			"files": res.Files, "folders": res.Folders, "bytes": res.Bytes})
	})
	return res, err
}

// ScriptTreeOf returns the files of a folder and its tree digest (what a
// script task in that folder would pin), without recording it.
func (s *Store) ScriptTreeOf(ctx context.Context, projectID, dir string) (controlplane.ScriptTree, error) {
	project, err := parseProject(projectID)
	if err != nil {
		return controlplane.ScriptTree{}, err
	}
	d, err := scriptpath.Clean("path", dir, true)
	if err != nil {
		return controlplane.ScriptTree{}, err
	}
	rows, err := s.db.Query(ctx, `SELECT substr(path, length($2) + 1 + (CASE WHEN $2 = '' THEN 0 ELSE 1 END)), sha256, size, executable
		FROM ql3.script_entries WHERE project_id = $1 AND kind = 'file' AND ($2 = '' OR starts_with(path, $2 || '/'))
		ORDER BY path LIMIT $3`, project, d, scriptpath.MaxEntries+1)
	if err != nil {
		return controlplane.ScriptTree{}, err
	}
	files, err := collectTreeFiles(rows)
	if err != nil {
		return controlplane.ScriptTree{}, err
	}
	digest, err := scriptpath.TreeDigest(files)
	return controlplane.ScriptTree{Digest: digest, Files: files}, err
}

func collectTreeFiles(rows pgx.Rows) ([]scriptpath.TreeFile, error) {
	files, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (scriptpath.TreeFile, error) {
		var f scriptpath.TreeFile
		var sum []byte
		if err := r.Scan(&f.Path, &sum, &f.Size, &f.Executable); err != nil {
			return f, err
		}
		if len(sum) != len(f.SHA256) {
			return f, errs.E(errs.Internal, "", "a script blob digest has %d bytes", len(sum))
		}
		copy(f.SHA256[:], sum)
		return f, nil
	})
	if files == nil {
		files = []scriptpath.TreeFile{}
	}
	return files, err
}
