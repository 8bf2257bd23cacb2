package httpapi

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/scripts"
	"github.com/ql3/ql3/httpkit"
)

// The scripts folder's routes (ADR 0044). Every one needs the admin token
// or a panel session: script content is read like any other data (ADR
// 0039). Each change writes an audit line (GET /api/v1/audit).
//
//	GET    /api/v1/scripts?path=DIR               one level: name, kind, size, mtimeMs, sha256
//	GET    /api/v1/scripts/tree?path=DIR          every file under DIR and the tree digest
//	GET    /api/v1/scripts/content?path=FILE      bytes, ETag = "sha256 hex"
//	PUT    /api/v1/scripts/content?path=FILE      If-None-Match: * (create) | If-Match: ETag (replace); stale → 412
//	POST   /api/v1/scripts/folder                 {path}: a new folder
//	POST   /api/v1/scripts/move                   {from, to}: never over an existing path
//	DELETE /api/v1/scripts?path=P[&recursive=true]
//	POST   /api/v1/scripts/upload?path=DIR&format=tar|tar.gz|zip[&overwrite=true]   raw archive
//	POST   /api/v1/scripts/run                    {path, args, idempotencyKey}: run it now (a normal Run)

// Raw bodies carry this media type: not one a cross-site form can send.
const scriptContentType = httpkit.RawContentType

func (s *Server) scriptRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /api/v1/scripts", s.withScripts(s.listScripts))
	mux.HandleFunc("GET /api/v1/scripts/tree", s.withScripts(s.scriptTree))
	mux.HandleFunc("GET /api/v1/scripts/content", s.withScripts(s.readScript))
	mux.HandleFunc("PUT /api/v1/scripts/content", s.withScripts(s.writeScript))
	mux.HandleFunc("POST /api/v1/scripts/folder", s.withScripts(s.mkdirScript))
	mux.HandleFunc("POST /api/v1/scripts/move", s.withScripts(s.moveScript))
	mux.HandleFunc("DELETE /api/v1/scripts", s.withScripts(s.deleteScript))
	mux.HandleFunc("POST /api/v1/scripts/upload", s.withScripts(s.uploadScripts))
	mux.HandleFunc("POST /api/v1/scripts/run", s.withScripts(s.runScript))
}

func (s *Server) withScripts(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.scripts == nil {
			httpkit.Fail(w, r, s.log, errs.E(errs.Unavailable, "", "this server has no scripts folder"))
			return
		}
		h(w, r)
	}
}

// audit writes one line for a change; a failure is logged (the change
// itself is already on disk).
func (s *Server) audit(r *http.Request, action, target, detail string) {
	if s.auditLog == nil {
		return
	}
	if err := s.auditLog.AppendAudit(r.Context(), edge.AuditEntry{AtMs: s.now().UnixMilli(), Action: action, Target: target,
		Actor: s.actor(r), Detail: detail}); err != nil {
		s.log.ErrorContext(r.Context(), "writing an audit line", "action", action, "err", err)
	}
}

