package httpapi

import (
	"net/http"
	"strings"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/edge/notify"
	"github.com/ql3/ql3/httpkit"
	"github.com/ql3/ql3/notifykit"
)

// The notification routes (ADR 0046). Channel credentials are write-only:
// no answer carries one. Every change is audited (the store writes the
// audit line in the change's transaction).
//
//	GET    /api/v1/notify/channels              list
//	POST   /api/v1/notify/channels              create
//	GET    /api/v1/notify/channels/{id}         one
//	PATCH  /api/v1/notify/channels/{id}         change (empty credentials keep the stored ones)
//	DELETE /api/v1/notify/channels/{id}
//	POST   /api/v1/notify/channels/{id}/test    send a test message now; the recorded delivery
//	GET    /api/v1/notify/rules | POST
//	GET    /api/v1/notify/rules/{id} | PUT | DELETE
//	GET    /api/v1/notify/deliveries            the delivery log (?status=&channel=&run=&before=&limit=)
//	GET    /api/v1/notify/deliveries/{id}
//	POST   /api/v1/notify/send                  a script's sendNotify, with its Run's token (notify_send.go)

// NotifyConfig wires the notification routes.
type NotifyConfig struct {
	Store     notify.Store
	Deliverer *notify.Deliverer
	Tokens    *notify.Tokens
}

// Body bounds of the notification routes.
const (
	maxNotifyBody = 64 << 10
	maxSendBody   = channel.MaxContentBytes + channel.MaxTitleBytes + 1024
)

var (
	notifyLimits = canonjson.Limits{MaxBytes: maxNotifyBody, MaxDepth: 6, MaxEntries: 300, MaxString: 8 << 10}
	sendLimits   = canonjson.Limits{MaxBytes: maxSendBody, MaxDepth: 2, MaxEntries: 4, MaxString: channel.MaxContentBytes + 1}
)

func (s *Server) notifyRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /api/v1/notify/channels", s.withNotify(s.listChannels))
	mux.HandleFunc("POST /api/v1/notify/channels", s.withNotify(s.createChannel))
	mux.HandleFunc("GET /api/v1/notify/channels/{id}", s.withNotify(s.getChannel))
	mux.HandleFunc("PATCH /api/v1/notify/channels/{id}", s.withNotify(s.patchChannel))
	mux.HandleFunc("DELETE /api/v1/notify/channels/{id}", s.withNotify(s.deleteChannel))
	mux.HandleFunc("POST /api/v1/notify/channels/{id}/test", s.withNotify(s.testChannel))
	mux.HandleFunc("GET /api/v1/notify/rules", s.withNotify(s.listRules))
	mux.HandleFunc("POST /api/v1/notify/rules", s.withNotify(s.createRule))
	mux.HandleFunc("GET /api/v1/notify/rules/{id}", s.withNotify(s.getRule))
	mux.HandleFunc("PUT /api/v1/notify/rules/{id}", s.withNotify(s.replaceRule))
	mux.HandleFunc("DELETE /api/v1/notify/rules/{id}", s.withNotify(s.deleteRule))
	mux.HandleFunc("GET /api/v1/notify/deliveries", s.withNotify(s.listDeliveries))
	mux.HandleFunc("GET /api/v1/notify/deliveries/{id}", s.withNotify(s.getDelivery))
	mux.HandleFunc("POST "+notify.SendPath, s.withNotify(s.sendNotify))
}

// withNotify answers 503 when the server has no notifications.
func (s *Server) withNotify(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.notify == nil || s.notify.Store == nil || s.notify.Deliverer == nil {
			httpkit.Fail(w, r, s.log, errs.E(errs.Unavailable, "", "this server has no notifications"))
			return
		}
		h(w, r)
	}
}

func (s *Server) listChannels(w http.ResponseWriter, r *http.Request) {
	cs, err := s.notify.Store.ListChannels(r.Context())
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, listOf(cs, "", channelView))
}

