package httpapi

import (
	"context"
	"net/http"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

// The env store's routes (ADR 0038). None of them is readable through the
// loopback exemption (ADR 0039): every one needs the admin token or a
// panel session (or --no-auth). Values are accepted, never listed: only
// reveal (one value) and an export with values return them, and both are
// audited in the transaction that read them.
//
//	GET    /api/v1/envs                    list (?q=&limit=&cursor=), no values
//	POST   /api/v1/envs                    create one
//	GET    /api/v1/envs/{id}               one entry, no value
//	PATCH  /api/v1/envs/{id}               change fields (value write-only)
//	DELETE /api/v1/envs/{id}
//	POST   /api/v1/envs/{id}/enable | /disable
//	POST   /api/v1/envs/{id}/move          {before}
//	POST   /api/v1/envs/{id}/reveal        the value (audited)
//	POST   /api/v1/envs/import             {lines} or {entries}, all or nothing
//	POST   /api/v1/envs/export             {format, values} (values audited)
//	POST   /api/v1/envs/rotate-key         re-wrap the data key under a new key file
//	GET    /api/v1/audit                   audit lines (?after=&limit=)

// Body bounds of the env routes: one entry carries a value of up to 128
// KiB; an import up to the whole store.
const (
	maxEnvBody       = 256 << 10
	maxEnvImportBody = 4 << 20
)

var (
	envBodyLimits   = canonjson.Limits{MaxBytes: maxEnvBody, MaxDepth: 8, MaxEntries: 64, MaxString: env.MaxValueBytes + 1024}
	envImportLimits = canonjson.Limits{MaxBytes: maxEnvImportBody, MaxDepth: 8, MaxEntries: env.MaxEntries, MaxString: maxEnvImportBody}
)

func (s *Server) envRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /api/v1/envs", s.withEnvs(s.listEnvs))
	mux.HandleFunc("POST /api/v1/envs", s.withEnvs(s.createEnv))
	mux.HandleFunc("GET /api/v1/envs/{id}", s.withEnvs(s.getEnv))
	mux.HandleFunc("PATCH /api/v1/envs/{id}", s.withEnvs(s.patchEnv))
	mux.HandleFunc("DELETE /api/v1/envs/{id}", s.withEnvs(s.deleteEnv))
	mux.HandleFunc("POST /api/v1/envs/{id}/enable", s.withEnvs(s.setEnvEnabled(true)))
	mux.HandleFunc("POST /api/v1/envs/{id}/disable", s.withEnvs(s.setEnvEnabled(false)))
	mux.HandleFunc("POST /api/v1/envs/{id}/move", s.withEnvs(s.moveEnv))
	mux.HandleFunc("POST /api/v1/envs/{id}/reveal", s.withEnvs(s.revealEnv))
	mux.HandleFunc("POST /api/v1/envs/import", s.withEnvs(s.importEnvs))
	mux.HandleFunc("POST /api/v1/envs/export", s.withEnvs(s.exportEnvs))
	mux.HandleFunc("POST /api/v1/envs/rotate-key", s.withEnvs(s.rotateEnvKey))
	mux.HandleFunc("GET /api/v1/audit", s.withEnvs(s.listAudit))
}

// withEnvs answers 503 when the server has no env store.
func (s *Server) withEnvs(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.envs == nil {
			httpkit.Fail(w, r, s.log, errs.E(errs.Unavailable, "", "this server has no env store"))
			return
		}
		h(w, r)
	}
}

