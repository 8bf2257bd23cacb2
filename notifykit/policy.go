package notifykit

import (
	"fmt"
	"math/rand/v2"
	"time"

	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/core/run"
)

// Policy is the timing every deliverer applies: when a row is given up and
// how long it waits between attempts.
type Policy struct {
	// GiveUpAfter: a delivery not accepted this long after it was recorded
	// is given up (reason kept). 0 → 6 h.
	GiveUpAfter time.Duration
	// RetryBase / RetryMax: the backoff between attempts (doubling, with
	// jitter). 0 → 2 s / 10 min.
	RetryBase, RetryMax time.Duration
	// Jitter draws from [0, 1); nil → math/rand/v2.
	Jitter func() float64
}

// WithDefaults fills the zero fields.
func (p Policy) WithDefaults() Policy {
	if p.GiveUpAfter <= 0 {
		p.GiveUpAfter = cn.GiveUpAfterMs * time.Millisecond
	}
	if p.RetryBase <= 0 {
		p.RetryBase = cn.RetryBaseMs * time.Millisecond
	}
	if p.RetryMax < p.RetryBase {
		p.RetryMax = max(p.RetryBase, cn.RetryMaxMs*time.Millisecond)
	}
	if p.Jitter == nil {
		p.Jitter = rand.Float64
	}
	return p
}

// Event is one run event as a deliverer derives notifications from it,
// with what rules match and messages say.
type Event struct {
	Type string
	// ID is the event's unique number in its feed (the edge's position,
	// the cluster's feed id): part of every idempotency key it causes.
	ID         int64
	RunID      string
	TaskID     string
	TaskName   string
	Labels     []string
	PrevFailed bool // the task's previous finished Run did not succeed
	Attempt    int
	ExitCode   *int
	ErrorClass string
	Reason     string
	AtMs       int64
}

// Notifies reports whether an event of this type can notify at all (a
// deliverer skips reading the Run of the others).
func Notifies(eventType string) bool {
	switch run.EventType(eventType) {
	case run.EventFailed, run.EventTimedOut, run.EventLost, run.EventCancelled, run.EventSucceeded:
		return true
	}
	return false
}

// Derive turns one event into outbox rows under rules. states are the
// stored coalescing windows; changed collects the windows this batch moved
// (read before states, written back with the rows).
func (p Policy) Derive(ev Event, rules []Rule, states, changed map[CoalesceKey]cn.CoalesceState, now int64) []NewDelivery {
	if !Notifies(ev.Type) || len(rules) == 0 {
		return nil
	}
	subject := cn.Subject{TaskID: ev.TaskID, Labels: ev.Labels}
	name := ev.TaskName
	if name == "" {
		name = ev.TaskID
	}
	var out []NewDelivery
	for _, k := range cn.KindsOf(ev.Type, ev.PrevFailed) {
		title, content := cn.Compose(cn.Outcome{Kind: k, TaskName: name, RunID: ev.RunID, Attempt: ev.Attempt,
			ExitCode: ev.ExitCode, ErrorClass: ev.ErrorClass, Reason: ev.Reason, AtMs: ev.AtMs})
		for _, r := range rules {
			if !r.Matches(k, subject) {
				continue
			}
			key := CoalesceKey{RuleID: r.ID, TaskID: ev.TaskID}
			st, ok := changed[key]
			if !ok {
				st = states[key]
			}
			send, summary, next := r.Coalesce.Admit(st, now)
			changed[key] = next
			for _, ch := range r.Channels {
				if summary > 0 {
					st, sc := cn.Summary(name, summary, r.Coalesce.WindowMs)
					out = append(out, p.Row(r, ch, ev.RunID, ev.TaskID, KindSummary, st, sc,
						fmt.Sprintf("ql3:notify:v1:summary:%s:%s:%d", r.ID, ch, ev.ID), now))
				}
				if send {
					out = append(out, p.Row(r, ch, ev.RunID, ev.TaskID, string(k), title, content, cn.IdempotencyKey(r.ID, ch, ev.ID, k), now))
				}
			}
		}
	}
	return out
}

// Row builds an outbox row, placing it by the rule's quiet hours.
func (p Policy) Row(r Rule, ch, runID, taskID, kind, title, content, key string, now int64) NewDelivery {
	nd := NewDelivery{Key: key, RuleID: r.ID, ChannelID: ch, RunID: runID, TaskID: taskID, Kind: kind,
		Title: title, Content: content, Status: StatusPending, NextAtMs: now, CreatedMs: now,
		GiveUpMs: now + p.GiveUpAfter.Milliseconds()}
	return Quiet(r, nd, now, p.GiveUpAfter.Milliseconds())
}

// Quiet holds or drops a row inside the rule's quiet hours.
func Quiet(r Rule, nd NewDelivery, now, giveUp int64) NewDelivery {
	if r.Quiet == nil {
		return nd
	}
	end, in := r.Quiet.Until(now)
	if !in {
		return nd
	}
	if r.Quiet.Mode == cn.QuietDrop {
		nd.Status = StatusDropped
		return nd
	}
	nd.Status, nd.NextAtMs, nd.GiveUpMs = StatusHeld, end, end+giveUp
	return nd
}

// Summary is the row that closes a coalescing window of rule r for a task
// (the caller found Flush's n > 0).
func (p Policy) Summary(r Rule, key CoalesceKey, windowStartMs int64, taskName string, n int, now int64) []NewDelivery {
	title, content := cn.Summary(taskName, n, r.Coalesce.WindowMs)
	var rows []NewDelivery
	for _, ch := range r.Channels {
		rows = append(rows, p.Row(r, ch, "", key.TaskID, KindSummary, title, content,
			fmt.Sprintf("ql3:notify:v1:summary:%s:%s:%s:%d", r.ID, ch, key.TaskID, windowStartMs), now))
	}
	return rows
}

