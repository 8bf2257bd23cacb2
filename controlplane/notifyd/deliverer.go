// Package notifyd is ql3-control's notification deliverer (ADR 0053). Every
// replica runs one: the replica that holds the feed consumer "notify"
// derives outbox rows from the run-event feed (rows and cursor move in one
// transaction), and every replica claims due rows with a fenced lease and
// sends them, so one row is sent by one replica at a time and a replica
// that dies mid-send leaves its rows to another after the lease. The
// decisions are notifykit's (the same as ql3-edge's); this package only
// drives them through the control plane's ports.
package notifyd

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/notifykit"
	"github.com/ql3/ql3/notifykit/sender"
)

// Config wires a Deliverer.
type Config struct {
	Feed      controlplane.RunEventFeed
	Consumers controlplane.FeedConsumers
	Outbox    controlplane.NotifyOutbox
	Sender    *sender.Sender
	// Owner names this replica in claims and the delivery log.
	Owner string
	// Lease is how long a claim (on the feed consumer and on a row) lasts.
	// An attempt is cut off LeaseMargin before its claim ends, so it never
	// overlaps another replica's attempt of the same row. 0 → 60 s; it must
	// exceed the Sender's timeout plus the margin.
	Lease       time.Duration
	LeaseMargin time.Duration // 0 → Lease/5
	Policy      notifykit.Policy
	Now         func() time.Time // nil → time.Now
	// Tick is the feed's probe interval while waiting (one indexed query).
	// 0 → 1 s.
	Tick   time.Duration
	Batch  int // rows claimed per step and feed events per read; 0 → 16
	Logger *slog.Logger
}

// Deliverer is one replica's loop.
type Deliverer struct {
	cfg  Config
	pol  notifykit.Policy
	log  *slog.Logger
	kick chan struct{}

	mu      sync.Mutex
	claim   controlplane.FeedClaim
	held    bool
	flushAt int64 // earliest end of a window holding outcomes back (0: none)
}

