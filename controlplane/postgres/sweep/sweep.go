package sweep

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
)

// The run-lifecycle sweeper (issue 10, ADR 0013). Every replica's
// coordinator runs one pass per round, before scheduling: lease sweep →
// in-flight recovery (orphans, timeouts) → lost Runs → cancel intents →
// waiting Runs of deleted tasks → held Runs → due retries → retention.
// Startup recovery is the same pass without retention, repeated until it
// leaves nothing behind (coordinator.Recover).
//
// Each kind reads a page of candidates by database time (no lock), then
// handles every candidate in its own transaction: one statement that
// takes the advisory locks of ADR 0010 (the attempt's as a TRY: a
// candidate another replica or a worker callback holds is skipped this
// pass), row-locks with SKIP LOCKED, re-checks everything under the locks,
// writes the change with its events and asserts its own write counts. The
// transactions of a page travel as one pipeline (one round trip per page),
// but each commits on its own. Two replicas reading the same page both try
// every candidate; the locks and the re-check make each change happen once.

// offlineLookbackMs is how far back the lease scan looks for sessions that
// went offline: longer than any lease's TTL (45 s started, 30 s unstarted,
// DESIGN.md §8), so an older session's leases have expired on their own.
const offlineLookbackMs = int64(time.Hour / time.Millisecond)

// sweepCandidate is one row of a scan: the lease (lease scan only), its
// session and the attempt whose lock guards the change, and the Run's
// attempt count and retry policy as the scan read them.
type sweepCandidate struct {
	lease, session, attempt, run uuid.UUID
	attemptCount                 int
	retry                        spec.RetryPolicy
}

// lost is what becomes of the candidate's Run if its change finds it lost:
// the decision is core/run's, the change statement only writes it (for the
// attempt count it was decided for).
func (c sweepCandidate) lost() (run.LostDecision, error) {
	return run.DecideLost(c.attemptCount, c.retry)
}

// runScan is one Run scan: its SQL and whether it pages by keyset.
type runScan struct {
	name   string
	sql    string
	keyset bool
	page   func(controlplane.SweepOptions) int
}

var (
	recoveryPage = func(o controlplane.SweepOptions) int { return o.RecoveryPage }
	sweepPage    = func(o controlplane.SweepOptions) int { return o.Page }
	runScans     = []runScan{
		{"orphan", orphanCandidatesSQL, true, recoveryPage},
		{"timeout", timeoutCandidatesSQL, false, recoveryPage},
		{"lost", lostCandidatesSQL, false, sweepPage},
		{"cancel", cancelCandidatesSQL, false, sweepPage},
		{"deleted", deletedCandidatesSQL, false, sweepPage},
		{"held", heldCandidatesSQL, true, recoveryPage},
		{"retry", retryCandidatesSQL, false, sweepPage},
	}
)

// Sweep runs one bounded pass over every kind, in order, then retention. It stops at the
// first error (the caller reports it and skips that round's scheduling);
// what committed before stays committed and is counted.
func Sweep(ctx context.Context, db postgres.Acquirer, opts controlplane.SweepOptions) (controlplane.SweepReport, error) {
	if err := opts.Validate(); err != nil {
		return controlplane.SweepReport{}, err
	}
	opts = opts.WithDefaults()
	var rep controlplane.SweepReport
	r, err := sweepLeases(ctx, db, opts)
	rep.Add(r)
	if err != nil {
		return rep, err
	}
	for _, s := range runScans {
		r, err := sweepRuns(ctx, db, opts, s)
		rep.Add(r)
		if err != nil {
			return rep, err
		}
	}
	if opts.DisableRetention {
		return rep, nil
	}
	ret, more, err := sweepRetention(ctx, db, opts)
	rep.Retention = ret
	rep.More = rep.More || more
	return rep, err
}

func sweepLeases(ctx context.Context, db postgres.Acquirer, o controlplane.SweepOptions) (controlplane.SweepReport, error) {
	var rep controlplane.SweepReport
	graceMs := o.CancelGrace.Milliseconds()
	for range o.MaxPages {
		cs, err := scan(ctx, db, leaseCandidatesSQL, []any{graceMs, o.Page, offlineLookbackMs}, true)
		if err != nil {
			return rep, err
		}
		err = runChanges(ctx, db, o.Parallel, cs, &rep, func(c sweepCandidate, r *controlplane.SweepReport) (postgres.PipedTx, error) {
			lost, err := c.lost()
			if err != nil {
				return postgres.PipedTx{}, err
			}
			return postgres.PipedTx{Begin: postgres.BeginReadCommitted, SQL: sweepLeaseSQL,
				Args: []any{c.lease, postgres.LockObjectKey(c.session), postgres.LockObjectKey(c.attempt), graceMs,
					postgres.LockClassSession, postgres.LockClassAttempt, string(lost.Status), lost.BackoffMs, c.attemptCount},
				Read: func(rows pgx.Rows) error { return readLeaseChange(rows, r) }}, nil
		})
		if err != nil {
			return rep, err
		}
		if len(cs) < o.Page {
			return rep, nil
		}
	}
	rep.More = true
	return rep, nil
}