func (s *Server) listScripts(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	entries, err := s.scripts.List(p)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := ScriptList{Path: p, Entries: make([]ScriptEntry, len(entries))}
	for i, e := range entries {
		out.Entries[i] = ScriptEntry(e)
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) scriptTree(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	files, d, err := s.scripts.Tree(p)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := ScriptTree{Path: p, Digest: d.String(), Files: make([]ScriptTreeFile, len(files))}
	for i, f := range files {
		out.Files[i] = ScriptTreeFile{Path: f.Path, Size: f.Size, Executable: f.Executable, SHA256: canonjson.Digest(f.SHA256).String()[len("sha256:"):]}
		out.Bytes += f.Size
	}
	w.Header().Set("ETag", `"`+d.String()+`"`)
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) readScript(w http.ResponseWriter, r *http.Request) {
	data, etag, err := s.scripts.Read(r.URL.Query().Get("path"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteRawFile(w, data, etag)
}

func staleFail(w http.ResponseWriter, err error) bool {
	var st *scripts.StaleError
	if !errors.As(err, &st) {
		return false
	}
	httpkit.WritePreconditionFailed(w, st.Current, st)
	return true
}

func (s *Server) writeScript(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	pre := scripts.Precondition{IfNoneMatch: strings.TrimSpace(r.Header.Get("If-None-Match")) == "*", IfMatch: httpkit.IfMatchTag(r.Header.Get("If-Match"))}
	if inm := strings.TrimSpace(r.Header.Get("If-None-Match")); inm != "" && inm != "*" {
		httpkit.Fail(w, r, s.log, errs.Invalidf("If-None-Match", "only * (create) is understood"))
		return
	}
	if _, err := scriptpath.Clean("path", p, false); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	data, err := httpkit.ReadRaw(w, r, scriptpath.MaxFileBytes)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	etag, created, err := s.scripts.Write(p, data, pre)
	if staleFail(w, err) {
		return
	}
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	action, status := edge.AuditScriptWrite, http.StatusOK
	if created {
		action, status = edge.AuditScriptCreate, http.StatusCreated
	}
	s.audit(r, action, p, "sha256 "+etag)
	w.Header().Set("ETag", `"`+etag+`"`)
	httpkit.WriteJSON(w, status, ScriptWritten{Path: p, ETag: etag, Size: int64(len(data)), Created: created})
}

func (s *Server) mkdirScript(w http.ResponseWriter, r *http.Request) {
	var req ScriptFolderRequest
	if err := httpkit.DecodeJSON(w, r, s.maxBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if err := s.scripts.Mkdir(req.Path); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	s.audit(r, edge.AuditScriptMkdir, req.Path, "")
	httpkit.WriteJSON(w, http.StatusCreated, ScriptFolderRequest{Path: req.Path})
}

func (s *Server) moveScript(w http.ResponseWriter, r *http.Request) {
	var req ScriptMoveRequest
	if err := httpkit.DecodeJSON(w, r, s.maxBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if err := s.scripts.Move(req.From, req.To); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	s.audit(r, edge.AuditScriptMove, req.From, "to "+req.To)
	httpkit.WriteJSON(w, http.StatusOK, req)
}

func (s *Server) deleteScript(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	recursive, err := queryBool(r, "recursive")
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if err := s.scripts.Delete(p, recursive); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	s.audit(r, edge.AuditScriptDelete, p, "")
	w.WriteHeader(http.StatusNoContent)
}

// uploadScripts spools the archive to a temporary file next to the
// folder (not /tmp, which is memory on a router), then unpacks it.
func (s *Server) uploadScripts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	dir, format := q.Get("path"), q.Get("format")
	overwrite, err := queryBool(r, "overwrite")
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if _, err := scriptpath.Clean("path", dir, true); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	switch format {
	case scripts.FormatTar, scripts.FormatTarGz, scripts.FormatZip:
	default:
		httpkit.Fail(w, r, s.log, errs.Invalidf("format", "must be tar, tar.gz or zip, got %q (a single file is PUT to /api/v1/scripts/content)", format))
		return
	}
	if err := httpkit.CheckRawContentType(r); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if r.ContentLength > scripts.MaxArchiveBytes {
		httpkit.Fail(w, r, s.log, errs.TooLargef("", "request body is %d bytes, limit is %d", r.ContentLength, int64(scripts.MaxArchiveBytes)))
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.scripts.Root()), ".ql3-upload-*")
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	defer func() { tmp.Close(); os.Remove(tmp.Name()) }()
	_, err = io.Copy(tmp, http.MaxBytesReader(w, r.Body, scripts.MaxArchiveBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		httpkit.Fail(w, r, s.log, errs.TooLargef("", "request body exceeds the limit of %d bytes", int64(scripts.MaxArchiveBytes)))
		return
	}
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	res, err := s.scripts.Upload(dir, format, tmp, overwrite)
	if res.Files+res.Folders > 0 {
		s.audit(r, edge.AuditScriptUpload, dir, format+": "+strconv.Itoa(res.Files)+" files, "+strconv.Itoa(res.Folders)+" folders")
	}
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, ScriptUploadResult(res))
}

// checkInterpreter refuses a script task whose extension this server
// cannot run (its interpreter table, with the operator's overrides), at
// publish rather than at 3 a.m.; whether the program is installed is the
// start's question.
func (s *Server) checkInterpreter(c spec.Command) error {
	if c.Script == nil || s.interps == nil {
		return nil
	}
	_, err := s.interps.For("spec.script.file", c.Script.File)
	return err
}

// scriptTaskName is the task an ad-hoc run of a script belongs to.
func scriptTaskName(p string) string { return "script: " + p }

// runScript runs a script now: a normal Run (logs, cancel, history) of
// the script's own task, "script: PATH" (created disabled, without
// triggers, on first use; its arguments follow the request), with no
// trigger.
func (s *Server) runScript(w http.ResponseWriter, r *http.Request) {
	var req ScriptRunRequest
	if err := httpkit.DecodeJSON(w, r, s.maxBody, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	key, err := httpkit.IdempotencyKey(r.Header.Get("Idempotency-Key"), req.IdempotencyKey)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	e, err := s.scripts.Stat(req.Path)
	if err == nil && e.Kind != scripts.KindFile {
		err = errs.Invalidf("path", "%q is a folder", req.Path)
	}
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	cmd := spec.Command{Kind: spec.KindCommandV1, Script: &spec.Script{File: req.Path, Args: req.Args}, Concurrency: spec.ConcurrencyAllow}.WithDefaults()
	if err := s.checkInterpreter(cmd); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	task, err := s.scriptTask(r, req.Path, cmd)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	rn, created, err := s.store.CreateManualRun(r.Context(), edge.ManualRun{TaskID: task.ID, IdempotencyKey: key})
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	v := runView(rn, nil)
	v.Created = &created
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/runs/"+rn.ID)
		s.audit(r, edge.AuditScriptRun, req.Path, "run "+rn.ID)
	}
	httpkit.WriteJSON(w, status, v)
}

// scriptTask finds (or creates, or brings up to date) the script's own
// task. A task of that name that is not this script's is a conflict.
func (s *Server) scriptTask(r *http.Request, p string, cmd spec.Command) (edge.Task, error) {
	name := scriptTaskName(p)
	if _, err := edge.CheckTaskName(name); err != nil {
		return edge.Task{}, errs.Invalidf("path", "is too long to name its task (%v)", err)
	}
	t, err := s.store.GetTaskByName(r.Context(), name)
	if errs.Code(err) == errs.NotFound {
		return s.store.CreateTask(r.Context(), edge.NewTask{Name: name, Spec: cmd, Enabled: false})
	}
	if err != nil {
		return edge.Task{}, err
	}
	if t.Spec.Script == nil || t.Spec.Script.File != p {
		return edge.Task{}, errs.E(errs.Conflict, "path", "a task named %q exists and does not run this script", name)
	}
	want, err := edge.CompileSpec(cmd)
	if err != nil {
		return edge.Task{}, err
	}
	if want.Digest == t.Digest {
		return t, nil
	}
	return s.store.UpdateTask(r.Context(), t.ID, t.Revision, edge.TaskUpdate{Name: name, Spec: cmd})
}
