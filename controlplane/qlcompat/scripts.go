package qlcompat

import (
	"errors"
	"mime"
	"net/http"
	"path"
	"strconv"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlopen"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/httpkit"
)

// QingLong's /open/scripts on the project's scripts folder (ADR 0052,
// ADR 0057), with the edge's routes and shapes (core/qlopen):
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
// The store writes each change's audit line (actor "app:<name>") and
// re-pins the script tasks whose tree it changed.

func (h *Handler) scriptRoutes() {
	h.mux.HandleFunc("GET /open/scripts", h.withScripts(h.listScripts))
	h.mux.HandleFunc("GET /open/scripts/detail", h.withScripts(func(w http.ResponseWriter, r *http.Request) {
		h.readScript(w, r, r.URL.Query().Get("file"))
	}))
	h.mux.HandleFunc("GET /open/scripts/{file}", h.withScripts(func(w http.ResponseWriter, r *http.Request) {
		h.readScript(w, r, r.PathValue("file"))
	}))
	h.mux.HandleFunc("POST /open/scripts", h.withScripts(h.createScript))
	h.mux.HandleFunc("PUT /open/scripts", h.withScripts(h.saveScript))
	h.mux.HandleFunc("DELETE /open/scripts", h.withScripts(h.deleteScript))
	h.mux.HandleFunc("PUT /open/scripts/rename", h.withScripts(h.renameScript))
	h.mux.HandleFunc("POST /open/scripts/download", h.withScripts(h.downloadScript))
	refuse := func(w http.ResponseWriter, r *http.Request) { fail(w, http.StatusBadRequest, qlopen.ScriptRunRefused) }
	h.mux.HandleFunc("PUT /open/scripts/run", h.withScripts(refuse))
	h.mux.HandleFunc("PUT /open/scripts/stop", h.withScripts(refuse))
}

// withScripts is withApp for the scripts routes: no store, 503.
func (h *Handler) withScripts(next http.HandlerFunc) http.HandlerFunc {
	return h.withApp(func(w http.ResponseWriter, r *http.Request) {
		if h.scripts == nil {
			fail(w, http.StatusServiceUnavailable, "this server has no scripts store")
			return
		}
		next(w, r)
	})
}

func (h *Handler) listScripts(w http.ResponseWriter, r *http.Request) {
	project, dir := appOf(r).ProjectID, r.URL.Query().Get("path")
	budget := scriptpath.MaxEntries
	out, err := qlopen.ScriptTree(func(d string) ([]qlopen.ScriptEntry, error) {
		entries, err := h.scripts.ListScripts(r.Context(), project, d)
		list := make([]qlopen.ScriptEntry, len(entries))
		for i, e := range entries {
			list[i] = qlopen.ScriptEntry{Name: e.Name, Dir: e.Kind == controlplane.ScriptKindDir, Size: e.Size, MtimeMs: e.MtimeMs}
		}
		return list, err
	}, dir, dir == "", &budget)
	if errs.Code(err) == errs.NotFound {
		out, err = []qlopen.File{}, nil // QingLong's readDir answers [] for a missing folder
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	ok(w, out)
}

func (h *Handler) readScript(w http.ResponseWriter, r *http.Request, file string) {
	p, err := qlopen.ScriptPath(r.URL.Query().Get("path"), file)
	if err != nil {
		h.fault(w, r, errs.Prefix("file", err))
		return
	}
	data, _, err := h.scripts.ReadScript(r.Context(), appOf(r).ProjectID, p)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	ok(w, string(data))
}

// writeAny writes p whether it exists or not (QingLong's writes are
// unconditional): a create, else a replacement of whatever is there.
func (h *Handler) writeAny(r *http.Request, p string, data []byte) error {
	project := appOf(r).ProjectID
	_, err := h.scripts.WriteScript(r.Context(), project, p, data, controlplane.ScriptPrecondition{IfNoneMatch: true})
	var stale *controlplane.ScriptStaleError
	if errors.As(err, &stale) || errs.Code(err) == errs.Conflict {
		_, err = h.scripts.WriteScript(r.Context(), project, p, data, controlplane.ScriptPrecondition{IfMatch: "*"})
	}
	return err
}

// createScript is QingLong's POST /scripts: an upload, a folder
// (directory), or a file written with content; with originFilename
// different from filename the old file is removed after the write.
func (h *Handler) createScript(w http.ResponseWriter, r *http.Request) {
	var in qlopen.ScriptWrite
	var upload []byte
	var err error
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		r.Body = http.MaxBytesReader(w, r.Body, qlopen.ScriptMaxBody)
		mr, merr := r.MultipartReader()
		if merr != nil {
			h.fault(w, r, errs.Invalidf("", "body: %v", merr))
			return
		}
		in, upload, err = qlopen.DecodeScriptForm(httpkit.MultipartParts(mr))
	} else {
		err = decode(w, r, &in)
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	project := appOf(r).ProjectID
	if in.Directory != "" {
		p, _ := qlopen.ScriptPath(in.Path, in.Directory)
		err := h.scripts.MkdirScript(r.Context(), project, p)
		if errs.Code(err) == errs.Conflict && h.isDir(r, p) {
			err = nil // QingLong's mkdir is recursive: an existing folder is fine
		}
		if err != nil {
			h.fault(w, r, errs.Prefix("directory", err))
			return
		}
		ok(w, nil)
		return
	}
	p, err := qlopen.ScriptPath(in.Path, in.Filename)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	data := upload
	if data == nil && in.Content != nil {
		data = []byte(*in.Content)
	}
	if err := h.writeAny(r, p, data); err != nil {
		h.fault(w, r, errs.Prefix("filename", err))
		return
	}
	if in.OriginFilename != "" && in.OriginFilename != in.Filename {
		old, _ := qlopen.ScriptPath(in.Path, in.OriginFilename)
		if err := h.scripts.DeleteScript(r.Context(), project, old, false); err != nil && errs.Code(err) != errs.NotFound {
			h.fault(w, r, errs.Prefix("originFilename", err))
			return
		}
	}
	ok(w, nil)
}

// isDir says whether p is a folder of the app's project.
func (h *Handler) isDir(r *http.Request, p string) bool {
	entries, err := h.scripts.ListScripts(r.Context(), appOf(r).ProjectID, path.Dir(p))
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name == path.Base(p) {
			return e.Kind == controlplane.ScriptKindDir
		}
	}
	return false
}

