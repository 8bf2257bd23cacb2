package adminapi

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptarchive"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/httpkit"
)

// A project's scripts folder (ADR 0052): the edge's routes and shapes
// (ADR 0044) under the project, so one client and the panel's scripts page
// serve both binaries. Content is raw bytes (application/octet-stream, a
// type no cross-site form can send); the ETag is the content's SHA-256.
// Each change is audited in its own transaction (GET /api/v1/audit,
// action script.*).
//
//	GET    /api/v1/projects/{project}/scripts?path=DIR            one level
//	GET    /api/v1/projects/{project}/scripts/tree?path=DIR       every file under DIR and the tree digest
//	GET    /api/v1/projects/{project}/scripts/content?path=FILE   bytes, ETag
//	PUT    /api/v1/projects/{project}/scripts/content?path=FILE   If-None-Match: * | If-Match: ETag; stale → 412
//	POST   /api/v1/projects/{project}/scripts/folder              {path}
//	POST   /api/v1/projects/{project}/scripts/move                {from, to}
//	DELETE /api/v1/projects/{project}/scripts?path=P[&recursive=true]
//	POST   /api/v1/projects/{project}/scripts/upload?path=DIR&format=tar|tar.gz|zip[&overwrite=true]
//	POST   /api/v1/projects/{project}/scripts/run                 {path, args, idempotencyKey}: a normal Run

const scriptContentType = httpkit.RawContentType

func (s *Server) scriptRoutes(mux httpkit.Mux) {
	const base = "/api/v1/projects/{project}/scripts"
	mux.HandleFunc("GET "+base, s.withProjectScripts(s.listScripts))
	mux.HandleFunc("GET "+base+"/tree", s.withProjectScripts(s.scriptTree))
	mux.HandleFunc("GET "+base+"/content", s.withProjectScripts(s.readScript))
	mux.HandleFunc("PUT "+base+"/content", s.withProjectScripts(s.writeScript))
	mux.HandleFunc("POST "+base+"/folder", s.withProjectScripts(s.mkdirScript))
	mux.HandleFunc("POST "+base+"/move", s.withProjectScripts(s.moveScript))
	mux.HandleFunc("DELETE "+base, s.withProjectScripts(s.deleteScript))
	mux.HandleFunc("POST "+base+"/upload", s.withProjectScripts(s.uploadScripts))
	mux.HandleFunc("POST "+base+"/run", s.withProjectScripts(s.runScript))
}

// withProjectScripts resolves {project} (id or name) and answers 503 when
// the server has no scripts store.
func (s *Server) withProjectScripts(h func(w http.ResponseWriter, r *http.Request, project controlplane.Project)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.scripts == nil {
			s.fail(w, r, errs.E(errs.Unavailable, "", "this server has no scripts store"))
			return
		}
		p, err := s.b.GetProject(r.Context(), r.PathValue("project"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		h(w, r, p)
	}
}

func (s *Server) listScripts(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	dir := r.URL.Query().Get("path")
	entries, err := s.scripts.ListScripts(r.Context(), p.ID, dir)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, ScriptList{Path: dir, Entries: entries})
}

