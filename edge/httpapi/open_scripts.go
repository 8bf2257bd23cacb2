package httpapi

import (
	"mime"
	"net/http"
	"path"
	"strconv"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlopen"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/scripts"
	"github.com/ql3/ql3/httpkit"
)

// QingLong's /open/scripts on the edge's scripts folder (ADR 0057). The
// routes and bodies are QingLong v2.21.0's back/api/script.ts as its own
// panel calls them (src/pages/script/index.tsx, editNameModal.tsx,
// renameModal.tsx):
//
//	GET    /open/scripts[?path=]                 the tree (or one level) of IFile
//	GET    /open/scripts/detail?file=&path=      → data: the content
//	GET    /open/scripts/{file}?path=            → data: the content
//	POST   /open/scripts                         {filename, path?, content?, originFilename?, directory?} (JSON or multipart)
//	PUT    /open/scripts                         {filename, path?, content}
//	DELETE /open/scripts                         {filename, path?, type?}
//	PUT    /open/scripts/rename                  {filename, path?, newFilename}
//	POST   /open/scripts/download                {filename, path?} → the file
//	PUT    /open/scripts/run | /stop             refused: run a script through a cron
//
// Every change writes an audit line with actor "app <name>".

// OpenFile is QingLong's IFile (core/qlopen).
type OpenFile = qlopen.File

func (s *Server) openScriptRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /open/scripts", s.withOpenScripts(s.openListScripts))
	mux.HandleFunc("GET /open/scripts/detail", s.withOpenScripts(func(w http.ResponseWriter, r *http.Request) {
		s.openReadScript(w, r, r.URL.Query().Get("file"))
	}))
	mux.HandleFunc("GET /open/scripts/{file}", s.withOpenScripts(func(w http.ResponseWriter, r *http.Request) {
		s.openReadScript(w, r, r.PathValue("file"))
	}))
	mux.HandleFunc("POST /open/scripts", s.withOpenScripts(s.openCreateScript))
	mux.HandleFunc("PUT /open/scripts", s.withOpenScripts(s.openSaveScript))
	mux.HandleFunc("DELETE /open/scripts", s.withOpenScripts(s.openDeleteScript))
	mux.HandleFunc("PUT /open/scripts/rename", s.withOpenScripts(s.openRenameScript))
	mux.HandleFunc("POST /open/scripts/download", s.withOpenScripts(s.openDownloadScript))
	refuse := func(w http.ResponseWriter, r *http.Request) {
		openFail(w, http.StatusBadRequest, qlopen.ScriptRunRefused)
	}
	mux.HandleFunc("PUT /open/scripts/run", s.withOpenScripts(refuse))
	mux.HandleFunc("PUT /open/scripts/stop", s.withOpenScripts(refuse))
}

// withOpenScripts is withApp for the scripts routes: no folder, 503.
func (s *Server) withOpenScripts(h http.HandlerFunc) http.HandlerFunc {
	return s.withApp(func(w http.ResponseWriter, r *http.Request) {
		if s.scripts == nil {
			openFail(w, http.StatusServiceUnavailable, "this server has no scripts folder")
			return
		}
		h(w, r)
	})
}

func (s *Server) openAudit(r *http.Request, action, target, detail string) {
	if s.auditLog == nil {
		return
	}
	if err := s.auditLog.AppendAudit(r.Context(), edge.AuditEntry{AtMs: s.now().UnixMilli(), Action: action, Target: target,
		Actor: openActor(r), Detail: detail}); err != nil {
		s.log.ErrorContext(r.Context(), "writing an audit line", "action", action, "err", err)
	}
}

func (s *Server) openListScripts(w http.ResponseWriter, r *http.Request) {
	dir := r.URL.Query().Get("path")
	budget := scriptpath.MaxEntries
	var (
		out []OpenFile
		err error
	)
	if dir != "" {
		out, err = s.openScriptLevel(dir, false, &budget)
	} else {
		out, err = s.openScriptLevel("", true, &budget)
	}
	if errs.Code(err) == errs.NotFound {
		out, err = []OpenFile{}, nil // QingLong's readDir answers [] for a missing folder
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	openOK(w, out)
}

// openScriptLevel lists dir as QingLong does (qlopen.ScriptTree).
func (s *Server) openScriptLevel(dir string, deep bool, budget *int) ([]OpenFile, error) {
	return qlopen.ScriptTree(func(dir string) ([]qlopen.ScriptEntry, error) {
		entries, err := s.scripts.List(dir)
		out := make([]qlopen.ScriptEntry, len(entries))
		for i, e := range entries {
			out[i] = qlopen.ScriptEntry{Name: e.Name, Dir: e.Kind == scripts.KindDir, Size: e.Size, MtimeMs: e.MtimeMs}
		}
		return out, err
	}, dir, deep, budget)
}

func (s *Server) openReadScript(w http.ResponseWriter, r *http.Request, file string) {
	p, err := qlopen.ScriptPath(r.URL.Query().Get("path"), file)
	if err != nil {
		s.openErr(w, r, errs.Prefix("file", err))
		return
	}
	data, _, err := s.scripts.Read(p)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	openOK(w, string(data))
}

// writeAnyScript writes p whether it exists or not (QingLong's writes
// are unconditional).
func (s *Server) writeAnyScript(p string, data []byte) (string, bool, error) {
	pre := scripts.Precondition{IfMatch: "*"}
	if _, err := s.scripts.Stat(p); errs.Code(err) == errs.NotFound {
		pre = scripts.Precondition{IfNoneMatch: true}
	} else if err != nil {
		return "", false, err
	}
	return s.scripts.Write(p, data, pre)
}

// decodeScriptWrite reads POST /open/scripts as JSON or as the
// multipart form QingLong's panel sends (editNameModal.tsx); a file part
// named "file" is the upload.
func decodeScriptWrite(w http.ResponseWriter, r *http.Request) (qlopen.ScriptWrite, []byte, error) {
	var in qlopen.ScriptWrite
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return in, nil, decodeOpen(w, r, &in)
	}
	r.Body = http.MaxBytesReader(w, r.Body, qlopen.ScriptMaxBody)
	mr, err := r.MultipartReader()
	if err != nil {
		return in, nil, errs.Invalidf("", "body: %v", err)
	}
	return qlopen.DecodeScriptForm(httpkit.MultipartParts(mr))
}

