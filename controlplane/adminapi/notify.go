package adminapi

import (
	"net/http"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/httpkit"
	"github.com/ql3/ql3/notifykit"
)

// Notification routes (ADR 0046, ADR 0053), project-scoped by ?project=
// (id or name) as the task list is; bodies and answers are the edge's
// (notifykit's wire types); credentials are accepted, never returned.
//
//	GET|POST /api/v1/notify/channels                  list, create
//	GET|PATCH|DELETE /api/v1/notify/channels/{id}
//	POST /api/v1/notify/channels/{id}/test            send a test now; answers the delivery
//	GET|POST /api/v1/notify/rules                     list, create
//	GET|PUT|DELETE /api/v1/notify/rules/{id}
//	GET  /api/v1/notify/deliveries                    newest first (?status=&channel=&run=&before=&limit=)
//	GET  /api/v1/notify/deliveries/{id}               one delivery with its attempts

// NotifyPorts are what the notification routes need; nil answers them 503.
type NotifyPorts struct {
	Config controlplane.NotifyConfig
	Tester controlplane.NotifyTester
}

func (s *Server) notifyRoutes(mux httpkit.Mux) {
	for _, r := range []struct {
		pattern string
		h       func(http.ResponseWriter, *http.Request, string)
	}{
		{"GET /api/v1/notify/channels", s.listNotifyChannels},
		{"POST /api/v1/notify/channels", s.createNotifyChannel},
		{"GET /api/v1/notify/channels/{id}", s.getNotifyChannel},
		{"PATCH /api/v1/notify/channels/{id}", s.patchNotifyChannel},
		{"DELETE /api/v1/notify/channels/{id}", s.deleteNotifyChannel},
		{"POST /api/v1/notify/channels/{id}/test", s.testNotifyChannel},
		{"GET /api/v1/notify/rules", s.listNotifyRules},
		{"POST /api/v1/notify/rules", s.createNotifyRule},
		{"GET /api/v1/notify/rules/{id}", s.getNotifyRule},
		{"PUT /api/v1/notify/rules/{id}", s.replaceNotifyRule},
		{"DELETE /api/v1/notify/rules/{id}", s.deleteNotifyRule},
		{"GET /api/v1/notify/deliveries", s.listNotifyDeliveries},
		{"GET /api/v1/notify/deliveries/{id}", s.getNotifyDelivery},
	} {
		mux.HandleFunc(r.pattern, s.withNotify(r.h))
	}
}

// withNotify answers 503 without notifications and resolves ?project=.
func (s *Server) withNotify(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.notify.Config == nil || s.notify.Tester == nil {
			s.fail(w, r, errs.E(errs.Unavailable, "", "notifications are off on this replica: start it with --secret-key-file"))
			return
		}
		p, err := s.resolveProject(r.Context(), "project", r.URL.Query().Get("project"))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		h(w, r, p.ID)
	}
}

// answer writes v (or the error) with status.
func answer[T, V any](s *Server, w http.ResponseWriter, r *http.Request, status int, v T, err error, view func(T) V) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, status, view(v))
}

func listView[S, T any](view func(S) T) func([]S) List[T] {
	return func(items []S) List[T] {
		out := List[T]{Items: make([]T, 0, len(items))}
		for _, it := range items {
			out.Items = append(out.Items, view(it))
		}
		return out
	}
}

func (s *Server) listNotifyChannels(w http.ResponseWriter, r *http.Request, project string) {
	cs, err := s.notify.Config.ListChannels(r.Context(), project)
	answer(s, w, r, http.StatusOK, cs, err, listView(notifykit.ChannelView))
}

func (s *Server) createNotifyChannel(w http.ResponseWriter, r *http.Request, project string) {
	var req notifykit.CreateChannelRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := s.notify.Config.CreateChannel(r.Context(), project, notifykit.ChannelInput{Name: req.Name,
		Enabled: req.Enabled == nil || *req.Enabled, Settings: req.Settings.Settings()})
	answer(s, w, r, http.StatusCreated, c, err, notifykit.ChannelView)
}

func (s *Server) getNotifyChannel(w http.ResponseWriter, r *http.Request, project string) {
	c, err := s.notify.Config.GetChannel(r.Context(), project, r.PathValue("id"))
	answer(s, w, r, http.StatusOK, c, err, notifykit.ChannelView)
}

func (s *Server) patchNotifyChannel(w http.ResponseWriter, r *http.Request, project string) {
	var req notifykit.PatchChannelRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	p := notifykit.ChannelPatch{Name: req.Name, Enabled: req.Enabled}
	if req.Settings != nil {
		st := req.Settings.Settings()
		p.Settings = &st
	}
	c, err := s.notify.Config.UpdateChannel(r.Context(), project, r.PathValue("id"), p)
	answer(s, w, r, http.StatusOK, c, err, notifykit.ChannelView)
}

func (s *Server) deleteNotifyChannel(w http.ResponseWriter, r *http.Request, project string) {
	if err := s.notify.Config.DeleteChannel(r.Context(), project, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) testNotifyChannel(w http.ResponseWriter, r *http.Request, project string) {
	id, err := s.notify.Config.QueueTest(r.Context(), project, r.PathValue("id"), s.now().UnixMilli())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.notify.Tester.DeliverNow(r.Context(), id)
	answer(s, w, r, http.StatusOK, d, err, notifykit.DeliveryView)
}

func (s *Server) listNotifyRules(w http.ResponseWriter, r *http.Request, project string) {
	rs, err := s.notify.Config.ListRules(r.Context(), project)
	answer(s, w, r, http.StatusOK, rs, err, listView(notifykit.RuleView))
}

func (s *Server) createNotifyRule(w http.ResponseWriter, r *http.Request, project string) {
	var req notifykit.RuleRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	rule, err := s.notify.Config.CreateRule(r.Context(), project, req.Input())
	answer(s, w, r, http.StatusCreated, rule, err, notifykit.RuleView)
}

func (s *Server) getNotifyRule(w http.ResponseWriter, r *http.Request, project string) {
	rule, err := s.notify.Config.GetRule(r.Context(), project, r.PathValue("id"))
	answer(s, w, r, http.StatusOK, rule, err, notifykit.RuleView)
}

func (s *Server) replaceNotifyRule(w http.ResponseWriter, r *http.Request, project string) {
	var req notifykit.RuleRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	rule, err := s.notify.Config.ReplaceRule(r.Context(), project, r.PathValue("id"), req.Input())
	answer(s, w, r, http.StatusOK, rule, err, notifykit.RuleView)
}

func (s *Server) deleteNotifyRule(w http.ResponseWriter, r *http.Request, project string) {
	if err := s.notify.Config.DeleteRule(r.Context(), project, r.PathValue("id")); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listNotifyDeliveries(w http.ResponseWriter, r *http.Request, project string) {
	f, err := notifykit.ParseDeliveryQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ds, err := s.notify.Config.ListDeliveries(r.Context(), project, f)
	answer(s, w, r, http.StatusOK, ds, err, func(ds []notifykit.Delivery) notifykit.DeliveryList { return notifykit.DeliveryPage(ds, f.Limit) })
}

func (s *Server) getNotifyDelivery(w http.ResponseWriter, r *http.Request, project string) {
	id, err := notifykit.ParseDeliveryID(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.notify.Config.GetDelivery(r.Context(), project, id)
	answer(s, w, r, http.StatusOK, d, err, notifykit.DeliveryView)
}
