package notifykit

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/errs"
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
)

// Wire types of the notification routes (/api/v1/notify, ADR 0046).
// Credentials are accepted, never returned: a channel answers with its
// public settings and the names of the credentials that are set.

// NotifyHeader is one custom header of a webhook channel (write-only: the
// answer lists header names only).
type NotifyHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ChannelSettings are a channel's settings as written. token, secret,
// password, username, server and headers are write-only; on PATCH an empty
// one keeps the stored value.
type ChannelSettings struct {
	Kind     string         `json:"kind"`
	Server   string         `json:"server,omitempty"`
	Token    string         `json:"token,omitempty"`
	Secret   string         `json:"secret,omitempty"`
	ChatID   string         `json:"chatId,omitempty"`
	Topic    string         `json:"topic,omitempty"`
	Headers  []NotifyHeader `json:"headers,omitempty"`
	Proxy    string         `json:"proxy,omitempty"`
	SMTPHost string         `json:"smtpHost,omitempty"`
	SMTPPort int            `json:"smtpPort,omitempty"`
	Username string         `json:"username,omitempty"`
	Password string         `json:"password,omitempty"`
	From     string         `json:"from,omitempty"`
	To       []string       `json:"to,omitempty"`
}

// Settings converts the request form.
func (c ChannelSettings) Settings() channel.Settings {
	s := channel.Settings{Kind: c.Kind, Server: c.Server, Token: c.Token, Secret: c.Secret, ChatID: c.ChatID, Topic: c.Topic,
		Proxy: c.Proxy, SMTPHost: c.SMTPHost, SMTPPort: c.SMTPPort, Username: c.Username, Password: c.Password, From: c.From, To: c.To}
	if c.Headers != nil {
		s.Header = make([][2]string, 0, len(c.Headers))
		for _, h := range c.Headers {
			s.Header = append(s.Header, [2]string{h.Name, h.Value})
		}
	}
	return s
}

// CreateChannelRequest is the body of POST /api/v1/notify/channels.
// Enabled defaults to true.
type CreateChannelRequest struct {
	Name     string          `json:"name"`
	Enabled  *bool           `json:"enabled,omitempty"`
	Settings ChannelSettings `json:"settings"`
}

// PatchChannelRequest is the body of PATCH /api/v1/notify/channels/{id}.
type PatchChannelRequest struct {
	Name     *string          `json:"name,omitempty"`
	Enabled  *bool            `json:"enabled,omitempty"`
	Settings *ChannelSettings `json:"settings,omitempty"`
}

// NotifyChannel is a channel without any credential.
type NotifyChannel struct {
	ID          string         `json:"id"`
	Name        string         `json:"name"`
	Kind        string         `json:"kind"`
	Enabled     bool           `json:"enabled"`
	Settings    PublicSettings `json:"settings"`
	CreatedAtMs int64          `json:"createdAtMs"`
	UpdatedAtMs int64          `json:"updatedAtMs"`
}

// ChannelView is the API view of c.
func ChannelView(c Channel) NotifyChannel {
	return NotifyChannel{ID: c.ID, Name: c.Name, Kind: c.Kind, Enabled: c.Enabled, Settings: c.Public,
		CreatedAtMs: c.CreatedAtMs, UpdatedAtMs: c.UpdatedAtMs}
}

// QuietHoursBody is a rule's daily quiet window in a named zone.
type QuietHoursBody struct {
	Zone  string `json:"zone"`
	Start string `json:"start"`          // HH:MM
	End   string `json:"end"`            // HH:MM
	Mode  string `json:"mode,omitempty"` // hold (default: one digest when it ends) or drop
}

// CoalesceBody caps messages per task per window (max 0 = no cap).
type CoalesceBody struct {
	Max      int   `json:"max,omitempty"`
	WindowMs int64 `json:"windowMs,omitempty"`
}

