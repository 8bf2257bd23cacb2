package adminapi

import (
	"net/http"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/httpkit"
)

// A project's env store (ADR 0038, ADR 0051), the edge's routes under the
// project: every route needs an API token (all of ql3-control's tokens are
// admin tokens; the /metrics loopback exemption covers nothing here).
// Values are accepted, never listed: only reveal (one value) and an export
// with values return them, audited in the transaction that read them.
//
//	GET    /api/v1/projects/{project}/envs                 list (?q=&limit=&cursor=), no values
//	POST   /api/v1/projects/{project}/envs                 create one
//	GET    /api/v1/projects/{project}/envs/{id}            one entry, no value
//	PATCH  /api/v1/projects/{project}/envs/{id}            change fields (value write-only)
//	DELETE /api/v1/projects/{project}/envs/{id}
//	POST   /api/v1/projects/{project}/envs/{id}/enable | /disable
//	POST   /api/v1/projects/{project}/envs/{id}/move       {before}
//	POST   /api/v1/projects/{project}/envs/{id}/reveal     the value (audited)
//	POST   /api/v1/projects/{project}/envs/import          {lines} or {entries}, all or nothing
//	POST   /api/v1/projects/{project}/envs/export          {format, values} (values audited)

// Body bounds of the env routes: one entry carries a value of up to 128
// KiB; an import up to a whole store.
const (
	maxEnvBody       = 256 << 10
	maxEnvImportBody = 4 << 20
)

var (
	envBodyLimits   = canonjson.Limits{MaxBytes: maxEnvBody, MaxDepth: 8, MaxEntries: 64, MaxString: env.MaxValueBytes + 1024}
	envImportLimits = canonjson.Limits{MaxBytes: maxEnvImportBody, MaxDepth: 8, MaxEntries: env.MaxEntries, MaxString: maxEnvImportBody}
)

const envBase = "/api/v1/projects/{project}/envs"

func (s *Server) envRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET "+envBase, s.withEnvs(s.listEnvs))
	mux.HandleFunc("POST "+envBase, s.withEnvs(s.createEnv))
	mux.HandleFunc("GET "+envBase+"/{id}", s.withEnvs(s.getEnv))
	mux.HandleFunc("PATCH "+envBase+"/{id}", s.withEnvs(s.patchEnv))
	mux.HandleFunc("DELETE "+envBase+"/{id}", s.withEnvs(s.deleteEnv))
	mux.HandleFunc("POST "+envBase+"/{id}/enable", s.withEnvs(s.setEnvEnabled(true)))
	mux.HandleFunc("POST "+envBase+"/{id}/disable", s.withEnvs(s.setEnvEnabled(false)))
	mux.HandleFunc("POST "+envBase+"/{id}/move", s.withEnvs(s.moveEnv))
	mux.HandleFunc("POST "+envBase+"/{id}/reveal", s.withEnvs(s.revealEnv))
	mux.HandleFunc("POST "+envBase+"/import", s.withEnvs(s.importEnvs))
	mux.HandleFunc("POST "+envBase+"/export", s.withEnvs(s.exportEnvs))
}

// envHandler is an env route with its project resolved to an id.
type envHandler func(w http.ResponseWriter, r *http.Request, projectID string)

// withEnvs answers 503 without an env store and resolves {project} (id or
// name) to the project's id.
func (s *Server) withEnvs(h envHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.envs == nil {
			s.fail(w, r, errs.E(errs.Unavailable, "", "this server has no env store"))
			return
		}
		p, err := s.b.GetProject(r.Context(), r.PathValue("project"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		h(w, r, p.ID)
	}
}

func decodeEnvBody(w http.ResponseWriter, r *http.Request, lim canonjson.Limits, v any) error {
	data, err := httpkit.ReadBody(w, r, lim.MaxBytes)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return errs.Invalidf("", "request body is empty; expected a JSON object")
	}
	return canonjson.DecodeStrict(data, lim, v)
}

func envInput(req CreateEnvRequest) controlplane.EnvInput {
	return controlplane.EnvInput{Name: req.Name, Value: req.Value, Remarks: req.Remarks, Enabled: req.Enabled == nil || *req.Enabled,
		Pinned: req.Pinned, Labels: req.Labels}
}