// actor names the credential a request came with, for the audit log.
func (s *Server) actor(r *http.Request) string {
	switch {
	case r.Header.Get("Authorization") != "":
		return "token"
	case s.auth.Disabled:
		return "no-auth"
	default:
		return "session"
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

func envInput(req CreateEnvRequest) edge.EnvInput {
	return edge.EnvInput{Name: req.Name, Value: req.Value, Remarks: req.Remarks, Enabled: req.Enabled == nil || *req.Enabled,
		Pinned: req.Pinned, Labels: req.Labels}
}

func (s *Server) listEnvs(w http.ResponseWriter, r *http.Request) {
	limit, err := queryLimit(r)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	q := r.URL.Query()
	page, err := s.envs.ListEnvs(r.Context(), edge.EnvFilter{Query: q.Get("q"), Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := EnvList{Items: make([]EnvEntry, 0, len(page.Entries)), Total: page.Total, NextCursor: page.NextCursor}
	for _, e := range page.Entries {
		out.Items = append(out.Items, envView(e))
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) createEnv(w http.ResponseWriter, r *http.Request) {
	var req CreateEnvRequest
	if err := decodeEnvBody(w, r, envBodyLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out, err := s.envs.CreateEnvs(r.Context(), []edge.EnvInput{envInput(req)}, s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, envView(out[0]))
}

func (s *Server) getEnv(w http.ResponseWriter, r *http.Request) {
	e, err := s.envs.GetEnv(r.Context(), r.PathValue("id"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, envView(e))
}

func (s *Server) patchEnv(w http.ResponseWriter, r *http.Request) {
	var req PatchEnvRequest
	if err := decodeEnvBody(w, r, envBodyLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	s.updateEnv(w, r, edge.EnvPatch{Name: req.Name, Value: req.Value, Remarks: req.Remarks, Enabled: req.Enabled,
		Pinned: req.Pinned, Labels: req.Labels})
}

func (s *Server) updateEnv(w http.ResponseWriter, r *http.Request, p edge.EnvPatch) {
	e, err := s.envs.UpdateEnv(r.Context(), r.PathValue("id"), p, s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, envView(e))
}

func (s *Server) setEnvEnabled(enabled bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.updateEnv(w, r, edge.EnvPatch{Enabled: &enabled})
	}
}

func (s *Server) deleteEnv(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	n, err := s.envs.DeleteEnvs(r.Context(), []string{id}, s.actor(r))
	if err == nil && n == 0 {
		err = errs.NotFoundf("env entry %s not found", id)
	}
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) moveEnv(w http.ResponseWriter, r *http.Request) {
	var req MoveEnvRequest
	if err := decodeEnvBody(w, r, envBodyLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	e, err := s.envs.MoveEnv(r.Context(), r.PathValue("id"), req.Before)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, envView(e))
}

func (s *Server) revealEnv(w http.ResponseWriter, r *http.Request) {
	if err := decodeOptionalEnvBody(w, r); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	e, err := s.envs.RevealEnv(r.Context(), r.PathValue("id"), s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	s.log.InfoContext(r.Context(), "env value revealed", "env", e.ID, "name", e.Name, "actor", s.actor(r))
	httpkit.WriteJSON(w, http.StatusOK, EnvValue{EnvEntry: envView(e), Value: e.Value})
}

// decodeOptionalEnvBody accepts an empty body or {} (bodiless POSTs).
func decodeOptionalEnvBody(w http.ResponseWriter, r *http.Request) error {
	data, err := httpkit.ReadBody(w, r, 1<<10)
	if err != nil || len(data) == 0 {
		return err
	}
	var empty struct{}
	return canonjson.DecodeStrict(data, httpkit.BodyLimits(1<<10), &empty)
}

func (s *Server) importEnvs(w http.ResponseWriter, r *http.Request) {
	var req ImportEnvRequest
	if err := decodeEnvBody(w, r, envImportLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	var in []edge.EnvInput
	switch {
	case req.Lines != "" && len(req.Entries) > 0:
		httpkit.Fail(w, r, s.log, errs.Invalidf("entries", "give lines or entries, not both"))
		return
	case req.Lines != "":
		lines, err := env.ParseLines(req.Lines)
		if err != nil {
			httpkit.Fail(w, r, s.log, err)
			return
		}
		for _, l := range lines {
			in = append(in, edge.EnvInput{Name: l.Name, Value: l.Value, Enabled: !req.Disabled})
		}
	default:
		for _, e := range req.Entries {
			in = append(in, envInput(e))
		}
	}
	if len(in) == 0 {
		httpkit.Fail(w, r, s.log, errs.Invalidf("lines", "nothing to import: give lines (NAME=value) or entries"))
		return
	}
	out, err := s.envs.CreateEnvs(r.Context(), in, s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	resp := ImportEnvResponse{Created: len(out), Items: make([]EnvEntry, 0, len(out))}
	for _, e := range out {
		resp.Items = append(resp.Items, envView(e))
	}
	httpkit.WriteJSON(w, http.StatusCreated, resp)
}

func (s *Server) exportEnvs(w http.ResponseWriter, r *http.Request) {
	var req ExportEnvRequest
	if err := decodeEnvBody(w, r, envBodyLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	switch req.Format {
	case "", "json":
		req.Format = "json"
	case "lines":
		if !req.Values {
			httpkit.Fail(w, r, s.log, errs.Invalidf("values", "the lines format is NAME=value: it needs values true"))
			return
		}
	default:
		httpkit.Fail(w, r, s.log, errs.Invalidf("format", "must be json or lines, got %.32q", req.Format))
		return
	}
	entries, err := s.envs.ExportEnvs(r.Context(), req.Values, s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := EnvExport{Format: req.Format}
	if req.Format == "lines" {
		lines := make([]env.Line, len(entries))
		for i, e := range entries {
			lines[i] = env.Line{Name: e.Name, Value: e.Value}
		}
		if out.Lines, err = env.FormatLines(lines); err != nil {
			httpkit.Fail(w, r, s.log, err)
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
		s.log.InfoContext(r.Context(), "env values exported", "entries", len(entries), "actor", s.actor(r))
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) rotateEnvKey(w http.ResponseWriter, r *http.Request) {
	if err := decodeOptionalEnvBody(w, r); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	if s.rotateKey == nil {
		httpkit.Fail(w, r, s.log, errs.E(errs.Unavailable, "", "this server cannot rotate its env key"))
		return
	}
	id, err := s.rotateKey(r.Context(), s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	s.log.InfoContext(r.Context(), "env key rotated", "keyId", id, "actor", s.actor(r))
	httpkit.WriteJSON(w, http.StatusOK, RotateKeyResponse{KeyID: id})
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	after, err := queryInt64(r, "after", 0)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	limit, err := queryLimit(r)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	lines, err := s.envs.ListAudit(r.Context(), after, limit)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	out := AuditList{Items: make([]AuditLine, 0, len(lines))}
	for _, a := range lines {
		out.Items = append(out.Items, auditView(a))
	}
	if limit == 0 {
		limit = edge.DefaultPageSize
	}
	if n := len(lines); n > 0 && n == limit {
		out.Next = lines[n-1].Seq
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// RotateKeyFunc re-wraps the env data key under a fresh key file and
// returns the new key's id (the app wires it: it knows the key file).
type RotateKeyFunc func(ctx context.Context, actor string) (keyID string, err error)