func (s *Server) scriptTree(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	dir := r.URL.Query().Get("path")
	tree, err := s.scripts.ScriptTreeOf(r.Context(), p.ID, dir)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := ScriptTreeView{Path: dir, Digest: tree.Digest.String(), Files: make([]ScriptTreeFile, len(tree.Files))}
	for i, f := range tree.Files {
		out.Files[i] = ScriptTreeFile{Path: f.Path, Size: f.Size, Executable: f.Executable,
			SHA256: strings.TrimPrefix(canonjson.Digest(f.SHA256).String(), "sha256:")}
		out.Bytes += f.Size
	}
	w.Header().Set("ETag", `"`+out.Digest+`"`)
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) readScript(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	data, etag, err := s.scripts.ReadScript(r.Context(), p.ID, r.URL.Query().Get("path"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteRawFile(w, data, etag)
}

// staleFail answers a failed precondition 412 with the current ETag.
func staleFail(w http.ResponseWriter, err error) bool {
	var st *controlplane.ScriptStaleError
	if !errors.As(err, &st) {
		return false
	}
	httpkit.WritePreconditionFailed(w, st.Current, st)
	return true
}

func (s *Server) writeScript(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	path := r.URL.Query().Get("path")
	inm := strings.TrimSpace(r.Header.Get("If-None-Match"))
	if inm != "" && inm != "*" {
		s.fail(w, r, errs.Invalidf("If-None-Match", "only * (create) is understood"))
		return
	}
	if _, err := scriptpath.Clean("path", path, false); err != nil {
		s.fail(w, r, err)
		return
	}
	data, err := httpkit.ReadRaw(w, r, scriptpath.MaxFileBytes)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.scripts.WriteScript(r.Context(), p.ID, path, data,
		controlplane.ScriptPrecondition{IfNoneMatch: inm == "*", IfMatch: httpkit.IfMatchTag(r.Header.Get("If-Match"))})
	if staleFail(w, err) {
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	w.Header().Set("ETag", `"`+res.ETag+`"`)
	httpkit.WriteJSON(w, status, ScriptWritten{Path: path, ETag: res.ETag, Size: int64(len(data)), Created: res.Created, Repinned: res.Repinned})
}

func (s *Server) mkdirScript(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	var req ScriptFolderRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.scripts.MkdirScript(r.Context(), p.ID, req.Path); err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, req)
}

func (s *Server) moveScript(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	var req ScriptMoveRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.scripts.MoveScript(r.Context(), p.ID, req.From, req.To); err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, req)
}

func queryBool(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, errs.Invalidf(name, "must be true or false, got %.16q", v)
	}
}