// DigestGroup is one digest row and the held rows it replaces.
type DigestGroup struct {
	Row  NewDelivery
	Held []int64
}

// Digests groups held rows whose quiet window ended into one row per
// (rule, channel): the row itself when it is alone, a digest otherwise.
func (p Policy) Digests(held []Delivery, now int64) []DigestGroup {
	type group struct {
		ids    []int64
		titles []string
		first  Delivery
	}
	var order []string
	groups := map[string]*group{}
	for _, h := range held {
		k := h.RuleID + "\x00" + h.ChannelID
		g := groups[k]
		if g == nil {
			g = &group{first: h}
			groups[k] = g
			order = append(order, k)
		}
		g.ids = append(g.ids, h.ID)
		g.titles = append(g.titles, h.Title)
	}
	out := make([]DigestGroup, 0, len(order))
	for _, k := range order {
		g := groups[k]
		nd := NewDelivery{ProjectID: g.first.ProjectID, RuleID: g.first.RuleID, ChannelID: g.first.ChannelID, TaskID: g.first.TaskID, RunID: g.first.RunID,
			Status: StatusPending, NextAtMs: now, CreatedMs: now, GiveUpMs: now + p.GiveUpAfter.Milliseconds(),
			Key: fmt.Sprintf("ql3:notify:v1:digest:%s:%s:%d", g.first.RuleID, g.first.ChannelID, g.ids[0])}
		if len(g.ids) == 1 {
			nd.Kind, nd.Title, nd.Content = g.first.Kind, g.first.Title, g.first.Content
		} else {
			nd.Kind = KindDigest
			nd.Title, nd.Content = cn.Digest(g.titles)
		}
		out = append(out, DigestGroup{Row: nd, Held: g.ids})
	}
	return out
}

// ScriptRows are the rows of one sendNotify call (the seq-th of runID):
// the channels of every rule that matches the task for kind "script",
// each channel once.
func (p Policy) ScriptRows(rules []Rule, runID, taskID string, labels []string, seq int64, m channel.Message, now int64) []NewDelivery {
	subject := cn.Subject{TaskID: taskID, Labels: labels}
	seen := map[string]bool{}
	var rows []NewDelivery
	for _, r := range rules {
		if !r.Matches(cn.KindScript, subject) {
			continue
		}
		for _, ch := range r.Channels {
			if seen[ch] {
				continue
			}
			seen[ch] = true
			nd := NewDelivery{Key: cn.ScriptIdempotencyKey(r.ID, ch, runID, seq), RuleID: r.ID, ChannelID: ch, RunID: runID,
				TaskID: taskID, Kind: string(cn.KindScript), Title: m.Title, Content: m.Content, Status: StatusPending,
				NextAtMs: now, CreatedMs: now, GiveUpMs: now + p.GiveUpAfter.Milliseconds()}
			rows = append(rows, Quiet(r, nd, now, p.GiveUpAfter.Milliseconds()))
		}
	}
	return rows
}

// TestRow is a channel's "send test" row: sent once, now, never retried.
func TestRow(channelID, channelName, from string, now int64) NewDelivery {
	return NewDelivery{Key: fmt.Sprintf("ql3:notify:v1:test:%s:%d:%d", channelID, now, rand.Uint64()), ChannelID: channelID, Kind: KindTest,
		Title: "ql3: test notification", Content: fmt.Sprintf("This is a test of the channel %q from %s.", channelName, from),
		Status: StatusPending, NextAtMs: now, CreatedMs: now, GiveUpMs: now}
}

// Attempted is what one attempt produced: the channel's settings (for
// scrubbing), the HTTP status and the error (nil: accepted).
type Attempted struct {
	Settings   channel.Settings
	StatusCode int
	Err        error
	Start, End time.Time
}

// Decide turns an attempt of row into its recorded outcome: delivered,
// pending with the next try after the backoff, or failed once the next
// try would fall after the give-up time (a test is never retried).
func (p Policy) Decide(row Delivery, a Attempted) Outcome {
	o := Outcome{Attempt: Attempt{N: row.Attempts + 1, AtMs: a.Start.UnixMilli(), StatusCode: a.StatusCode,
		LatencyMs: a.End.Sub(a.Start).Milliseconds()}}
	if a.Err == nil {
		o.Status = StatusDelivered
		return o
	}
	o.Attempt.Error = ScrubSettings(a.Err.Error(), a.Settings)
	next := a.End.UnixMilli() + cn.RetryDelayMs(o.Attempt.N, p.RetryBase.Milliseconds(), p.RetryMax.Milliseconds(), p.Jitter())
	if next > row.GiveUpAtMs || row.Kind == KindTest {
		o.Status = StatusFailed
		if row.Kind != KindTest {
			o.Attempt.Error = Truncate(fmt.Sprintf("gave up after %d attempt(s) in %s: %s", o.Attempt.N,
				time.Duration(a.End.UnixMilli()-row.CreatedAtMs)*time.Millisecond, o.Attempt.Error), 512)
		}
		return o
	}
	o.Status, o.NextAtMs = StatusPending, next
	return o
}

// ScrubSettings removes every credential of st from a message.
func ScrubSettings(msg string, st channel.Settings) string {
	for _, s := range []string{st.Token, st.Secret, st.Password, st.Server} {
		if len(s) >= 4 {
			msg = Scrub(msg, s)
		}
	}
	return msg
}