func sweepRuns(ctx context.Context, db postgres.Acquirer, o controlplane.SweepOptions, s runScan) (controlplane.SweepReport, error) {
	var rep controlplane.SweepReport
	graceMs := o.CancelGrace.Milliseconds()
	page := s.page(o)
	after := uuid.Nil
	for range o.MaxPages {
		args := []any{page}
		if s.keyset {
			args = append(args, after)
		}
		cs, err := scan(ctx, db, s.sql, args, false)
		if err != nil {
			return rep, err
		}
		if len(cs) > 0 {
			after = cs[len(cs)-1].run // the scan's order; runChanges shuffles cs
		}
		err = runChanges(ctx, db, o.Parallel, cs, &rep, func(c sweepCandidate, r *controlplane.SweepReport) (postgres.PipedTx, error) {
			newAttempt, err := controlplane.NewID()
			if err != nil {
				return postgres.PipedTx{}, err
			}
			lost, err := c.lost()
			if err != nil {
				return postgres.PipedTx{}, err
			}
			return postgres.PipedTx{Begin: postgres.BeginReadCommitted, SQL: sweepRunSQL,
				Args: []any{c.run, postgres.LockObjectKey(c.attempt), graceMs, postgres.LockClassAttempt, newAttempt,
					string(lost.Status), lost.BackoffMs, c.attemptCount},
				Read: func(rows pgx.Rows) error { return readRunChange(rows, r) }}, nil
		})
		if err != nil {
			return rep, err
		}
		if len(cs) < page {
			return rep, nil
		}
	}
	rep.More = true
	return rep, nil
}

// scan reads one page of candidates. It stays on custom plans: tried under
// the scheduler's force_generic_plan (postgres.PlanSettingsSQL), a generic plan of
// the lease scan, blind to its LIMIT, took 1.4 s a page instead of ~20 ms
// (sweep.sh STATEMENTS=1).
func scan(ctx context.Context, db postgres.Acquirer, sql string, args []any, leases bool) ([]sweepCandidate, error) {
	conn, err := db.Acquire(ctx)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sweepCandidate, error) {
		var c sweepCandidate
		policy := []any{&c.attemptCount, &c.retry.RetryOnLost, &c.retry.MaxAttempts, &c.retry.BackoffBaseMs, &c.retry.BackoffMaxMs}
		ids := []any{&c.run, &c.attempt}
		if leases {
			ids = []any{&c.lease, &c.session, &c.attempt}
		}
		err := r.Scan(append(ids, policy...)...)
		return c, err
	})
	if err != nil {
		return nil, postgres.TranslateDriver(err)
	}
	return out, nil
}

// runChanges sends a page of change transactions as up to parallel
// pipelines on as many connections, each transaction committing on its
// own. The page is shuffled first: replicas reading the same page then
// mostly meet different candidates instead of queueing on the same locks.
func runChanges(ctx context.Context, db postgres.Acquirer, parallel int, cs []sweepCandidate, rep *controlplane.SweepReport,
	build func(sweepCandidate, *controlplane.SweepReport) (postgres.PipedTx, error)) error {
	if len(cs) == 0 {
		return nil
	}
	rand.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
	parts := min(parallel, len(cs))
	reps := make([]controlplane.SweepReport, parts)
	chunks := make([][]postgres.PipedTx, parts)
	for i, c := range cs {
		tx, err := build(c, &reps[i%parts])
		if err != nil {
			return err
		}
		chunks[i%parts] = append(chunks[i%parts], tx)
	}
	errsOut := make([]error, parts)
	var wg sync.WaitGroup
	for i := range chunks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errsOut[i] = runPipelineOn(ctx, db, chunks[i])
		}()
	}
	wg.Wait()
	for _, r := range reps {
		rep.Add(r)
	}
	return errors.Join(errsOut...)
}

func runPipelineOn(ctx context.Context, db postgres.Acquirer, txs []postgres.PipedTx) error {
	conn, err := db.Acquire(ctx)
	if err != nil {
		return postgres.Translate(err)
	}
	defer conn.Release()
	_, err = postgres.RunPipeline(ctx, conn, txs...)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == postgres.SQLStateInvalidTextRepresentation && strings.Contains(pe.Message, "ql3 sweep refused") {
		return errs.E(errs.Internal, "", "%s", pe.Message)
	}
	return err
}

func readLeaseChange(rows pgx.Rows, rep *controlplane.SweepReport) error {
	for rows.Next() {
		var ok, counted bool
		var action, reason, afterLost string
		if err := rows.Scan(&ok, &action, &reason, &afterLost, &counted); err != nil {
			return err
		}
		switch {
		case !ok:
			rep.Locked++
		case action == "requeue":
			rep.Requeued++
		case action == "cancel":
			rep.Cancelled++
		case action == "lost":
			rep.Lost++
			switch afterLost {
			case "retry_wait":
				rep.RetryWait++
			case "failed":
				rep.Failed++
			case "cancelled":
				rep.Cancelled++
			}
		case action == "release":
			rep.ReleasedStale++
		}
	}
	return rows.Err()
}

func readRunChange(rows pgx.Rows, rep *controlplane.SweepReport) error {
	for rows.Next() {
		var ok, counted bool
		var action, to string
		var replaced int64
		if err := rows.Scan(&ok, &action, &to, &replaced, &counted); err != nil {
			return err
		}
		rep.Replaced += int(replaced)
		switch {
		case !ok:
			rep.Locked++
		case action == "cancel":
			rep.Cancelled++
		case action == "resolve" && to == "retry_wait":
			rep.RetryWait++
		case action == "resolve":
			rep.Failed++
		case action == "promote":
			rep.Promoted++
		case action == "queue":
			rep.Queued++
		case action == "timeout":
			rep.TimedOut++
		case action == "requeue":
			rep.Requeued++
		case action == "orphan":
			rep.Lost++
		}
	}
	return rows.Err()
}
