package qlcompat

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlopen"
)

// QingLong's /open/envs on the app's project's env store (ADR 0051 for
// the store, ADR 0057 for the mapping, the edge's ADR 0048 semantics):
//
//	GET    /open/envs?searchValue=                      values included; the read is audited (env.export)
//	POST   /open/envs                                   [{name, value, remarks?, labels?}]
//	PUT    /open/envs                                   {id, name, value, remarks?, labels?}
//	DELETE /open/envs                                   [ids]
//	PUT    /open/envs/enable | /disable | /pin | /unpin [ids]
//	PUT    /open/envs/name                              {ids, name}
//	PUT    /open/envs/{id}/move                         {fromIndex, toIndex}
//	GET    /open/envs/{id}                              with its value (audited, env.reveal)
//
// Every change and every read of a value writes its audit line as
// "app:<name>" in the store's own transaction.

func (h *Handler) envRoutes() {
	h.mux.HandleFunc("GET /open/envs", h.withApp(h.withEnvs(h.listEnvs)))
	h.mux.HandleFunc("POST /open/envs", h.withApp(h.withEnvs(h.createEnvs)))
	h.mux.HandleFunc("PUT /open/envs", h.withApp(h.withEnvs(h.updateEnv)))
	h.mux.HandleFunc("DELETE /open/envs", h.withApp(h.withEnvs(h.deleteEnvs)))
	on, off := true, false
	h.mux.HandleFunc("PUT /open/envs/enable", h.withApp(h.withEnvs(h.patchEnvs(controlplane.EnvPatch{Enabled: &on}))))
	h.mux.HandleFunc("PUT /open/envs/disable", h.withApp(h.withEnvs(h.patchEnvs(controlplane.EnvPatch{Enabled: &off}))))
	h.mux.HandleFunc("PUT /open/envs/pin", h.withApp(h.withEnvs(h.patchEnvs(controlplane.EnvPatch{Pinned: &on}))))
	h.mux.HandleFunc("PUT /open/envs/unpin", h.withApp(h.withEnvs(h.patchEnvs(controlplane.EnvPatch{Pinned: &off}))))
	h.mux.HandleFunc("PUT /open/envs/name", h.withApp(h.withEnvs(h.renameEnvs)))
	h.mux.HandleFunc("PUT /open/envs/{id}/move", h.withApp(h.withEnvs(h.moveEnv)))
	h.mux.HandleFunc("GET /open/envs/{id}", h.withApp(h.withEnvs(h.getEnv)))
}

func (h *Handler) withEnvs(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.envs == nil {
			fail(w, http.StatusServiceUnavailable, "this server has no env store")
			return
		}
		next(w, r)
	}
}

func (h *Handler) envViews(r *http.Request, es []env.Entry, withValues bool) ([]qlopen.Env, error) {
	refs := make([]string, len(es))
	for i, e := range es {
		refs[i] = e.ID
	}
	nums, err := h.apps.OpenNums(r.Context(), appOf(r).ProjectID, controlplane.OpenKindEnv, refs)
	if err != nil {
		return nil, err
	}
	out := make([]qlopen.Env, len(es))
	for i, e := range es {
		out[i] = qlopen.EnvOf(e, nums[e.ID], withValues)
	}
	return out, nil
}

func (h *Handler) answerEnvs(w http.ResponseWriter, r *http.Request, es []env.Entry, withValues bool) {
	views, err := h.envViews(r, es, withValues)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	ok(w, views)
}

// listEnvs is QingLong's GET /envs: every entry of the project whose
// name, value or remarks holds searchValue, with values. The store's
// export with values is the read (one audit line, env.export, as the
// app): QingLong's search looks at values, which only an audited read
// may see.
func (h *Handler) listEnvs(w http.ResponseWriter, r *http.Request) {
	q := strings.ToLower(r.URL.Query().Get("searchValue"))
	if len(q) > qlopen.MaxEnvSearch {
		fail(w, http.StatusBadRequest, "searchValue: at most 256 bytes")
		return
	}
	all, err := h.envs.ExportEnvs(r.Context(), appOf(r).ProjectID, true)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	es := all[:0]
	for _, e := range all {
		if qlopen.EnvMatches(e, q) {
			es = append(es, e)
		}
	}
	h.answerEnvs(w, r, es, true)
}

