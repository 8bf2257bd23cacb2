package coordinator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ql3/ql3/controlplane"
)

// Startup recovery and the per-round sweep (issue 10, ADR 0013). Both are
// Scheduling.Sweep: a pristine queued Run and a Run under a live lease are
// not candidates of any of its scans, so they are left alone; everything
// else that is due (an expired lease, a lost or held Run, a cancel intent,
// a due retry, an in-flight Run without a lease) is resolved by the same
// fenced, one-transaction-per-change code on every replica, at startup and
// then every round before scheduling.

// RecoveryReport says what startup recovery did.
type RecoveryReport struct {
	Passes int
	Sweep  controlplane.SweepReport
}

// Startup recovery bounds: passes until a pass leaves nothing behind
// (More false), and attempts of a failing pass before startup gives up.
const (
	maxRecoveryPasses   = 64
	maxRecoveryAttempts = 5
)

// Recover is startup recovery: sweep passes until one completes within its
// page bounds. A failing pass is retried (capped, jittered backoff) up to
// maxRecoveryAttempts times in a row; then startup must not go on.
func (c *Coordinator) Recover(ctx context.Context) (RecoveryReport, error) {
	var rep RecoveryReport
	failures := 0
	// Retention is not recovery: it runs with the cadence, so a retention
	// backlog never delays startup.
	opts := c.cfg.Sweep
	opts.DisableRetention = true
	for rep.Passes < maxRecoveryPasses {
		r, err := c.db.Sweep(ctx, opts)
		rep.Sweep.Add(r)
		c.countSweep(r)
		if err != nil {
			c.metrics.SweepErrors.Add(1)
			failures++
			if failures >= maxRecoveryAttempts || ctx.Err() != nil {
				return rep, fmt.Errorf("coordinator: startup recovery: %w", err)
			}
			c.report(Diagnostic{Kind: "recovery_failed", Err: err})
			backoff := min(100*time.Millisecond<<failures, 2*time.Second)
			select {
			case <-ctx.Done():
				return rep, ctx.Err()
			case <-c.cfg.Clock.After(backoff/2 + rand.N(backoff/2+1)):
			}
			continue
		}
		failures = 0
		rep.Passes++
		if !r.More {
			return rep, nil
		}
	}
	return rep, nil
}

// sweep runs one pass before a round's scheduling; an error is reported
// and means the round schedules nothing.
func (c *Coordinator) sweep(ctx context.Context) error {
	if c.cfg.DisableSweep {
		return nil
	}
	r, err := c.db.Sweep(ctx, c.cfg.Sweep)
	c.countSweep(r)
	if err != nil {
		c.metrics.SweepErrors.Add(1)
		return fmt.Errorf("coordinator: sweep: %w", err)
	}
	return nil
}

func (c *Coordinator) countSweep(r controlplane.SweepReport) {
	c.metrics.SweepPasses.Add(1)
	c.metrics.SweepChanged.Add(int64(r.Changed()))
	c.metrics.SweepLost.Add(int64(r.Lost))
	c.metrics.SweepRequeued.Add(int64(r.Requeued))
	c.metrics.SweepLocked.Add(int64(r.Locked))
}
