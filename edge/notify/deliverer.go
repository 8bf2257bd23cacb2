package notify

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ql3/ql3/core/errs"
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/notifykit"
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
	pol     notifykit.Policy
	log     *slog.Logger
	kick    chan struct{}
	scripts notifykit.ScriptCalls // sendNotify calls per Run (script.go)

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
	pol := notifykit.Policy{GiveUpAfter: cfg.GiveUpAfter, RetryBase: cfg.RetryBase, RetryMax: cfg.RetryMax, Jitter: cfg.Jitter}.WithDefaults()
	cfg.GiveUpAfter, cfg.RetryBase, cfg.RetryMax, cfg.Jitter = pol.GiveUpAfter, pol.RetryBase, pol.RetryMax, pol.Jitter
	if cfg.Batch <= 0 || cfg.Batch > MaxPage {
		cfg.Batch = 100
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Deliverer{cfg: cfg, pol: pol, log: log, kick: make(chan struct{}, 1)}, nil
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
	if !notifykit.Notifies(string(ev.Type)) || len(rules) == 0 {
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
	return d.pol.Derive(notifykit.Event{Type: string(ev.Type), ID: ev.Position, RunID: rn.ID, TaskID: rn.TaskID, TaskName: task.Name,
		Labels: TaskLabels(task), PrevFailed: prevFailed, Attempt: ev.Payload.AttemptNumber, ExitCode: ev.Payload.ExitCode,
		ErrorClass: string(ev.Payload.ErrorClass), Reason: ev.Payload.Reason, AtMs: ev.AtMs}, rules, states, changed, d.nowMs()), nil
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
		rows := d.pol.Summary(r, key, st.WindowStartMs, name, n, now)
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
	for _, g := range d.pol.Digests(held, now) {
		if err := d.cfg.Store.Digest(ctx, g.Row, g.Held); err != nil {
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
	a := notifykit.Attempted{Start: d.cfg.Clock.Now()}
	st, ch, err := d.cfg.Store.ChannelSettings(ctx, row.ChannelID)
	switch {
	case errs.Code(err) == errs.NotFound:
		o := Outcome{Attempt: Attempt{N: row.Attempts + 1, AtMs: a.Start.UnixMilli(), Error: "channel deleted"}, Status: StatusFailed}
		return o, d.cfg.Store.Record(ctx, row.ID, o)
	case err != nil:
		return Outcome{}, err
	case !ch.Enabled && row.Kind != KindTest:
		a.Err = &SendError{Reason: "channel disabled"}
	default:
		a.StatusCode, a.Err = d.cfg.Sender.Send(ctx, st, channel.Message{Title: row.Title, Content: row.Content, IdempotencyKey: row.Key}, a.Start.UnixMilli())
	}
	a.Settings, a.End = st, d.cfg.Clock.Now()
	o := d.pol.Decide(row, a)
	if o.Status != StatusDelivered {
		d.log.Info("notification attempt failed", "delivery", row.ID, "channel", row.ChannelID, "attempt", o.Attempt.N,
			"status", o.Attempt.StatusCode, "err", o.Attempt.Error, "final", o.Status == StatusFailed)
	}
	return o, d.cfg.Store.Record(ctx, row.ID, o)
}

// SendTest delivers a test message through a channel now (even a disabled
// one) and returns the recorded delivery.
func (d *Deliverer) SendTest(ctx context.Context, channelID, actor string) (Delivery, error) {
	_, ch, err := d.cfg.Store.ChannelSettings(ctx, channelID)
	if err != nil {
		return Delivery{}, err
	}
	now := d.nowMs()
	nd := notifykit.TestRow(channelID, ch.Name, "ql3-edge", now)
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