// New checks cfg.
func New(cfg Config) (*Deliverer, error) {
	if cfg.Feed == nil || cfg.Consumers == nil || cfg.Outbox == nil || cfg.Owner == "" {
		return nil, errors.New("notifyd: Feed, Consumers, Outbox and Owner are required")
	}
	if cfg.Sender == nil {
		cfg.Sender = &sender.Sender{}
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.LeaseMargin <= 0 {
		cfg.LeaseMargin = cfg.Lease / 5
	}
	timeout := cfg.Sender.Timeout
	if timeout <= 0 {
		timeout = sender.DefaultRequestTimeout
	}
	if cfg.Lease < timeout+cfg.LeaseMargin {
		return nil, errs.Invalidf("lease", "must exceed the request timeout (%v) plus the margin (%v), got %v", timeout, cfg.LeaseMargin, cfg.Lease)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.Batch <= 0 || cfg.Batch > controlplane.MaxFeedLimit {
		cfg.Batch = 16
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Deliverer{cfg: cfg, pol: cfg.Policy.WithDefaults(), log: log, kick: make(chan struct{}, 1)}, nil
}

// Kick wakes Run (a row was added outside the feed).
func (d *Deliverer) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

func (d *Deliverer) nowMs() int64 { return d.cfg.Now().UnixMilli() }

// Run steps until ctx ends. Between steps it waits for the feed (when
// this replica holds the consumer), the next due row, a kick, or a third
// of the lease (to renew or take over the consumer).
func (d *Deliverer) Run(ctx context.Context) error {
	defer d.cfg.Sender.CloseIdle()
	for {
		wait := d.cfg.Lease / 3
		if err := d.Step(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			d.log.Warn("notifications: step failed", "err", err)
		} else if at, ok, err := d.cfg.Outbox.NextDueMs(ctx); err == nil && ok {
			wait = min(wait, max(time.Duration(at-d.nowMs())*time.Millisecond, 0))
		}
		d.mu.Lock()
		if d.held && d.flushAt > 0 {
			wait = min(wait, max(time.Duration(d.flushAt-d.nowMs())*time.Millisecond, 0))
		}
		d.mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, wait)
		woken := make(chan struct{})
		d.mu.Lock()
		held, cursor := d.held, d.claim.Cursor
		d.mu.Unlock()
		if held {
			go func() {
				t := time.NewTicker(d.cfg.Tick)
				defer t.Stop()
				if d.cfg.Feed.Wait(wctx, cursor, t.C) == nil {
					close(woken)
				}
			}()
		}
		select {
		case <-wctx.Done():
		case <-woken:
		case <-d.kick:
		}
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// Step derives rows from new feed events (when this replica holds the
// consumer), releases quiet hours' digests, and delivers one batch of due
// rows.
func (d *Deliverer) Step(ctx context.Context) error {
	if err := d.consume(ctx); err != nil {
		return err
	}
	if err := d.releaseHeld(ctx); err != nil {
		return err
	}
	return d.deliverDue(ctx)
}

// consume claims (or renews) the consumer and writes what new events
// notify, batch by batch, each batch with its cursor move.
func (d *Deliverer) consume(ctx context.Context) error {
	c, ok, err := d.cfg.Consumers.Claim(ctx, controlplane.NotifyConsumer, d.cfg.Owner, d.cfg.Lease)
	d.mu.Lock()
	d.claim, d.held = c, ok && err == nil
	d.mu.Unlock()
	if err != nil || !ok {
		return err
	}
	for {
		evs, err := d.cfg.Feed.Events(ctx, c.Cursor, d.cfg.Batch)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return d.flushCoalesced(ctx, c)
		}
		states := map[notifykit.CoalesceKey]cn.CoalesceState{}
		changed := map[notifykit.CoalesceKey]cn.CoalesceState{}
		rules := map[string][]notifykit.Rule{}
		var rows []notifykit.NewDelivery
		for _, ev := range evs {
			r, err := d.derive(ctx, ev, rules, states, changed)
			if err != nil {
				return err
			}
			rows = append(rows, r...)
		}
		if c, err = d.cfg.Outbox.Enqueue(ctx, c, evs[len(evs)-1].Position, rows, changed); err != nil {
			return err
		}
		d.mu.Lock()
		d.claim = c
		d.mu.Unlock()
		if len(evs) < d.cfg.Batch {
			return d.flushCoalesced(ctx, c)
		}
	}
}

// flushCoalesced writes the summary of windows that ended with outcomes
// held back and no later outcome to carry it (the consumer's holder does
// it, under its claim, with the window's new state), and keeps the
// earliest end of a window still open for the loop's wake-up.
func (d *Deliverer) flushCoalesced(ctx context.Context, c controlplane.FeedClaim) error {
	ws, err := d.cfg.Outbox.HeldWindows(ctx, d.cfg.Batch)
	if err != nil {
		return err
	}
	now := d.nowMs()
	var flushAt int64
	defer func() {
		d.mu.Lock()
		d.flushAt = flushAt
		d.mu.Unlock()
	}()
	rules := map[string]notifykit.Rule{}
	for _, w := range ws {
		if _, ok := rules[w.Key.RuleID]; !ok {
			rs, err := d.cfg.Outbox.Rules(ctx, w.ProjectID)
			if err != nil {
				return err
			}
			for _, r := range rs {
				rules[r.ID] = r
			}
		}
		r, ok := rules[w.Key.RuleID]
		if !ok {
			continue // disabled or deleted: its window stays as it is
		}
		n, next := r.Coalesce.Flush(w.State, now)
		if n == 0 {
			if end := w.State.WindowStartMs + r.Coalesce.WindowMs; end > now && (flushAt == 0 || end < flushAt) {
				flushAt = end
			}
			continue
		}
		name := w.Key.TaskID
		if sub, err := d.cfg.Outbox.TaskName(ctx, w.Key.TaskID); err == nil && sub != "" {
			name = sub
		}
		rows := d.pol.Summary(r, w.Key, w.State.WindowStartMs, name, n, now)
		for i := range rows {
			rows[i].ProjectID = w.ProjectID
		}
		if c, err = d.cfg.Outbox.Enqueue(ctx, c, c.Cursor, rows, map[notifykit.CoalesceKey]cn.CoalesceState{w.Key: next}); err != nil {
			return err
		}
	}
	return nil
}

// eventPayload is what a finishing run event's payload says.
type eventPayload struct {
	AttemptNumber int    `json:"attemptNumber"`
	ExitCode      *int   `json:"exitCode"`
	ErrorClass    string `json:"errorClass"`
	Reason        string `json:"reason"`
}

// derive turns one event into outbox rows of its project.
func (d *Deliverer) derive(ctx context.Context, ev controlplane.FeedEvent, rules map[string][]notifykit.Rule,
	states, changed map[notifykit.CoalesceKey]cn.CoalesceState) ([]notifykit.NewDelivery, error) {
	if !notifykit.Notifies(ev.Type) {
		return nil, nil
	}
	rs, ok := rules[ev.ProjectID]
	if !ok {
		var err error
		if rs, err = d.cfg.Outbox.Rules(ctx, ev.ProjectID); err != nil {
			return nil, err
		}
		rules[ev.ProjectID] = rs
	}
	if len(rs) == 0 {
		return nil, nil
	}
	sub, err := d.cfg.Outbox.Subject(ctx, ev.RunID)
	if errs.Code(err) == errs.NotFound {
		return nil, nil // removed by retention before we got to it
	}
	if err != nil {
		return nil, err
	}
	var keys []notifykit.CoalesceKey
	for _, r := range rs {
		k := notifykit.CoalesceKey{RuleID: r.ID, TaskID: sub.TaskID}
		if _, seen := states[k]; !seen {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		got, err := d.cfg.Outbox.CoalesceStates(ctx, keys)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			states[k] = got[k]
		}
	}
	var p eventPayload
	_ = jsonUnmarshal(ev.Payload, &p) // a payload without these fields words a plainer message
	if p.AttemptNumber == 0 {
		p.AttemptNumber = ev.Attempt
	}
	rows := d.pol.Derive(notifykit.Event{Type: ev.Type, ID: ev.Position.ID, RunID: ev.RunID, TaskID: sub.TaskID, TaskName: sub.TaskName,
		Labels: sub.Labels, PrevFailed: sub.PrevFailed, Attempt: p.AttemptNumber, ExitCode: p.ExitCode, ErrorClass: p.ErrorClass,
		Reason: p.Reason, AtMs: ev.AtMs}, rs, states, changed, d.nowMs())
	for i := range rows {
		rows[i].ProjectID = ev.ProjectID
	}
	return rows, nil
}

// releaseHeld turns held rows whose quiet window ended into digests.
func (d *Deliverer) releaseHeld(ctx context.Context) error {
	now := d.nowMs()
	held, err := d.cfg.Outbox.HeldDue(ctx, now, d.cfg.Batch)
	if err != nil || len(held) == 0 {
		return err
	}
	for _, g := range d.pol.Digests(held, now) {
		if err := d.cfg.Outbox.Digest(ctx, g.Row, g.Held); err != nil {
			return err
		}
	}
	return nil
}

// deliverDue claims a batch of due rows and sends them concurrently.
func (d *Deliverer) deliverDue(ctx context.Context) error {
	claims, err := d.cfg.Outbox.Claim(ctx, d.cfg.Owner, d.cfg.Lease, d.nowMs(), d.cfg.Batch)
	if err != nil || len(claims) == 0 {
		return err
	}
	claimedAt := d.cfg.Now()
	var wg sync.WaitGroup
	errc := make(chan error, len(claims))
	for _, c := range claims {
		wg.Go(func() {
			if _, err := d.deliver(ctx, c, claimedAt); err != nil {
				errc <- err
			}
		})
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// deliver makes one attempt of a claimed row, cut off before the claim
// ends, and records it under the claim.
func (d *Deliverer) deliver(ctx context.Context, c controlplane.DeliveryClaim, claimedAt time.Time) (notifykit.Outcome, error) {
	row := c.Row
	a := notifykit.Attempted{Start: d.cfg.Now()}
	ch, st, err := d.cfg.Outbox.ChannelSettings(ctx, row.ChannelID)
	switch {
	case errs.Code(err) == errs.NotFound:
		o := notifykit.Outcome{Attempt: notifykit.Attempt{N: row.Attempts + 1, AtMs: a.Start.UnixMilli(), Error: "channel deleted"}, Status: notifykit.StatusFailed}
		return o, d.record(ctx, c, o)
	case err != nil:
		return notifykit.Outcome{}, err
	case !ch.Enabled && row.Kind != notifykit.KindTest:
		a.Err = &sender.SendError{Reason: "channel disabled"}
	default:
		sctx, cancel := context.WithDeadline(ctx, claimedAt.Add(d.cfg.Lease-d.cfg.LeaseMargin))
		a.StatusCode, a.Err = d.cfg.Sender.Send(sctx, st, channel.Message{Title: row.Title, Content: row.Content, IdempotencyKey: row.Key}, a.Start.UnixMilli())
		cancel()
	}
	if ctx.Err() != nil {
		return notifykit.Outcome{}, ctx.Err() // stopping: the claim lapses and another replica retries
	}
	a.Settings, a.End = st, d.cfg.Now()
	o := d.pol.Decide(row, a)
	if o.Status != notifykit.StatusDelivered {
		d.log.Info("notification attempt failed", "delivery", row.ID, "channel", row.ChannelID, "attempt", o.Attempt.N,
			"status", o.Attempt.StatusCode, "err", o.Attempt.Error, "final", o.Status == notifykit.StatusFailed)
	}
	return o, d.record(ctx, c, o)
}

func (d *Deliverer) record(ctx context.Context, c controlplane.DeliveryClaim, o notifykit.Outcome) error {
	err := d.cfg.Outbox.Record(ctx, c, o)
	if errs.Code(err) == errs.Conflict {
		d.log.Warn("notification outcome not recorded: the claim lapsed", "delivery", c.Row.ID)
		return nil
	}
	return err
}

// DeliverNow implements controlplane.NotifyTester: claims the row (a
// queued "send test") and sends it now.
func (d *Deliverer) DeliverNow(ctx context.Context, id int64) (notifykit.Delivery, error) {
	c, ok, err := d.cfg.Outbox.ClaimRow(ctx, d.cfg.Owner, d.cfg.Lease, id)
	if err != nil {
		return notifykit.Delivery{}, err
	}
	if ok {
		if _, err := d.deliver(ctx, c, d.cfg.Now()); err != nil {
			return notifykit.Delivery{}, err
		}
	}
	return d.cfg.Outbox.GetDelivery(ctx, id)
}
