// Package importapi is the control plane's QingLong import routes (ADR
// 0056, ADR 0063): the edge's three routes under a project, mounted by the
// admin API (adminapi), which authenticates them. They need the admin
// token or a panel session (core/access: no scoped token covers them — an
// import writes tasks, env values and scripts). It links the root package
// and core only; the import itself is a controlplane.Imports.
package importapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlimport"
	"github.com/ql3/ql3/httpkit"
)

// Routes:
//
//	POST /api/v1/projects/{project}/import/inspect                      {from, zone}: a data directory on the replica
//	POST /api/v1/projects/{project}/import/upload?zone=Z&format=tar|tar.gz   raw archive of a data directory; inspected
//	POST /api/v1/projects/{project}/import/apply                        {plan, from?, zone?}

// ImportInspectRequest asks for the plan of a data directory on the
// replica.
type ImportInspectRequest struct {
	From string `json:"from"` // absolute path of the QingLong data directory
	Zone string `json:"zone"` // the IANA zone QingLong ran in
}

// ImportApplyRequest applies a plan. From and Zone may be omitted for a
// plan this replica inspected for the project since it started.
type ImportApplyRequest struct {
	Plan string `json:"plan"` // the planDigest inspect returned
	From string `json:"from,omitempty"`
	Zone string `json:"zone,omitempty"`
}

// rawContentType is the upload's body type (the scripts routes' raw
// type, which no cross-site form can send).
const rawContentType = "application/octet-stream"

// Projects resolves a project reference (id or name).
type Projects interface {
	GetProject(ctx context.Context, ref string) (controlplane.Project, error)
}

// Config wires an API.
type Config struct {
	// Imports is the import; nil answers every route 503.
	Imports  controlplane.Imports
	Projects Projects
	// MaxBodyBytes bounds a JSON body (the admin API's limit).
	MaxBodyBytes int
	Logger       *slog.Logger
}

// API serves the import routes.
type API struct {
	imports  controlplane.Imports
	projects Projects
	maxBody  int
	log      *slog.Logger
}

// New returns an API.
func New(cfg Config) *API {
	a := &API{imports: cfg.Imports, projects: cfg.Projects, maxBody: cfg.MaxBodyBytes, log: cfg.Logger}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a
}

func (s *API) fail(w http.ResponseWriter, r *http.Request, err error) { httpkit.Fail(w, r, s.log, err) }

func (s *API) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	return httpkit.DecodeJSON(w, r, s.maxBody, v)
}

// Routes registers the three routes.
func (s *API) Routes(mux httpkit.Mux) {
	const base = "/api/v1/projects/{project}/import"
	mux.HandleFunc("POST "+base+"/inspect", s.withImport(s.importInspect))
	mux.HandleFunc("POST "+base+"/upload", s.withImport(s.importUpload))
	mux.HandleFunc("POST "+base+"/apply", s.withImport(s.importApply))
}

// withImport resolves {project} (id or name) and answers 503 when the
// server has no import.
func (s *API) withImport(h func(w http.ResponseWriter, r *http.Request, p controlplane.Project)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.imports == nil {
			s.fail(w, r, errs.E(errs.Unavailable, "", "this server has no QingLong import (it needs the env store: start it with --secret-key-file)"))
			return
		}
		p, err := s.projects.GetProject(r.Context(), r.PathValue("project"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		h(w, r, p)
	}
}

func (s *API) importInspect(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	var req ImportInspectRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.imports.InspectPath(r.Context(), p.ID, req.From, req.Zone)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *API) importUpload(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	q := r.URL.Query()
	if ct := r.Header.Get("Content-Type"); ct != rawContentType {
		s.fail(w, r, errs.Invalidf("Content-Type", "must be %s, got %q", rawContentType, ct))
		return
	}
	if r.ContentLength > qlimport.MaxUploadBytes {
		s.fail(w, r, errs.TooLargef("", "request body is %d bytes, limit is %d", r.ContentLength, int64(qlimport.MaxUploadBytes)))
		return
	}
	format := q.Get("format")
	if format == "" {
		format = qlimport.FormatTar
	}
	out, err := s.imports.InspectUpload(r.Context(), p.ID, http.MaxBytesReader(w, r.Body, qlimport.MaxUploadBytes), format, q.Get("zone"))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		err = errs.TooLargef("", "request body exceeds the limit of %d bytes", int64(qlimport.MaxUploadBytes))
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *API) importApply(w http.ResponseWriter, r *http.Request, p controlplane.Project) {
	var req ImportApplyRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.imports.Apply(r.Context(), p.ID, req.From, req.Zone, req.Plan)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusCreated
	if res.Status == controlplane.ImportExisting {
		status = http.StatusOK
	}
	httpkit.WriteJSON(w, status, res)
}
