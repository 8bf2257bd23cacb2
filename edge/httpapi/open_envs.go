package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlopen"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

// The env row and the bodies are core/qlopen's (ADR 0057).
type (
	OpenEnv      = qlopen.Env
	OpenEnvInput = qlopen.EnvInput
	OpenMove     = qlopen.Move
	OpenRename   = qlopen.Rename
)

func (s *Server) openEnvRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /open/envs", s.withApp(s.withOpenEnvs(s.openListEnvs)))
	mux.HandleFunc("POST /open/envs", s.withApp(s.withOpenEnvs(s.openCreateEnvs)))
	mux.HandleFunc("PUT /open/envs", s.withApp(s.withOpenEnvs(s.openUpdateEnv)))
	mux.HandleFunc("DELETE /open/envs", s.withApp(s.withOpenEnvs(s.openDeleteEnvs)))
	mux.HandleFunc("PUT /open/envs/enable", s.withApp(s.withOpenEnvs(s.openPatchEnvs(func(p *edge.EnvPatch) { p.Enabled = ptr(true) }))))
	mux.HandleFunc("PUT /open/envs/disable", s.withApp(s.withOpenEnvs(s.openPatchEnvs(func(p *edge.EnvPatch) { p.Enabled = ptr(false) }))))
	mux.HandleFunc("PUT /open/envs/pin", s.withApp(s.withOpenEnvs(s.openPatchEnvs(func(p *edge.EnvPatch) { p.Pinned = ptr(true) }))))
	mux.HandleFunc("PUT /open/envs/unpin", s.withApp(s.withOpenEnvs(s.openPatchEnvs(func(p *edge.EnvPatch) { p.Pinned = ptr(false) }))))
	mux.HandleFunc("PUT /open/envs/name", s.withApp(s.withOpenEnvs(s.openRenameEnvs)))
	mux.HandleFunc("PUT /open/envs/{id}/move", s.withApp(s.withOpenEnvs(s.openMoveEnv)))
	mux.HandleFunc("GET /open/envs/{id}", s.withApp(s.withOpenEnvs(s.openGetEnv)))
}

func ptr[T any](v T) *T { return &v }

func (s *Server) withOpenEnvs(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.envs == nil {
			openFail(w, http.StatusServiceUnavailable, "this server has no env store")
			return
		}
		h(w, r)
	}
}

func openActor(r *http.Request) string { return "app " + appOf(r).Name }

func (s *Server) openEnvViews(ctx context.Context, es []env.Entry, withValues bool) ([]OpenEnv, error) {
	refs := make([]string, len(es))
	for i, e := range es {
		refs[i] = e.ID
	}
	nums, err := s.access.OpenNums(ctx, edge.OpenKindEnv, refs)
	if err != nil {
		return nil, err
	}
	out := make([]OpenEnv, len(es))
	for i, e := range es {
		out[i] = qlopen.EnvOf(e, nums[e.ID], withValues)
	}
	return out, nil
}

// openListEnvs is QingLong's GET /envs: every entry whose name, value or
// remarks contains searchValue, with values. The read is audited (one
// line naming the app and the entries).
func (s *Server) openListEnvs(w http.ResponseWriter, r *http.Request) {
	q := strings.ToLower(r.URL.Query().Get("searchValue"))
	if len(q) > qlopen.MaxEnvSearch {
		openFail(w, http.StatusBadRequest, "searchValue: at most 256 bytes")
		return
	}
	es, err := s.access.OpenReadEnvs(r.Context(), appOf(r).Name, func(e env.Entry) bool { return qlopen.EnvMatches(e, q) })
	s.answerEnvs(w, r, es, err, true)
}

func (s *Server) answerEnvs(w http.ResponseWriter, r *http.Request, es []env.Entry, err error, withValues bool) {
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	views, err := s.openEnvViews(r.Context(), es, withValues)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	openOK(w, views)
}

