package scriptstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// AuditImport is the audit line of the files an import put.
const AuditImport = "script.import"

// PutFile is one file an import puts into a scripts folder: its path, the
// size and SHA-256 the plan names, and how to read its bytes (called in
// the transaction, again when the transaction is retried).
type PutFile struct {
	Path   string
	Size   int64
	SHA256 string // lower-case hex
	Read   func() (data []byte, executable bool, err error)
}

// PutFilesTx writes files into the project's scripts folder inside the
// caller's transaction (the cluster import, ADR 0063): a path that already
// holds the same content is left as it is; a path holding other content or
// a folder refuses the whole import (the error lists up to ten); missing
// folders are made; the folder's limits are checked before anything is
// written; the script tasks whose tree changed are re-pinned and one audit
// line is written. It returns the number of files written.
func PutFilesTx(ctx context.Context, tx pgx.Tx, projectID string, files []PutFile) (int, error) {
	project, err := parseProject(projectID)
	if err != nil {
		return 0, err
	}
	if len(files) == 0 {
		return 0, nil
	}
	if err := lockActiveProject(ctx, tx, project); err != nil {
		return 0, err
	}
	u, err := getUsage(ctx, tx, project)
	if err != nil {
		return 0, err
	}
	var (
		clash      []string
		todo       []PutFile
		addEntries int
		addBytes   int64
		dirs       = map[string]bool{}
	)
	for _, f := range files {
		p, err := scriptpath.Clean("files", f.Path, false)
		if err != nil {
			return 0, err
		}
		e, ok, err := getEntry(ctx, tx, project, p)
		switch {
		case err != nil:
			return 0, err
		case ok && (e.kind == controlplane.ScriptKindDir || hex.EncodeToString(e.sum) != f.SHA256):
			clash = append(clash, p)
			continue
		case ok:
			continue // the same content is already there
		}
		for d := scriptpath.Dir(p); d != "" && !dirs[d]; d = scriptpath.Dir(d) {
			de, ok, err := getEntry(ctx, tx, project, d)
			if err != nil {
				return 0, err
			}
			if ok && de.kind != controlplane.ScriptKindDir {
				clash = append(clash, d)
				break
			}
			if ok {
				break
			}
			dirs[d] = true
			addEntries++
		}
		f.Path = p
		todo = append(todo, f)
		addEntries++
		addBytes += f.Size
	}
	if len(clash) > 0 {
		n := len(clash)
		if n > 10 {
			clash = append(clash[:10], fmt.Sprintf("and %d more", n-10))
		}
		return 0, errs.E(errs.Conflict, "files", "the project's scripts folder already has other content at %s: move it away or edit it, then apply again", strings.Join(clash, ", "))
	}
	if err := scriptpath.CheckLimits(u.entries, u.bytes, addEntries, addBytes); err != nil {
		return 0, errs.Prefix("files", err)
	}
	// Outermost first: a folder's parent is made before it.
	ordered := make([]string, 0, len(dirs))
	for d := range dirs {
		ordered = append(ordered, d)
	}
	sort.Slice(ordered, func(i, j int) bool {
		if a, b := strings.Count(ordered[i], "/"), strings.Count(ordered[j], "/"); a != b {
			return a < b
		}
		return ordered[i] < ordered[j]
	})
	for _, d := range ordered {
		if err := insertDir(ctx, tx, project, d); err != nil {
			return 0, err
		}
	}
	var bytes int64
	for _, f := range todo {
		data, exec, err := f.Read()
		if err != nil {
			return 0, err
		}
		sum, err := putFile(ctx, tx, project, f.Path, data, exec)
		if err != nil {
			return 0, err
		}
		if sum != f.SHA256 {
			return 0, errs.E(errs.Conflict, "files", "%s changed while it was copied: inspect again", f.Path)
		}
		bytes += int64(len(data))
	}
	if len(todo) == 0 {
		return 0, nil
	}
	if _, err := publication.RepinScriptTasks(ctx, tx, project, []string{""}); err != nil {
		return 0, err
	}
	return len(todo), audit(ctx, tx, AuditImport, project, map[string]any{"files": len(todo), "folders": len(ordered), "bytes": bytes})
}
