package httpapi

import (
	"errors"
	"net/http"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge/importer"
	"github.com/ql3/ql3/httpkit"
)

// The QingLong import's routes (ADR 0056). Every one needs the admin
// token or a panel session.
//
//	POST /api/v1/import/inspect               {from, zone}: inspect a data directory on the server
//	POST /api/v1/import/upload?zone=Z&format=tar|tar.gz   raw archive of a data directory; inspected
//	POST /api/v1/import/apply                 {plan, from?, zone?}: apply the plan whose digest is plan

// ImportInspectRequest asks for the plan of a data directory on the server.
type ImportInspectRequest struct {
	From string `json:"from"` // absolute path of the QingLong data directory
	Zone string `json:"zone"` // the IANA zone QingLong ran in
}

// ImportApplyRequest applies a plan. From and Zone may be omitted for a
// plan this server inspected since it started.
type ImportApplyRequest struct {
	Plan string `json:"plan"` // the planDigest inspect returned
	From string `json:"from,omitempty"`
	Zone string `json:"zone,omitempty"`
}

var importBodyLimits = canonjson.Limits{MaxBytes: 8 << 10, MaxDepth: 2, MaxEntries: 8, MaxString: 4096}

func (s *Server) importRoutes(mux httpkit.Mux) {
	mux.HandleFunc("POST /api/v1/import/inspect", s.withImport(s.importInspect))
	mux.HandleFunc("POST /api/v1/import/upload", s.withImport(s.importUpload))
	mux.HandleFunc("POST /api/v1/import/apply", s.withImport(s.importApply))
}

func (s *Server) withImport(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.imports == nil {
			httpkit.Fail(w, r, s.log, errs.E(errs.Unavailable, "", "this server has no QingLong import"))
			return
		}
		h(w, r)
	}
}

func (s *Server) importInspect(w http.ResponseWriter, r *http.Request) {
	var req ImportInspectRequest
	if err := decodeEnvBody(w, r, importBodyLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out, err := s.imports.InspectPath(r.Context(), req.From, req.Zone)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) importUpload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := httpkit.CheckRawContentType(r); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if r.ContentLength > importer.MaxUploadBytes {
		httpkit.Fail(w, r, s.log, errs.TooLargef("", "request body is %d bytes, limit is %d", r.ContentLength, int64(importer.MaxUploadBytes)))
		return
	}
	format := q.Get("format")
	if format == "" {
		format = importer.FormatTar
	}
	out, err := s.imports.InspectUpload(r.Context(), http.MaxBytesReader(w, r.Body, importer.MaxUploadBytes), format, q.Get("zone"))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		err = errs.TooLargef("", "request body exceeds the limit of %d bytes", int64(importer.MaxUploadBytes))
	}
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) importApply(w http.ResponseWriter, r *http.Request) {
	var req ImportApplyRequest
	if err := decodeEnvBody(w, r, importBodyLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	res, err := s.imports.Apply(r.Context(), req.From, req.Zone, req.Plan, s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	status := http.StatusCreated
	if res.Status == importer.StatusExisting {
		status = http.StatusOK
	}
	httpkit.WriteJSON(w, status, res)
}