// RuleRequest is the body of POST /api/v1/notify/rules and PUT
// /api/v1/notify/rules/{id}. kinds default to failed, timed_out, lost;
// taskIds and labels empty = every task. Enabled defaults to true.
type RuleRequest struct {
	Name     string          `json:"name"`
	Kinds    []string        `json:"kinds,omitempty"`
	TaskIDs  []string        `json:"taskIds,omitempty"`
	Labels   []string        `json:"labels,omitempty"`
	Channels []string        `json:"channels"`
	Quiet    *QuietHoursBody `json:"quiet,omitempty"`
	Coalesce *CoalesceBody   `json:"coalesce,omitempty"`
	Enabled  *bool           `json:"enabled,omitempty"`
}

// Input converts the request form.
func (r RuleRequest) Input() RuleInput {
	in := RuleInput{Name: r.Name, Rule: cn.Rule{TaskIDs: r.TaskIDs, Labels: r.Labels, Channels: r.Channels,
		Enabled: r.Enabled == nil || *r.Enabled}}
	for _, k := range r.Kinds {
		in.Rule.Kinds = append(in.Rule.Kinds, cn.Kind(k))
	}
	if r.Quiet != nil {
		in.Rule.Quiet = &cn.QuietHours{Zone: r.Quiet.Zone, Start: r.Quiet.Start, End: r.Quiet.End, Mode: r.Quiet.Mode}
	}
	if r.Coalesce != nil {
		in.Rule.Coalesce = cn.Coalesce{Max: r.Coalesce.Max, WindowMs: r.Coalesce.WindowMs}
	}
	return in
}

// NotifyRule is a stored rule.
type NotifyRule struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Kinds       []string        `json:"kinds"`
	TaskIDs     []string        `json:"taskIds,omitempty"`
	Labels      []string        `json:"labels,omitempty"`
	Channels    []string        `json:"channels"`
	Quiet       *QuietHoursBody `json:"quiet,omitempty"`
	Coalesce    CoalesceBody    `json:"coalesce"`
	Enabled     bool            `json:"enabled"`
	CreatedAtMs int64           `json:"createdAtMs"`
	UpdatedAtMs int64           `json:"updatedAtMs"`
}

// RuleView is the API view of r.
func RuleView(r Rule) NotifyRule {
	out := NotifyRule{ID: r.ID, Name: r.Name, TaskIDs: r.TaskIDs, Labels: r.Labels, Channels: r.Channels, Enabled: r.Enabled,
		Coalesce: CoalesceBody{Max: r.Coalesce.Max, WindowMs: r.Coalesce.WindowMs}, CreatedAtMs: r.CreatedAtMs, UpdatedAtMs: r.UpdatedAtMs,
		Kinds: make([]string, 0, len(r.Kinds))}
	for _, k := range r.Kinds {
		out.Kinds = append(out.Kinds, string(k))
	}
	if r.Quiet != nil {
		out.Quiet = &QuietHoursBody{Zone: r.Quiet.Zone, Start: r.Quiet.Start, End: r.Quiet.End, Mode: r.Quiet.Mode}
	}
	return out
}

// NotifyAttempt is one try of a delivery.
type NotifyAttempt struct {
	N          int    `json:"n"`
	AtMs       int64  `json:"atMs"`
	StatusCode int    `json:"statusCode,omitempty"`
	Error      string `json:"error,omitempty"`
	LatencyMs  int64  `json:"latencyMs"`
}

// NotifyDelivery is one outbox row with its attempts (the delivery log).
type NotifyDelivery struct {
	ID             int64           `json:"id"`
	IdempotencyKey string          `json:"idempotencyKey"`
	RuleID         string          `json:"ruleId,omitempty"`
	ChannelID      string          `json:"channelId"`
	RunID          string          `json:"runId,omitempty"`
	TaskID         string          `json:"taskId,omitempty"`
	Kind           string          `json:"kind"`
	Title          string          `json:"title"`
	Status         string          `json:"status"`
	CreatedAtMs    int64           `json:"createdAtMs"`
	NextAtMs       int64           `json:"nextAtMs,omitempty"`
	GiveUpAtMs     int64           `json:"giveUpAtMs"`
	Attempts       int             `json:"attempts"`
	LastStatus     int             `json:"lastStatus,omitempty"`
	LastError      string          `json:"lastError,omitempty"`
	FinishedAtMs   int64           `json:"finishedAtMs,omitempty"`
	DigestID       int64           `json:"digestId,omitempty"`
	Log            []NotifyAttempt `json:"log"`
}