func (s *Server) openGetEnv(w http.ResponseWriter, r *http.Request) {
	ids, err := s.openPathIDs(r, edge.OpenKindEnv)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	es, err := s.access.OpenReadEnvs(r.Context(), appOf(r).Name, func(e env.Entry) bool { return e.ID == ids[0] })
	if err == nil && len(es) == 0 {
		err = errs.NotFoundf("env %s not found", r.PathValue("id"))
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	views, err := s.openEnvViews(r.Context(), es, true)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	openOK(w, views[0])
}

func (s *Server) openPathIDs(r *http.Request, kind string) ([]string, error) {
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || n < 1 {
		return nil, errs.Invalidf("id", "must be a number")
	}
	return s.resolveOpen(r.Context(), kind, []int64{n})
}

func (s *Server) openCreateEnvs(w http.ResponseWriter, r *http.Request) {
	var in []OpenEnvInput
	if err := decodeOpen(w, r, &in); err != nil {
		s.openErr(w, r, err)
		return
	}
	if len(in) == 0 {
		openFail(w, http.StatusBadRequest, "parameters are not correct: give an array of {name, value}")
		return
	}
	if len(in) > env.MaxEntries {
		openFail(w, http.StatusBadRequest, "too many entries at once")
		return
	}
	inputs := make([]edge.EnvInput, len(in))
	for i, e := range in {
		if e.ID != 0 {
			openFail(w, http.StatusBadRequest, "id: not allowed when creating")
			return
		}
		inputs[i] = edge.EnvInput{Name: e.Name, Value: e.Value, Enabled: true, Labels: e.Labels}
		if e.Remarks != nil {
			inputs[i].Remarks = *e.Remarks
		}
	}
	out, err := s.envs.CreateEnvs(r.Context(), inputs, openActor(r))
	if err == nil && len(out) != len(inputs) {
		err = errs.E(errs.Internal, "", "created %d of %d entries", len(out), len(inputs))
	}
	for i := range out {
		if err == nil {
			out[i].Value = inputs[i].Value // the app's own values, echoed as QingLong does
		}
	}
	s.answerEnvs(w, r, out, err, true)
}

func (s *Server) openUpdateEnv(w http.ResponseWriter, r *http.Request) {
	var in OpenEnvInput
	if err := decodeOpen(w, r, &in); err != nil {
		s.openErr(w, r, err)
		return
	}
	if in.ID == 0 || in.Name == "" {
		openFail(w, http.StatusBadRequest, "id, name and value are required")
		return
	}
	ids, err := s.resolveOpen(r.Context(), edge.OpenKindEnv, []int64{in.ID})
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	p := edge.EnvPatch{Name: &in.Name, Value: &in.Value, Remarks: in.Remarks}
	if in.Labels != nil {
		p.Labels = &in.Labels
	}
	e, err := s.envs.UpdateEnv(r.Context(), ids[0], p, openActor(r))
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	e.Value = in.Value
	views, err := s.openEnvViews(r.Context(), []env.Entry{e}, true)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	openOK(w, views[0])
}

func (s *Server) openDeleteEnvs(w http.ResponseWriter, r *http.Request) {
	ids, ok := s.openBodyIDs(w, r, edge.OpenKindEnv)
	if !ok {
		return
	}
	if _, err := s.envs.DeleteEnvs(r.Context(), ids, openActor(r)); err != nil {
		s.openErr(w, r, err)
		return
	}
	openOK(w, nil)
}

// openBodyIDs decodes an array of numeric ids and resolves them.
func (s *Server) openBodyIDs(w http.ResponseWriter, r *http.Request, kind string) ([]string, bool) {
	nums, err := decodeOpenIDs(w, r)
	if err == nil {
		var ids []string
		if ids, err = s.resolveOpen(r.Context(), kind, nums); err == nil {
			return ids, true
		}
	}
	s.openErr(w, r, err)
	return nil, false
}

func (s *Server) openPatchEnvs(set func(*edge.EnvPatch)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ids, ok := s.openBodyIDs(w, r, edge.OpenKindEnv)
		if !ok {
			return
		}
		var p edge.EnvPatch
		set(&p)
		for _, id := range ids {
			if _, err := s.envs.UpdateEnv(r.Context(), id, p, openActor(r)); err != nil {
				s.openErr(w, r, err)
				return
			}
		}
		openOK(w, nil)
	}
}

func (s *Server) openRenameEnvs(w http.ResponseWriter, r *http.Request) {
	var in OpenRename
	if err := decodeOpen(w, r, &in); err != nil {
		s.openErr(w, r, err)
		return
	}
	if len(in.IDs) == 0 || len(in.IDs) > edge.MaxPageSize || in.Name == "" {
		openFail(w, http.StatusBadRequest, "ids (1..200) and name are required")
		return
	}
	ids, err := s.resolveOpen(r.Context(), edge.OpenKindEnv, in.IDs)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	for _, id := range ids {
		if _, err := s.envs.UpdateEnv(r.Context(), id, edge.EnvPatch{Name: &in.Name}, openActor(r)); err != nil {
			s.openErr(w, r, err)
			return
		}
	}
	openOK(w, nil)
}

// openMoveEnv is QingLong's drag-and-drop move: the entry at fromIndex of
// the list goes to toIndex. ql3 places it before the entry now at toIndex
// (moving up) or after it (moving down).
func (s *Server) openMoveEnv(w http.ResponseWriter, r *http.Request) {
	var in OpenMove
	if err := decodeOpen(w, r, &in); err != nil {
		s.openErr(w, r, err)
		return
	}
	ids, err := s.openPathIDs(r, edge.OpenKindEnv)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	all, err := s.envs.ExportEnvs(r.Context(), false, openActor(r))
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	before, stay, err := qlopen.MoveTarget(all, ids[0], in)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	var e env.Entry
	if stay {
		e, err = s.envs.GetEnv(r.Context(), ids[0])
	} else {
		e, err = s.envs.MoveEnv(r.Context(), ids[0], before)
	}
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	views, err := s.openEnvViews(r.Context(), []env.Entry{e}, false)
	if err != nil {
		s.openErr(w, r, err)
		return
	}
	openOK(w, views[0])
}
