package coordinator

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/errs"
)

// Lifecycle. The composition root (controlplane/app) starts things in this
// order: config validated (Config.Validate, before PostgreSQL is opened) →
// schema readiness (the app checks it) → startup recovery converged
// (Recover) → scheduler (Start) → HTTP admission open; and stops them in
// reverse: HTTP admission closed → Stop (drains the current round, at most
// StopTimeout) → pools closed.
//
// One goroutine runs rounds, so rounds never overlap. Between rounds it
// waits for the first of: the cadence, the earliest next_fire_at_ms of a
// claimable schedule (by database time, from Scheduling.NextDue), a publish
// notification (LISTEN ql3_schedules, sent by migration 0003's trigger when
// publication resets a schedule), or Stop. A round that used its whole
// budget is followed by another at once; in batched mode its admission
// already claimed the next batch — a page, Config.Page, ADR 0066 — in the
// same round trip (see Scheduling.AdmitThenClaim), so working through a
// backlog costs one round trip and one admission transaction per page. Errors go to the diagnostic sink;
// nothing in a round can crash or overlap the loop.

// ErrRunning is returned by Start on a running Coordinator.
var ErrRunning = errs.Conflictf("coordinator already running")

// ErrStopTimeout: Stop's deadline passed while a round was still running;
// the round was cancelled (its admissions either committed or rolled back).
var ErrStopTimeout = errors.New("coordinator: stop deadline passed, round cancelled")

// Start runs the loop (and the LISTEN goroutine) until Stop.
func (c *Coordinator) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return ErrRunning
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.running, c.cancel = true, cancel
	c.stopReq, c.done = make(chan struct{}), make(chan struct{})
	loopDone := make(chan struct{})
	listenDone := make(chan struct{})
	go func() { defer close(loopDone); c.loop(ctx) }()
	if !c.cfg.DisableListen {
		go func() { defer close(listenDone); c.listen(ctx) }()
	} else {
		close(listenDone)
	}
	done := c.done
	go func() {
		<-loopDone
		cancel() // the loop is out: end the listener too
		<-listenDone
		close(done)
	}()
	return nil
}

// Stop asks the loop to finish its current round and waits at most
// StopTimeout (or until ctx ends); then it cancels the round and waits for
// the goroutines to exit. It is a no-op on a Coordinator that is not
// running.
func (c *Coordinator) Stop(ctx context.Context) error {
	c.mu.Lock()
	if !c.running {
		c.mu.Unlock()
		return nil
	}
	c.running = false
	stopReq, done, cancel := c.stopReq, c.done, c.cancel
	c.mu.Unlock()

	close(stopReq)
	var err error
	select {
	case <-done:
	case <-c.cfg.Clock.After(c.cfg.StopTimeout):
		err = ErrStopTimeout
	case <-ctx.Done():
		err = ctx.Err()
	}
	cancel()
	<-done
	return err
}

// Wake asks the loop to run a round now (coalesced with pending wake-ups).
func (c *Coordinator) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Coordinator) loop(ctx context.Context) {
	// claimed: rows the previous round's admission already claimed in its
	// round trip (a backlog is being worked through). They are always
	// admitted by the next round, also when Stop arrives in between: the
	// round that claimed them has not finished its work until then.
	var claimed []controlplane.ClaimedSchedule
	for {
		select {
		case <-c.stopReq:
			if len(claimed) > 0 {
				_, _, _ = c.round(ctx, claimed, false)
			}
			return
		default:
		}
		var delay time.Duration
		delay, claimed = c.roundAndNextDelay(ctx, claimed)
		if delay <= 0 {
			continue
		}
		select {
		case <-c.stopReq:
			return
		case <-c.cfg.Clock.After(delay):
		case <-c.wake:
		}
	}
}

// roundAndNextDelay runs one round (over claimed, if any) and returns how
// long to wait before the next, and the claims the round took for the next
// one.
func (c *Coordinator) roundAndNextDelay(ctx context.Context, claimed []controlplane.ClaimedSchedule) (time.Duration, []controlplane.ClaimedSchedule) {
	// Lifecycle first (ADR 0013): recovery and lease sweep, due retries,
	// then scheduling. A round that continues a backlog (claims the
	// previous admission already took) skips the sweep so that those
	// claims are admitted before their lease runs out; the next fresh round
	// sweeps again. A failing sweep skips this round's scheduling.
	if claimed == nil {
		if err := c.sweep(ctx); err != nil {
			if ctx.Err() == nil {
				c.report(Diagnostic{Kind: "sweep_failed", Err: err})
			}
			return c.cfg.Cadence, nil
		}
	}
	res, next, err := c.round(ctx, claimed, true)
	if err != nil {
		if ctx.Err() == nil {
			c.report(Diagnostic{Kind: "round_failed", Err: err})
		}
		return c.cfg.Cadence, nil
	}
	switch {
	case len(next) > 0:
		return 0, next
	case res.Full && next == nil:
		return 0, nil // more is probably due; claim at once
	}
	d, ok, err := c.db.NextDue(ctx)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			c.report(Diagnostic{Kind: "next_due_failed", Err: err})
		}
		return c.cfg.Cadence, nil
	case !ok || d >= c.cfg.Cadence:
		return c.cfg.Cadence, nil
	}
	return max(d, minWake), nil
}

// listen keeps one connection LISTENing on the publish channel, reconnecting
// with capped, jittered backoff that starts over after every LISTEN that
// succeeded (a replica that lost its connection a few times over its life
// must not wait seconds to re-listen the next time).
func (c *Coordinator) listen(ctx context.Context) {
	var backoff time.Duration
	for ctx.Err() == nil {
		listened, err := c.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		c.report(Diagnostic{Kind: "listen_failed", Err: err})
		backoff = nextListenBackoff(backoff, listened)
		select {
		case <-ctx.Done():
			return
		case <-c.cfg.Clock.After(backoff/2 + rand.N(backoff/2+1)):
		}
	}
}

// Reconnect backoff of the LISTEN connection: the wait before the next
// attempt is drawn from [b/2, b].
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
)

// nextListenBackoff is the backoff after a LISTEN attempt ended, given the
// previous one (0 at first) and whether the attempt got as far as
// LISTENing: a success starts the sequence over.
func nextListenBackoff(prev time.Duration, listened bool) time.Duration {
	if listened || prev < listenBackoffMin {
		return listenBackoffMin
	}
	return min(2*prev, listenBackoffMax)
}

// listenOnce listens for publishes until the listening session fails or
// ctx ends; listened reports whether it got as far as listening.
func (c *Coordinator) listenOnce(ctx context.Context) (listened bool, err error) {
	return c.db.ListenPublished(ctx, func(notified bool) {
		if notified {
			c.metrics.Notifications.Add(1)
		}
		c.Wake()
	})
}