// openCreateScript is QingLong's POST /scripts: an upload, a folder
// (directory), or a file written with content; with originFilename
// different from filename the old file is removed after the write (a
// save under a new name). QingLong copies the replaced file into its
// backup folder; ql3 has none and says so in ADR 0057.
func (s *Server) openCreateScript(w http.ResponseWriter, r *http.Request) {
	in, upload, err := decodeScriptWrite(w, r)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	if in.Directory != "" {
		p, _ := qlopen.ScriptPath(in.Path, in.Directory)
		err := s.scripts.Mkdir(p)
		if errs.Code(err) == errs.Conflict {
			if e, serr := s.scripts.Stat(p); serr == nil && e.Kind == scripts.KindDir {
				openOK(w, nil) // QingLong's mkdir is recursive: an existing folder is fine
				return
			}
		}
		if err != nil {
			s.openErr(w, r, errs.Prefix("directory", err))
			return
		}
		s.openAudit(r, edge.AuditScriptMkdir, p, "")
		openOK(w, nil)
		return
	}
	p, err := qlopen.ScriptPath(in.Path, in.Filename)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	data := upload
	if data == nil && in.Content != nil {
		data = []byte(*in.Content)
	}
	etag, created, err := s.writeAnyScript(p, data)
	if err != nil {
		s.openErr(w, r, errs.Prefix("filename", err))
		return
	}
	action := edge.AuditScriptWrite
	if created {
		action = edge.AuditScriptCreate
	}
	s.openAudit(r, action, p, "sha256 "+etag)
	if in.OriginFilename != "" && in.OriginFilename != in.Filename {
		old, _ := qlopen.ScriptPath(in.Path, in.OriginFilename)
		if err := s.scripts.Delete(old, false); err != nil && errs.Code(err) != errs.NotFound {
			s.openErr(w, r, errs.Prefix("originFilename", err))
			return
		}
		s.openAudit(r, edge.AuditScriptDelete, old, "saved as "+p)
	}
	openOK(w, nil)
}

func (s *Server) openSaveScript(w http.ResponseWriter, r *http.Request) {
	var in qlopen.ScriptSave
	if err := decodeOpen(w, r, &in); err != nil {
		s.openErr(w, r, err)
		return
	}
	p, err := qlopen.ScriptPath(in.Path, in.Filename)
	if err == nil && in.Content == nil {
		err = errs.Invalidf("content", "is required")
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	etag, created, err := s.writeAnyScript(p, []byte(*in.Content))
	if err != nil {
		s.openErr(w, r, errs.Prefix("filename", err))
		return
	}
	action := edge.AuditScriptWrite
	if created {
		action = edge.AuditScriptCreate
	}
	s.openAudit(r, action, p, "sha256 "+etag)
	openOK(w, nil)
}

// openDeleteScript removes a file or (QingLong's rmPath) a folder with
// everything in it.
func (s *Server) openDeleteScript(w http.ResponseWriter, r *http.Request) {
	var in qlopen.ScriptRef
	if err := decodeOpen(w, r, &in); err != nil {
		s.openErr(w, r, err)
		return
	}
	p, err := qlopen.ScriptPath(in.Path, in.Filename)
	if err == nil && in.NewFilename != "" {
		err = errs.Invalidf("newFilename", "is not a field of this body")
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	if err := s.scripts.Delete(p, true); err != nil {
		s.openErr(w, r, errs.Prefix("filename", err))
		return
	}
	s.openAudit(r, edge.AuditScriptDelete, p, "")
	openOK(w, nil)
}

func (s *Server) openRenameScript(w http.ResponseWriter, r *http.Request) {
	var in qlopen.ScriptRef
	if err := decodeOpen(w, r, &in); err != nil {
		s.openErr(w, r, err)
		return
	}
	from, err := qlopen.ScriptPath(in.Path, in.Filename)
	if err == nil && in.NewFilename == "" {
		err = errs.Invalidf("newFilename", "is required")
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	to, _ := qlopen.ScriptPath(in.Path, in.NewFilename)
	if err := s.scripts.Move(from, to); err != nil {
		s.openErr(w, r, err)
		return
	}
	s.openAudit(r, edge.AuditScriptMove, from, "to "+to)
	openOK(w, nil)
}

// openDownloadScript answers the file itself (QingLong's res.download).
func (s *Server) openDownloadScript(w http.ResponseWriter, r *http.Request) {
	var in qlopen.ScriptRef
	if err := decodeOpen(w, r, &in); err != nil {
		s.openErr(w, r, err)
		return
	}
	p, err := qlopen.ScriptPath(in.Path, in.Filename)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	data, _, err := s.scripts.Read(p)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}
