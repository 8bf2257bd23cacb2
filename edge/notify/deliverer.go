package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/ql3/ql3/core/errs"
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

// Runs is what the deliverer reads of runs and tasks to word a message.
type Runs interface {
	GetRun(ctx context.Context, runID string) (edge.Run, error)
	GetTask(ctx context.Context, taskID string) (edge.Task, error)
	ListRuns(ctx context.Context, f edge.RunFilter) (edge.RunPage, error)
}

// Config wires a Deliverer.
type Config struct {
	Store  Store
	Feed   edge.EventFeed
	Runs   Runs
	Sender *Sender
	Clock  clock.Clock  // nil → clock.Real{}
	Logger *slog.Logger // nil → discard
	// GiveUpAfter: a delivery not accepted this long after it was recorded
	// is given up (reason kept). 0 → 6 h.
	GiveUpAfter time.Duration
	// RetryBase / RetryMax: the backoff between attempts (doubling, with
	// jitter). 0 → 2 s / 10 min.
	RetryBase, RetryMax time.Duration
	// Jitter draws from [0, 1); nil → math/rand/v2.
	Jitter func() float64
	// Batch bounds the feed events and deliveries handled per step. 0 → 100.
	Batch int
}

// Deliverer follows the feed, writes the outbox and delivers it.
type Deliverer struct {
	cfg     Config
	log     *slog.Logger
	kick    chan struct{}
	scripts scriptState // sendNotify calls per Run (script.go)

	flushAtMs atomic.Int64 // earliest end of a coalescing window holding outcomes (0: none)
}