func (s *Server) deleteScript(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	recursive, err := queryBool(r, "recursive")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.scripts.DeleteScript(r.Context(), p.ID, r.URL.Query().Get("path"), recursive); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// uploadScripts spools the archive to a temporary file (an archive is up
// to 512 MiB), then unpacks it in one transaction.
func (s *Server) uploadScripts(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	q := r.URL.Query()
	dir, format := q.Get("path"), q.Get("format")
	overwrite, err := queryBool(r, "overwrite")
	if err == nil {
		_, err = scriptpath.Clean("path", dir, true)
	}
	if err == nil {
		err = scriptarchive.CheckFormat(format)
	}
	if err == nil {
		err = httpkit.CheckRawContentType(r)
	}
	if err == nil && r.ContentLength > scriptarchive.MaxArchiveBytes {
		err = errs.TooLargef("", "request body is %d bytes, limit is %d", r.ContentLength, int64(scriptarchive.MaxArchiveBytes))
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	tmp, err := os.CreateTemp("", "ql3-upload-*")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	defer func() { tmp.Close(); os.Remove(tmp.Name()) }()
	n, err := io.Copy(tmp, http.MaxBytesReader(w, r.Body, scriptarchive.MaxArchiveBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		err = errs.TooLargef("", "request body exceeds the limit of %d bytes", int64(scriptarchive.MaxArchiveBytes))
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.scripts.UploadScripts(r.Context(), p.ID, dir, format, tmp, n, overwrite)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, res)
}

// scriptTaskName is the task an ad-hoc run of a script belongs to (the
// edge's name).
func scriptTaskName(p string) string { return "script: " + p }

// runScript runs a script now: a normal Run (logs, cancel, history) of the
// project's task "script: PATH" (created disabled, without triggers, on
// first use; its arguments follow the request), through run-now.
func (s *Server) runScript(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	ops, err := s.runOps()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req ScriptRunRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	key, err := idempotencyKey(r.Header.Get("Idempotency-Key"), req.IdempotencyKey)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	file, err := scriptpath.Clean("path", req.Path, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cmd := spec.Command{Kind: spec.KindCommandV1, Script: &spec.Script{File: file, Args: req.Args}, Concurrency: spec.ConcurrencyAllow}.WithDefaults()
	task, err := s.scriptTask(r, p, file, cmd)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := ops.RunNow(r.Context(), controlplane.RunNowInput{TaskID: task.ID, IdempotencyKey: key, Actor: actorID(r)})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	run, err := s.b.GetRun(r.Context(), res.RunID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/runs/"+run.ID)
	}
	httpkit.WriteJSON(w, status, RunView{RunRecord: RunRecord(run), Created: &res.Created})
}

// maxScriptTaskPages bounds the search for a script's task by name.
const maxScriptTaskPages = 64

// scriptTask finds (or creates, or brings up to date) the script's own
// task in the project; a task of that name that runs something else is a
// conflict.
func (s *Server) scriptTask(r *http.Request, p controlplane.Project, file string, cmd spec.Command) (controlplane.Task, error) {
	name := scriptTaskName(file)
	page := controlplane.ListRequest{Limit: controlplane.MaxListLimit}
	for range maxScriptTaskPages {
		tasks, err := s.b.ListTasks(r.Context(), p.ID, page)
		if err != nil {
			return controlplane.Task{}, err
		}
		for _, t := range tasks.Items {
			if t.Name != name {
				continue
			}
			if t.Spec.Script == nil || t.Spec.Script.File != file {
				return controlplane.Task{}, errs.E(errs.Conflict, "path", "a task named %q exists and does not run this script", name)
			}
			if slicesEqual(t.Spec.Script.Args, cmd.Script.Args) {
				return t, nil
			}
			return s.b.PublishTask(r.Context(), controlplane.TaskInput{TaskID: t.ID, ExpectedRevision: t.Revision, Name: name, Spec: cmd})
		}
		if tasks.NextCursor == "" {
			break
		}
		page.Cursor = tasks.NextCursor
	}
	off := false
	return s.b.PublishTask(r.Context(), controlplane.TaskInput{ProjectID: p.ID, Name: name, Enabled: &off, Spec: cmd})
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Wire types of the scripts routes (the edge's shapes).
type (
	// ScriptList is one level of a folder.
	ScriptList struct {
		Path    string                     `json:"path"`
		Entries []controlplane.ScriptEntry `json:"entries"`
	}
	// ScriptTreeFile is one file of a tree.
	ScriptTreeFile struct {
		Path       string `json:"path"`
		Size       int64  `json:"size"`
		Executable bool   `json:"executable,omitempty"`
		SHA256     string `json:"sha256"`
	}
	// ScriptTreeView is every file under a folder and its tree digest
	// (what a script task there pins).
	ScriptTreeView struct {
		Path   string           `json:"path"`
		Digest string           `json:"digest"`
		Bytes  int64            `json:"bytes"`
		Files  []ScriptTreeFile `json:"files"`
	}
	// ScriptWritten answers a PUT of content.
	ScriptWritten struct {
		Path    string `json:"path"`
		ETag    string `json:"etag"`
		Size    int64  `json:"size"`
		Created bool   `json:"created"`
		// Repinned counts the script tasks that got a new revision
		// because their tree changed.
		Repinned int `json:"repinned"`
	}
	// ScriptFolderRequest makes a folder.
	ScriptFolderRequest struct {
		Path string `json:"path"`
	}
	// ScriptMoveRequest renames a file or folder.
	ScriptMoveRequest struct {
		From string `json:"from"`
		To   string `json:"to"`
	}
	// ScriptRunRequest runs a script now.
	ScriptRunRequest struct {
		Path           string   `json:"path"`
		Args           []string `json:"args,omitempty"`
		IdempotencyKey string   `json:"idempotencyKey,omitempty"`
	}
)