func (h *Handler) pathEnv(r *http.Request) (string, error) {
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || n < 1 {
		return "", errs.Invalidf("id", "must be a number")
	}
	ids, err := h.resolve(r, controlplane.OpenKindEnv, []int64{n})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// getEnv answers one entry with its value (RevealEnv: audited).
func (h *Handler) getEnv(w http.ResponseWriter, r *http.Request) {
	id, err := h.pathEnv(r)
	var e env.Entry
	if err == nil {
		e, err = h.envs.RevealEnv(r.Context(), appOf(r).ProjectID, id)
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	views, err := h.envViews(r, []env.Entry{e}, true)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	ok(w, views[0])
}

func (h *Handler) createEnvs(w http.ResponseWriter, r *http.Request) {
	var in []qlopen.EnvInput
	if err := decode(w, r, &in); err != nil {
		h.fault(w, r, err)
		return
	}
	if len(in) == 0 || len(in) > env.MaxEntries {
		fail(w, http.StatusBadRequest, "parameters are not correct: give an array of 1..10000 {name, value}")
		return
	}
	inputs := make([]controlplane.EnvInput, len(in))
	for i, e := range in {
		if e.ID != 0 {
			fail(w, http.StatusBadRequest, "id: not allowed when creating")
			return
		}
		inputs[i] = controlplane.EnvInput{Name: e.Name, Value: e.Value, Enabled: true, Labels: e.Labels}
		if e.Remarks != nil {
			inputs[i].Remarks = *e.Remarks
		}
	}
	out, err := h.envs.CreateEnvs(r.Context(), appOf(r).ProjectID, inputs)
	if err == nil && len(out) != len(inputs) {
		err = errs.E(errs.Internal, "", "created %d of %d entries", len(out), len(inputs))
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	for i := range out {
		out[i].Value = inputs[i].Value // the app's own values, echoed as QingLong does
	}
	h.answerEnvs(w, r, out, true)
}

func (h *Handler) updateEnv(w http.ResponseWriter, r *http.Request) {
	var in qlopen.EnvInput
	if err := decode(w, r, &in); err != nil {
		h.fault(w, r, err)
		return
	}
	if in.ID == 0 || in.Name == "" {
		fail(w, http.StatusBadRequest, "id, name and value are required")
		return
	}
	ids, err := h.resolve(r, controlplane.OpenKindEnv, []int64{in.ID})
	if err != nil {
		h.fault(w, r, err)
		return
	}
	p := controlplane.EnvPatch{Name: &in.Name, Value: &in.Value, Remarks: in.Remarks}
	if in.Labels != nil {
		p.Labels = &in.Labels
	}
	e, err := h.envs.UpdateEnv(r.Context(), appOf(r).ProjectID, ids[0], p)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	e.Value = in.Value
	views, err := h.envViews(r, []env.Entry{e}, true)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	ok(w, views[0])
}

// bodyEnvs decodes an array of numbers and resolves them in the project.
func (h *Handler) bodyEnvs(w http.ResponseWriter, r *http.Request) ([]string, bool) {
	nums, err := decodeIDs(w, r)
	if err == nil {
		var ids []string
		if ids, err = h.resolve(r, controlplane.OpenKindEnv, nums); err == nil {
			return ids, true
		}
	}
	h.fault(w, r, err)
	return nil, false
}

func (h *Handler) deleteEnvs(w http.ResponseWriter, r *http.Request) {
	ids, found := h.bodyEnvs(w, r)
	if !found {
		return
	}
	if _, err := h.envs.DeleteEnvs(r.Context(), appOf(r).ProjectID, ids); err != nil {
		h.fault(w, r, err)
		return
	}
	ok(w, nil)
}

func (h *Handler) patchEnvs(p controlplane.EnvPatch) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ids, found := h.bodyEnvs(w, r)
		if !found {
			return
		}
		for _, id := range ids {
			if _, err := h.envs.UpdateEnv(r.Context(), appOf(r).ProjectID, id, p); err != nil {
				h.fault(w, r, err)
				return
			}
		}
		ok(w, nil)
	}
}

func (h *Handler) renameEnvs(w http.ResponseWriter, r *http.Request) {
	var in qlopen.Rename
	if err := decode(w, r, &in); err != nil {
		h.fault(w, r, err)
		return
	}
	if len(in.IDs) == 0 || len(in.IDs) > controlplane.MaxListLimit || in.Name == "" {
		fail(w, http.StatusBadRequest, "ids (1..200) and name are required")
		return
	}
	ids, err := h.resolve(r, controlplane.OpenKindEnv, in.IDs)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	for _, id := range ids {
		if _, err := h.envs.UpdateEnv(r.Context(), appOf(r).ProjectID, id, controlplane.EnvPatch{Name: &in.Name}); err != nil {
			h.fault(w, r, err)
			return
		}
	}
	ok(w, nil)
}

// moveEnv is QingLong's drag-and-drop move (qlopen.MoveTarget).
func (h *Handler) moveEnv(w http.ResponseWriter, r *http.Request) {
	var in qlopen.Move
	if err := decode(w, r, &in); err != nil {
		h.fault(w, r, err)
		return
	}
	id, err := h.pathEnv(r)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	project := appOf(r).ProjectID
	all, err := h.envs.ExportEnvs(r.Context(), project, false)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	before, stay, err := qlopen.MoveTarget(all, id, in)
	var e env.Entry
	switch {
	case err != nil:
	case stay:
		e, err = h.envs.GetEnv(r.Context(), project, id)
	default:
		e, err = h.envs.MoveEnv(r.Context(), project, id, before)
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	views, err := h.envViews(r, []env.Entry{e}, false)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	ok(w, views[0])
}