func (s *Server) listEnvs(w http.ResponseWriter, r *http.Request, project string) {
	pr, err := pageRequest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.envs.ListEnvs(r.Context(), project, controlplane.EnvFilter{Query: r.URL.Query().Get("q"), Page: pr})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := EnvList{Items: make([]EnvEntry, 0, len(page.Entries)), Total: page.Total, NextCursor: page.NextCursor}
	for _, e := range page.Entries {
		out.Items = append(out.Items, envView(e))
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) createEnv(w http.ResponseWriter, r *http.Request, project string) {
	var req CreateEnvRequest
	if err := decodeEnvBody(w, r, envBodyLimits, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	out, err := s.envs.CreateEnvs(r.Context(), project, []controlplane.EnvInput{envInput(req)})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, envView(out[0]))
}

func (s *Server) getEnv(w http.ResponseWriter, r *http.Request, project string) {
	e, err := s.envs.GetEnv(r.Context(), project, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, envView(e))
}

func (s *Server) patchEnv(w http.ResponseWriter, r *http.Request, project string) {
	var req PatchEnvRequest
	if err := decodeEnvBody(w, r, envBodyLimits, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	s.updateEnv(w, r, project, controlplane.EnvPatch{Name: req.Name, Value: req.Value, Remarks: req.Remarks, Enabled: req.Enabled,
		Pinned: req.Pinned, Labels: req.Labels})
}

func (s *Server) updateEnv(w http.ResponseWriter, r *http.Request, project string, p controlplane.EnvPatch) {
	e, err := s.envs.UpdateEnv(r.Context(), project, r.PathValue("id"), p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, envView(e))
}

func (s *Server) setEnvEnabled(enabled bool) envHandler {
	return func(w http.ResponseWriter, r *http.Request, project string) {
		if err := s.decodeOptionalBody(w, r, &struct{}{}); err != nil {
			s.fail(w, r, err)
			return
		}
		s.updateEnv(w, r, project, controlplane.EnvPatch{Enabled: &enabled})
	}
}

func (s *Server) deleteEnv(w http.ResponseWriter, r *http.Request, project string) {
	id := r.PathValue("id")
	n, err := s.envs.DeleteEnvs(r.Context(), project, []string{id})
	if err == nil && n == 0 {
		err = errs.NotFoundf("env entry %s not found", id)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) moveEnv(w http.ResponseWriter, r *http.Request, project string) {
	var req MoveEnvRequest
	if err := decodeEnvBody(w, r, envBodyLimits, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.envs.MoveEnv(r.Context(), project, r.PathValue("id"), req.Before)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, envView(e))
}

func (s *Server) revealEnv(w http.ResponseWriter, r *http.Request, project string) {
	if err := s.decodeOptionalBody(w, r, &struct{}{}); err != nil {
		s.fail(w, r, err)
		return
	}
	e, err := s.envs.RevealEnv(r.Context(), project, r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	a := controlplane.ActorOf(r.Context())
	s.log.InfoContext(r.Context(), "env value revealed", "project", project, "env", e.ID, "name", e.Name, "token", a.ID)
	httpkit.WriteJSON(w, http.StatusOK, EnvValue{EnvEntry: envView(e), Value: e.Value})
}

func (s *Server) importEnvs(w http.ResponseWriter, r *http.Request, project string) {
	var req ImportEnvRequest
	if err := decodeEnvBody(w, r, envImportLimits, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	var in []controlplane.EnvInput
	switch {
	case req.Lines != "" && len(req.Entries) > 0:
		s.fail(w, r, errs.Invalidf("entries", "give lines or entries, not both"))
		return
	case req.Lines != "":
		lines, err := env.ParseLines(req.Lines)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, l := range lines {
			in = append(in, controlplane.EnvInput{Name: l.Name, Value: l.Value, Enabled: !req.Disabled})
		}
	default:
		for _, e := range req.Entries {
			in = append(in, envInput(e))
		}
	}
	if len(in) == 0 {
		s.fail(w, r, errs.Invalidf("lines", "nothing to import: give lines (NAME=value) or entries"))
		return
	}
	out, err := s.envs.CreateEnvs(r.Context(), project, in)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := ImportEnvResponse{Created: len(out), Items: make([]EnvEntry, 0, len(out))}
	for _, e := range out {
		resp.Items = append(resp.Items, envView(e))
	}
	httpkit.WriteJSON(w, http.StatusCreated, resp)
}

func (s *Server) exportEnvs(w http.ResponseWriter, r *http.Request, project string) {
	var req ExportEnvRequest
	if err := decodeEnvBody(w, r, envBodyLimits, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	switch req.Format {
	case "", "json":
		req.Format = "json"
	case "lines":
		if !req.Values {
			s.fail(w, r, errs.Invalidf("values", "the lines format is NAME=value: it needs values true"))
			return
		}
	default:
		s.fail(w, r, errs.Invalidf("format", "must be json or lines, got %.32q", req.Format))
		return
	}
	entries, err := s.envs.ExportEnvs(r.Context(), project, req.Values)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := EnvExport{Format: req.Format}
	if req.Format == "lines" {
		lines := make([]env.Line, len(entries))
		for i, e := range entries {
			lines[i] = env.Line{Name: e.Name, Value: e.Value}
		}
		if out.Lines, err = env.FormatLines(lines); err != nil {
			s.fail(w, r, err)
			return
		}
	} else {
		out.Entries = make([]EnvExportItem, 0, len(entries))
		for _, e := range entries {
			item := EnvExportItem{Name: e.Name, Remarks: e.Remarks, Enabled: e.Enabled, Pinned: e.Pinned, Labels: e.Labels}
			if req.Values {
				v := e.Value
				item.Value = &v
			}
			out.Entries = append(out.Entries, item)
		}
	}
	if req.Values {
		s.log.InfoContext(r.Context(), "env values exported", "project", project, "entries", len(entries), "token", controlplane.ActorOf(r.Context()).ID)
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}