func (h *Handler) saveScript(w http.ResponseWriter, r *http.Request) {
	var in qlopen.ScriptSave
	if err := decode(w, r, &in); err != nil {
		h.fault(w, r, err)
		return
	}
	p, err := qlopen.ScriptPath(in.Path, in.Filename)
	if err == nil && in.Content == nil {
		err = errs.Invalidf("content", "is required")
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	if err := h.writeAny(r, p, []byte(*in.Content)); err != nil {
		h.fault(w, r, errs.Prefix("filename", err))
		return
	}
	ok(w, nil)
}

// deleteScript removes a file or (QingLong's rmPath) a folder with
// everything in it.
func (h *Handler) deleteScript(w http.ResponseWriter, r *http.Request) {
	var in qlopen.ScriptRef
	if err := decode(w, r, &in); err != nil {
		h.fault(w, r, err)
		return
	}
	p, err := qlopen.ScriptPath(in.Path, in.Filename)
	if err == nil && in.NewFilename != "" {
		err = errs.Invalidf("newFilename", "is not a field of this body")
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	if err := h.scripts.DeleteScript(r.Context(), appOf(r).ProjectID, p, true); err != nil {
		h.fault(w, r, errs.Prefix("filename", err))
		return
	}
	ok(w, nil)
}

func (h *Handler) renameScript(w http.ResponseWriter, r *http.Request) {
	var in qlopen.ScriptRef
	if err := decode(w, r, &in); err != nil {
		h.fault(w, r, err)
		return
	}
	from, err := qlopen.ScriptPath(in.Path, in.Filename)
	if err == nil && in.NewFilename == "" {
		err = errs.Invalidf("newFilename", "is required")
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	to, _ := qlopen.ScriptPath(in.Path, in.NewFilename)
	if err := h.scripts.MoveScript(r.Context(), appOf(r).ProjectID, from, to); err != nil {
		h.fault(w, r, err)
		return
	}
	ok(w, nil)
}

// downloadScript answers the file itself (QingLong's res.download).
func (h *Handler) downloadScript(w http.ResponseWriter, r *http.Request) {
	var in qlopen.ScriptRef
	if err := decode(w, r, &in); err != nil {
		h.fault(w, r, err)
		return
	}
	p, err := qlopen.ScriptPath(in.Path, in.Filename)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	data, _, err := h.scripts.ReadScript(r.Context(), appOf(r).ProjectID, p)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data)
}