// DeliveryView is the API view of d.
func DeliveryView(d Delivery) NotifyDelivery {
	out := NotifyDelivery{ID: d.ID, IdempotencyKey: d.Key, RuleID: d.RuleID, ChannelID: d.ChannelID, RunID: d.RunID, TaskID: d.TaskID,
		Kind: d.Kind, Title: d.Title, Status: d.Status, CreatedAtMs: d.CreatedAtMs, GiveUpAtMs: d.GiveUpAtMs, Attempts: d.Attempts,
		LastStatus: d.LastStatus, LastError: d.LastError, FinishedAtMs: d.FinishedAtMs, DigestID: d.DigestID,
		Log: make([]NotifyAttempt, 0, len(d.AttemptLog))}
	if d.Status == StatusPending || d.Status == StatusHeld {
		out.NextAtMs = d.NextAtMs
	}
	for _, a := range d.AttemptLog {
		out.Log = append(out.Log, NotifyAttempt{N: a.N, AtMs: a.AtMs, StatusCode: a.StatusCode, Error: a.Error, LatencyMs: a.LatencyMs})
	}
	return out
}

// DeliveryList is a page of GET /api/v1/notify/deliveries, newest first;
// nextBefore is the ?before= of the next page (0: none).
type DeliveryList struct {
	Items      []NotifyDelivery `json:"items"`
	NextBefore int64            `json:"nextBefore,omitempty"`
}

// SendNotifyRequest is the body of POST /api/v1/notify/send: a script's
// sendNotify(title, content), with the Run's token.
type SendNotifyRequest struct {
	Title   string `json:"title"`
	Content string `json:"content"`
}

// SendNotifyResponse says how many channels the message was queued for.
type SendNotifyResponse struct {
	Queued int `json:"queued"`
}

// DeliveryStatuses are the outbox statuses a list may filter on.
var DeliveryStatuses = []string{StatusPending, StatusHeld, StatusDelivered, StatusFailed, StatusDropped, StatusDigested}

// ParseDeliveryQuery reads GET /api/v1/notify/deliveries' query: status,
// channel, run, before (keyset) and limit (1..MaxPage, default 50).
func ParseDeliveryQuery(q url.Values) (DeliveryFilter, error) {
	f := DeliveryFilter{Status: q.Get("status"), ChannelID: q.Get("channel"), RunID: q.Get("run"), Limit: 50}
	if f.Status != "" && !slices.Contains(DeliveryStatuses, f.Status) {
		return f, errs.Invalidf("status", "must be one of %s, got %q", strings.Join(DeliveryStatuses, ", "), f.Status)
	}
	for _, p := range []struct {
		name string
		dst  *int64
		max  int64
	}{{"before", &f.BeforeID, 1 << 62}, {"limit", nil, MaxPage}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > p.max {
			return f, errs.Invalidf(p.name, "must be an integer 1..%d, got %q", p.max, v)
		}
		if p.dst != nil {
			*p.dst = n
		} else {
			f.Limit = int(n)
		}
	}
	return f, nil
}

// DeliveryPage is the list answer: nextBefore is set when the page is full.
func DeliveryPage(ds []Delivery, limit int) DeliveryList {
	out := DeliveryList{Items: make([]NotifyDelivery, 0, len(ds))}
	for _, d := range ds {
		out.Items = append(out.Items, DeliveryView(d))
	}
	if len(ds) == limit && len(ds) > 0 {
		out.NextBefore = ds[len(ds)-1].ID
	}
	return out
}

// ParseDeliveryID reads a delivery id path value.
func ParseDeliveryID(v string) (int64, error) {
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 {
		return 0, errs.Invalidf("id", "must be a delivery id (a positive integer)")
	}
	return id, nil
}