// New checks cfg.
func New(cfg Config) (*Deliverer, error) {
	if cfg.Store == nil || cfg.Feed == nil || cfg.Runs == nil {
		return nil, errors.New("notify: Store, Feed and Runs are required")
	}
	if cfg.Sender == nil {
		cfg.Sender = &Sender{}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.GiveUpAfter <= 0 {
		cfg.GiveUpAfter = cn.GiveUpAfterMs * time.Millisecond
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = cn.RetryBaseMs * time.Millisecond
	}
	if cfg.RetryMax < cfg.RetryBase {
		cfg.RetryMax = max(cfg.RetryBase, cn.RetryMaxMs*time.Millisecond)
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	if cfg.Batch <= 0 || cfg.Batch > MaxPage {
		cfg.Batch = 100
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Deliverer{cfg: cfg, log: log, kick: make(chan struct{}, 1)}, nil
}

// Kick wakes Run (a new row was added outside the feed).
func (d *Deliverer) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func (d *Deliverer) nowMs() int64 { return d.cfg.Clock.Now().UnixMilli() }

// Run steps until ctx ends, sleeping until the next event, the next due
// row or a kick. Errors are logged and retried after a short pause.
func (d *Deliverer) Run(ctx context.Context) error {
	defer d.cfg.Sender.CloseIdle()
	for {
		woken := d.cfg.Feed.EventsAppended()
		wait := time.Minute
		if err := d.Step(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			d.log.Warn("notifications: step failed", "err", err)
			wait = 5 * time.Second
		} else {
			if at, ok, err := d.cfg.Store.NextDueMs(ctx); err == nil && ok {
				wait = min(wait, max(time.Duration(at-d.nowMs())*time.Millisecond, 0))
			}
			if at := d.flushAtMs.Load(); at > 0 {
				wait = min(wait, max(time.Duration(at-d.nowMs())*time.Millisecond, 0))
			}
		}
		t := d.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-woken:
		case <-d.kick:
		case <-t.C():
		}
		t.Stop()
	}
}

// Step does everything that is due now: derive rows from new feed events
// (until the feed is drained), flush coalescing summaries, release quiet
// hours' digests, and deliver due rows (one batch).
func (d *Deliverer) Step(ctx context.Context) error {
	for {
		more, err := d.consume(ctx)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	if err := d.flushCoalesced(ctx); err != nil {
		return err
	}
	if err := d.releaseHeld(ctx); err != nil {
		return err
	}
	return d.deliverDue(ctx)
}

// consume reads one batch of feed events after the cursor and writes what
// they notify, advancing the cursor in the same transaction.
func (d *Deliverer) consume(ctx context.Context) (bool, error) {
	from, err := d.cfg.Feed.ConsumerPosition(ctx, ConsumerName)
	if err != nil {
		return false, err
	}
	evs, err := d.cfg.Feed.Events(ctx, from, d.cfg.Batch)
	if err != nil || len(evs) == 0 {
		return false, err
	}
	rules, err := d.cfg.Store.ListRules(ctx)
	if err != nil {
		return false, err
	}
	states, err := d.cfg.Store.CoalesceStates(ctx)
	if err != nil {
		return false, err
	}
	changed := map[CoalesceKey]cn.CoalesceState{}
	var rows []NewDelivery
	for _, ev := range evs {
		r, err := d.derive(ctx, ev, rules, states, changed)
		if err != nil {
			return false, err
		}
		rows = append(rows, r...)
	}
	to := evs[len(evs)-1].Position
	if err := d.cfg.Store.Enqueue(ctx, ConsumerName, from, to, rows, changed); err != nil {
		return false, err
	}
	return len(evs) == d.cfg.Batch, nil
}

// derive turns one event into outbox rows.
func (d *Deliverer) derive(ctx context.Context, ev edge.FeedEvent, rules []Rule, states, changed map[CoalesceKey]cn.CoalesceState) ([]NewDelivery, error) {
	switch ev.Type {
	case run.EventFailed, run.EventTimedOut, run.EventLost, run.EventCancelled, run.EventSucceeded:
	default:
		return nil, nil
	}
	if len(rules) == 0 {
		return nil, nil
	}
	rn, err := d.cfg.Runs.GetRun(ctx, ev.RunID)
	if errs.Code(err) == errs.NotFound {
		return nil, nil // pruned by retention before we got to it
	}
	if err != nil {
		return nil, err
	}
	task, err := d.cfg.Runs.GetTask(ctx, rn.TaskID)
	if err != nil && errs.Code(err) != errs.NotFound {
		return nil, err
	}
	prevFailed := false
	if ev.Type == run.EventSucceeded {
		if prevFailed, err = d.previousFailed(ctx, rn); err != nil {
			return nil, err
		}
	}
	subject := cn.Subject{TaskID: rn.TaskID, Labels: TaskLabels(task)}
	name := task.Name
	if name == "" {
		name = rn.TaskID
	}
	now := d.nowMs()
	var out []NewDelivery
	for _, k := range cn.KindsOf(string(ev.Type), prevFailed) {
		title, content := cn.Compose(cn.Outcome{Kind: k, TaskName: name, RunID: rn.ID, Attempt: ev.Payload.AttemptNumber,
			ExitCode: ev.Payload.ExitCode, ErrorClass: string(ev.Payload.ErrorClass), Reason: ev.Payload.Reason, AtMs: ev.AtMs})
		for _, r := range rules {
			if !r.Matches(k, subject) {
				continue
			}
			key := CoalesceKey{RuleID: r.ID, TaskID: rn.TaskID}
			st, ok := changed[key]
			if !ok {
				st = states[key]
			}
			send, summary, next := r.Coalesce.Admit(st, now)
			changed[key] = next
			for _, ch := range r.Channels {
				if summary > 0 {
					st, sc := cn.Summary(name, summary, r.Coalesce.WindowMs)
					out = append(out, d.row(r, ch, rn, KindSummary, st, sc,
						fmt.Sprintf("ql3:notify:v1:summary:%s:%s:%d", r.ID, ch, ev.Position), now))
				}
				if send {
					out = append(out, d.row(r, ch, rn, string(k), title, content, cn.IdempotencyKey(r.ID, ch, ev.Position, k), now))
				}
			}
		}
	}
	return out, nil
}

// row builds an outbox row, placing it by the rule's quiet hours.
func (d *Deliverer) row(r Rule, ch string, rn edge.Run, kind, title, content, key string, now int64) NewDelivery {
	nd := NewDelivery{Key: key, RuleID: r.ID, ChannelID: ch, RunID: rn.ID, TaskID: rn.TaskID, Kind: kind,
		Title: title, Content: content, Status: StatusPending, NextAtMs: now, CreatedMs: now,
		GiveUpMs: now + d.cfg.GiveUpAfter.Milliseconds()}
	return quiet(r, nd, now, d.cfg.GiveUpAfter.Milliseconds())
}

// quiet holds or drops a row inside the rule's quiet hours.
func quiet(r Rule, nd NewDelivery, now, giveUp int64) NewDelivery {
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

// previousFailed: did the task's previous finished Run not succeed?
func (d *Deliverer) previousFailed(ctx context.Context, rn edge.Run) (bool, error) {
	page, err := d.cfg.Runs.ListRuns(ctx, edge.RunFilter{TaskID: rn.TaskID, Limit: 10,
		Statuses: []run.RunStatus{run.RunSucceeded, run.RunFailed, run.RunTimedOut, run.RunCancelled, run.RunLost}})
	if err != nil {
		return false, err
	}
	seen := false
	for _, p := range page.Runs {
		if p.ID == rn.ID {
			seen = true
			continue
		}
		if seen || p.CreatedAtMs < rn.CreatedAtMs {
			switch p.Status {
			case run.RunFailed, run.RunTimedOut, run.RunLost:
				return true, nil
			}
			return false, nil
		}
	}
	return false, nil
}

// TaskLabels are the labels rules match a task by: on the edge, the
// task's required placement labels as "key=value".
func TaskLabels(t edge.Task) []string {
	if t.Spec.Placement == nil {
		return nil
	}
	var out []string
	for k, v := range t.Spec.Placement.Required.Labels {
		out = append(out, k+"="+v)
	}
	return out
}

// flushCoalesced writes the summary of windows that ended with outcomes
// held back and no later outcome to carry it.
func (d *Deliverer) flushCoalesced(ctx context.Context) error {
	states, err := d.cfg.Store.CoalesceStates(ctx)
	if err != nil {
		return err
	}
	now := d.nowMs()
	var (
		rules   map[string]Rule
		flushAt int64
	)
	defer func() { d.flushAtMs.Store(flushAt) }()
	for key, st := range states {
		if st.Held == 0 {
			continue
		}
		if rules == nil {
			list, err := d.cfg.Store.ListRules(ctx)
			if err != nil {
				return err
			}
			rules = map[string]Rule{}
			for _, r := range list {
				rules[r.ID] = r
			}
		}
		r, ok := rules[key.RuleID]
		if !ok {
			continue
		}
		n, next := r.Coalesce.Flush(st, now)
		if n == 0 {
			if end := st.WindowStartMs + r.Coalesce.WindowMs; end > now && (flushAt == 0 || end < flushAt) {
				flushAt = end // the loop wakes for this summary
			}
			continue
		}
		name := key.TaskID
		if t, err := d.cfg.Runs.GetTask(ctx, key.TaskID); err == nil {
			name = t.Name
		}
		title, content := cn.Summary(name, n, r.Coalesce.WindowMs)
		var rows []NewDelivery
		for _, ch := range r.Channels {
			rows = append(rows, d.row(r, ch, edge.Run{TaskID: key.TaskID}, KindSummary, title, content,
				fmt.Sprintf("ql3:notify:v1:summary:%s:%s:%s:%d", r.ID, ch, key.TaskID, st.WindowStartMs), now))
		}
		pos, err := d.cfg.Feed.ConsumerPosition(ctx, ConsumerName)
		if err != nil {
			return err
		}
		if err := d.cfg.Store.Enqueue(ctx, ConsumerName, pos, pos, rows, map[CoalesceKey]cn.CoalesceState{key: next}); err != nil {
			return err
		}
	}
	return nil
}

// releaseHeld turns held rows whose quiet window ended into one digest per
// (rule, channel).
func (d *Deliverer) releaseHeld(ctx context.Context) error {
	now := d.nowMs()
	held, err := d.cfg.Store.HeldDue(ctx, now, d.cfg.Batch)
	if err != nil || len(held) == 0 {
		return err
	}
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
	for _, k := range order {
		g := groups[k]
		nd := NewDelivery{RuleID: g.first.RuleID, ChannelID: g.first.ChannelID, TaskID: g.first.TaskID, RunID: g.first.RunID,
			Status: StatusPending, NextAtMs: now, CreatedMs: now, GiveUpMs: now + d.cfg.GiveUpAfter.Milliseconds(),
			Key: fmt.Sprintf("ql3:notify:v1:digest:%s:%s:%d", g.first.RuleID, g.first.ChannelID, g.ids[0])}
		if len(g.ids) == 1 {
			nd.Kind, nd.Title, nd.Content = g.first.Kind, g.first.Title, g.first.Content
		} else {
			nd.Kind = KindDigest
			nd.Title, nd.Content = cn.Digest(g.titles)
		}
		if err := d.cfg.Store.Digest(ctx, nd, g.ids); err != nil {
			return err
		}
	}
	return nil
}

// deliverDue sends one batch of due rows.
func (d *Deliverer) deliverDue(ctx context.Context) error {
	due, err := d.cfg.Store.Due(ctx, d.nowMs(), d.cfg.Batch)
	if err != nil {
		return err
	}
	for _, row := range due {
		if _, err := d.deliver(ctx, row); err != nil {
			return err
		}
	}
	return nil
}

// deliver makes one attempt of row and records it.
func (d *Deliverer) deliver(ctx context.Context, row Delivery) (Outcome, error) {
	start := d.cfg.Clock.Now()
	o := Outcome{Attempt: Attempt{N: row.Attempts + 1, AtMs: start.UnixMilli()}}
	st, ch, err := d.cfg.Store.ChannelSettings(ctx, row.ChannelID)
	switch {
	case errs.Code(err) == errs.NotFound:
		o.Attempt.Error = "channel deleted"
		o.Status = StatusFailed
		return o, d.cfg.Store.Record(ctx, row.ID, o)
	case err != nil:
		return o, err
	case !ch.Enabled && row.Kind != KindTest:
		err = &SendError{Reason: "channel disabled"}
	default:
		var status int
		status, err = d.cfg.Sender.Send(ctx, st, channel.Message{Title: row.Title, Content: row.Content, IdempotencyKey: row.Key}, start.UnixMilli())
		o.Attempt.StatusCode = status
	}
	end := d.cfg.Clock.Now()
	o.Attempt.LatencyMs = end.Sub(start).Milliseconds()
	if err == nil {
		o.Status = StatusDelivered
		return o, d.cfg.Store.Record(ctx, row.ID, o)
	}
	o.Attempt.Error = scrubSettings(err.Error(), st)
	next := end.UnixMilli() + cn.RetryDelayMs(o.Attempt.N, d.cfg.RetryBase.Milliseconds(), d.cfg.RetryMax.Milliseconds(), d.cfg.Jitter())
	if next > row.GiveUpAtMs || row.Kind == KindTest {
		o.Status = StatusFailed
		if row.Kind != KindTest {
			o.Attempt.Error = truncate(fmt.Sprintf("gave up after %d attempt(s) in %s: %s", o.Attempt.N,
				time.Duration(end.UnixMilli()-row.CreatedAtMs)*time.Millisecond, o.Attempt.Error), 512)
		}
	} else {
		o.Status, o.NextAtMs = StatusPending, next
	}
	d.log.Info("notification attempt failed", "delivery", row.ID, "channel", row.ChannelID, "attempt", o.Attempt.N,
		"status", o.Attempt.StatusCode, "err", o.Attempt.Error, "final", o.Status == StatusFailed)
	return o, d.cfg.Store.Record(ctx, row.ID, o)
}

// scrubSettings removes every credential of st from a message.
func scrubSettings(msg string, st channel.Settings) string {
	for _, s := range []string{st.Token, st.Secret, st.Password, st.Server} {
		if len(s) >= 4 {
			msg = scrub(msg, s)
		}
	}
	return msg
}

// SendTest delivers a test message through a channel now (even a disabled
// one) and returns the recorded delivery.
func (d *Deliverer) SendTest(ctx context.Context, channelID, actor string) (Delivery, error) {
	_, ch, err := d.cfg.Store.ChannelSettings(ctx, channelID)
	if err != nil {
		return Delivery{}, err
	}
	now := d.nowMs()
	nd := NewDelivery{Key: fmt.Sprintf("ql3:notify:v1:test:%s:%d:%d", channelID, now, rand.Uint64()), ChannelID: channelID, Kind: KindTest,
		Title: "ql3: test notification", Content: fmt.Sprintf("This is a test of the channel %q from ql3-edge.", ch.Name),
		Status: StatusPending, NextAtMs: now, CreatedMs: now, GiveUpMs: now}
	ids, err := d.cfg.Store.AddDeliveries(ctx, []NewDelivery{nd})
	if err != nil {
		return Delivery{}, err
	}
	if err := d.cfg.Store.Audit(ctx, edge.AuditEntry{AtMs: now, Action: AuditChannelTest, Target: channelID, Actor: actor}); err != nil {
		return Delivery{}, err
	}
	row, err := d.cfg.Store.GetDelivery(ctx, ids[0])
	if err != nil {
		return Delivery{}, err
	}
	if _, err := d.deliver(ctx, row); err != nil {
		return Delivery{}, err
	}
	return d.cfg.Store.GetDelivery(ctx, ids[0])
}