func (s *Server) createChannel(w http.ResponseWriter, r *http.Request) {
	var req CreateChannelRequest
	if err := decodeEnvBody(w, r, notifyLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	c, err := s.notify.Store.CreateChannel(r.Context(), notify.ChannelInput{Name: req.Name, Enabled: req.Enabled == nil || *req.Enabled,
		Settings: req.Settings.Settings()}, s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, channelView(c))
}

func (s *Server) getChannel(w http.ResponseWriter, r *http.Request) {
	c, err := s.notify.Store.GetChannel(r.Context(), r.PathValue("id"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, channelView(c))
}

func (s *Server) patchChannel(w http.ResponseWriter, r *http.Request) {
	var req PatchChannelRequest
	if err := decodeEnvBody(w, r, notifyLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	p := notify.ChannelPatch{Name: req.Name, Enabled: req.Enabled}
	if req.Settings != nil {
		st := req.Settings.Settings()
		p.Settings = &st
	}
	c, err := s.notify.Store.UpdateChannel(r.Context(), r.PathValue("id"), p, s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, channelView(c))
}

func (s *Server) deleteChannel(w http.ResponseWriter, r *http.Request) {
	if err := s.notify.Store.DeleteChannel(r.Context(), r.PathValue("id"), s.actor(r)); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) testChannel(w http.ResponseWriter, r *http.Request) {
	d, err := s.notify.Deliverer.SendTest(r.Context(), r.PathValue("id"), s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, deliveryView(d))
}

func (s *Server) listRules(w http.ResponseWriter, r *http.Request) {
	rs, err := s.notify.Store.ListRules(r.Context())
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, listOf(rs, "", ruleView))
}

func (s *Server) createRule(w http.ResponseWriter, r *http.Request) {
	var req RuleRequest
	if err := decodeEnvBody(w, r, notifyLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	rule, err := s.notify.Store.CreateRule(r.Context(), req.Input(), s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusCreated, ruleView(rule))
}

func (s *Server) getRule(w http.ResponseWriter, r *http.Request) {
	rule, err := s.notify.Store.GetRule(r.Context(), r.PathValue("id"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, ruleView(rule))
}

func (s *Server) replaceRule(w http.ResponseWriter, r *http.Request) {
	var req RuleRequest
	if err := decodeEnvBody(w, r, notifyLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	rule, err := s.notify.Store.ReplaceRule(r.Context(), r.PathValue("id"), req.Input(), s.actor(r))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, ruleView(rule))
}

func (s *Server) deleteRule(w http.ResponseWriter, r *http.Request) {
	if err := s.notify.Store.DeleteRule(r.Context(), r.PathValue("id"), s.actor(r)); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	f, err := notifykit.ParseDeliveryQuery(r.URL.Query())
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	ds, err := s.notify.Store.ListDeliveries(r.Context(), f)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, notifykit.DeliveryPage(ds, f.Limit))
}

func (s *Server) getDelivery(w http.ResponseWriter, r *http.Request) {
	id, err := notifykit.ParseDeliveryID(r.PathValue("id"))
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	d, err := s.notify.Store.GetDelivery(r.Context(), id)
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, deliveryView(d))
}

// sendNotify is a script's sendNotify(title, content). It takes the Run's
// token (QL3_NOTIFY_TOKEN), never the admin token: the path is open in
// the middleware and checked here. A token names one Run and works while
// that Run is active.
func (s *Server) sendNotify(w http.ResponseWriter, r *http.Request) {
	runID, ok := "", false
	if s.notify.Tokens != nil {
		scheme, tok, found := strings.Cut(r.Header.Get("Authorization"), " ")
		if found && strings.EqualFold(scheme, "Bearer") {
			runID, ok = s.notify.Tokens.Verify(strings.TrimSpace(tok))
		}
	}
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ql3-notify"`)
		httpkit.Fail(w, r, s.log, errs.E(errs.Unauthorized, "Authorization", "this endpoint needs a run's notify token (QL3_NOTIFY_TOKEN)"))
		return
	}
	var req SendNotifyRequest
	if err := decodeEnvBody(w, r, sendLimits, &req); err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	res, err := s.notify.Deliverer.Script(r.Context(), runID, channel.Message{Title: req.Title, Content: req.Content})
	if err != nil {
		httpkit.Fail(w, r, s.log, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusAccepted, SendNotifyResponse{Queued: res.Queued})
}
