package postgres

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

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/lease"
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

// Sweep limits (DESIGN.md §8).
const (
	DefaultSweepPage     = 64
	DefaultRecoveryPage  = 16
	MaxSweepPage         = 64
	DefaultSweepPages    = 16
	MaxSweepPages        = 256
	DefaultCancelGrace   = lease.DefaultCancelGraceMs * time.Millisecond
	MaxCancelGrace       = lease.MaxCancelGraceMs * time.Millisecond
	DefaultSweepParallel = 4
	MaxSweepParallel     = 16
)

// SweepOptions bounds one pass. Zero fields take their defaults.
type SweepOptions struct {
	// Page is the page of the lease sweep, lost Runs, cancel intents and
	// due retries: default and hard limit 64.
	Page int
	// RecoveryPage is the page of the recovery scans (in-flight Runs
	// without a lease, passed deadlines, held Runs): default 16, hard
	// limit 64. Lost Runs and cancel intents use Page.
	RecoveryPage int
	// MaxPages bounds the pages of each kind per pass: default 16, at most
	// 256. A kind that fills them reports More.
	MaxPages int
	// CancelGrace is how long past the end of a started lease's authority
	// the sweeper waits before it calls the Attempt lost: the worker's
	// SIGTERM → SIGKILL grace, by which time it has fenced itself. Default
	// 10 s, at most 5 min.
	CancelGrace time.Duration
	// LogRetention, RunRetention and AuditRetention are the ages past which
	// retention deletes the log chunks of finished Runs, finished Runs with
	// everything of theirs, and audit rows (ADR 0016): defaults 7, 30 and
	// 90 days; 1 h..10 years.
	LogRetention, RunRetention, AuditRetention time.Duration
	// Parallel is how many connections one page's changes are spread over
	// (each a pipeline of transactions): default 4, 1..16.
	Parallel int
	// DisableRetention skips the retention step (tests of the lifecycle
	// alone; an operator who keeps everything uses MaxRetention instead).
	DisableRetention bool
}

func (o SweepOptions) withDefaults() SweepOptions {
	orDefault(&o.Page, DefaultSweepPage)
	orDefault(&o.RecoveryPage, DefaultRecoveryPage)
	orDefault(&o.MaxPages, DefaultSweepPages)
	orDefault(&o.CancelGrace, DefaultCancelGrace)
	orDefault(&o.Parallel, DefaultSweepParallel)
	orDefault(&o.LogRetention, DefaultLogRetention)
	orDefault(&o.RunRetention, DefaultRunRetention)
	orDefault(&o.AuditRetention, DefaultAuditRetention)
	return o
}

// orDefault sets a zero option to its default.
func orDefault[T int | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

// Validate checks the options against the hard limits; errors name the
// field.
func (o SweepOptions) Validate() error {
	o = o.withDefaults()
	switch {
	case o.Page < 1 || o.Page > MaxSweepPage:
		return errs.Invalidf("sweepPage", "must be 1..%d, got %d", MaxSweepPage, o.Page)
	case o.RecoveryPage < 1 || o.RecoveryPage > MaxSweepPage:
		return errs.Invalidf("recoveryPage", "must be 1..%d, got %d", MaxSweepPage, o.RecoveryPage)
	case o.MaxPages < 1 || o.MaxPages > MaxSweepPages:
		return errs.Invalidf("sweepPages", "must be 1..%d, got %d", MaxSweepPages, o.MaxPages)
	case o.Parallel < 1 || o.Parallel > MaxSweepParallel:
		return errs.Invalidf("sweepParallel", "must be 1..%d, got %d", MaxSweepParallel, o.Parallel)
	case o.CancelGrace < 0 || o.CancelGrace > MaxCancelGrace || o.CancelGrace%time.Millisecond != 0:
		return errs.Invalidf("cancelGrace", "must be whole milliseconds in 0..%v, got %v", MaxCancelGrace, o.CancelGrace)
	}
	for _, r := range []struct {
		field string
		d     time.Duration
	}{{"logRetention", o.LogRetention}, {"runRetention", o.RunRetention}, {"auditRetention", o.AuditRetention}} {
		if err := validRetention(r.field, r.d); err != nil {
			return err
		}
	}
	if o.LogRetention > o.RunRetention {
		return errs.Invalidf("logRetention", "must not exceed runRetention (%v), got %v", o.RunRetention, o.LogRetention)
	}
	return nil
}

// SweepReport counts what one pass changed, by action.
type SweepReport struct {
	Requeued      int // unstarted lease ended (or released without a move): Run back to queued, same Attempt
	Lost          int // started lease past expiry + grace (or in-flight without a lease): Attempt and Run lost
	ReleasedStale int // live lease of an ended Attempt or a Run not in flight: released only
	RetryWait     int // lost → retry_wait
	Failed        int // lost → failed
	Cancelled     int // cancel intent converged (cancelled or timed_out)
	Promoted      int // retry_wait due → Attempt N+1, queued
	Queued        int // held (concurrency replace) → queued
	Replaced      int // cancel intents set on older active Runs by a held one
	TimedOut      int // cancel intents set by a passed durable deadline
	Locked        int // candidates skipped: locked by another replica or a worker callback
	Retention     RetentionReport
	More          bool
}

// Changed is the number of Runs and leases the pass changed.
func (r SweepReport) Changed() int {
	return r.Requeued + r.Lost + r.ReleasedStale + r.RetryWait + r.Failed + r.Cancelled + r.Promoted + r.Queued +
		r.Replaced + r.TimedOut
}

func (r *SweepReport) Add(o SweepReport) {
	r.Requeued += o.Requeued
	r.Lost += o.Lost
	r.ReleasedStale += o.ReleasedStale
	r.RetryWait += o.RetryWait
	r.Failed += o.Failed
	r.Cancelled += o.Cancelled
	r.Promoted += o.Promoted
	r.Queued += o.Queued
	r.Replaced += o.Replaced
	r.TimedOut += o.TimedOut
	r.Locked += o.Locked
	r.Retention.LogChunks += o.Retention.LogChunks
	r.Retention.Runs += o.Retention.Runs
	r.Retention.AuditRows += o.Retention.AuditRows
	r.More = r.More || o.More
}

// offlineLookbackMs is how far back the lease scan looks for sessions that
// went offline: longer than any lease's TTL (45 s started, 30 s unstarted,
// DESIGN.md §8), so an older session's leases have expired on their own.
const offlineLookbackMs = int64(time.Hour / time.Millisecond)

// sweepBeginSQL opens each change's transaction.
const sweepBeginSQL = `BEGIN ISOLATION LEVEL READ COMMITTED`

// sweepCandidate is one row of a scan: the lease (lease scan only), its
// session and the attempt whose lock guards the change.
type sweepCandidate struct {
	lease, session, attempt, run uuid.UUID
}

// runScan is one Run scan: its SQL and whether it pages by keyset.
type runScan struct {
	name   string
	sql    string
	keyset bool
	page   func(SweepOptions) int
}

var (
	recoveryPage = func(o SweepOptions) int { return o.RecoveryPage }
	sweepPage    = func(o SweepOptions) int { return o.Page }
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
func Sweep(ctx context.Context, db Acquirer, opts SweepOptions) (SweepReport, error) {
	if err := opts.Validate(); err != nil {
		return SweepReport{}, err
	}
	opts = opts.withDefaults()
	var rep SweepReport
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

func sweepLeases(ctx context.Context, db Acquirer, o SweepOptions) (SweepReport, error) {
	var rep SweepReport
	graceMs := o.CancelGrace.Milliseconds()
	for range o.MaxPages {
		cs, err := scan(ctx, db, leaseCandidatesSQL, []any{graceMs, o.Page, offlineLookbackMs}, true)
		if err != nil {
			return rep, err
		}
		err = runChanges(ctx, db, o.Parallel, cs, &rep, func(c sweepCandidate, r *SweepReport) (pipedTx, error) {
			return pipedTx{begin: sweepBeginSQL, sql: sweepLeaseSQL,
				args: []any{c.lease, LockObjectKey(c.session), LockObjectKey(c.attempt), graceMs,
					LockClassSession, LockClassAttempt},
				read: func(rows pgx.Rows) error { return readLeaseChange(rows, r) }}, nil
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

func sweepRuns(ctx context.Context, db Acquirer, o SweepOptions, s runScan) (SweepReport, error) {
	var rep SweepReport
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
		err = runChanges(ctx, db, o.Parallel, cs, &rep, func(c sweepCandidate, r *SweepReport) (pipedTx, error) {
			newAttempt, err := newSchedID()
			if err != nil {
				return pipedTx{}, err
			}
			return pipedTx{begin: sweepBeginSQL, sql: sweepRunSQL,
				args: []any{c.run, LockObjectKey(c.attempt), graceMs, LockClassAttempt, newAttempt},
				read: func(rows pgx.Rows) error { return readRunChange(rows, r) }}, nil
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
// the scheduler's force_generic_plan (planSettingsSQL), a generic plan of
// the lease scan, blind to its LIMIT, took 1.4 s a page instead of ~20 ms
// (sweep.sh STATEMENTS=1).
func scan(ctx context.Context, db Acquirer, sql string, args []any, leases bool) ([]sweepCandidate, error) {
	conn, err := db.Acquire(ctx)
	if err != nil {
		return nil, Translate(err)
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		return nil, Translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sweepCandidate, error) {
		var c sweepCandidate
		if leases {
			return c, r.Scan(&c.lease, &c.session, &c.attempt)
		}
		return c, r.Scan(&c.run, &c.attempt)
	})
	if err != nil {
		return nil, translateDriver(err)
	}
	return out, nil
}

// runChanges sends a page of change transactions as up to parallel
// pipelines on as many connections, each transaction committing on its
// own. The page is shuffled first: replicas reading the same page then
// mostly meet different candidates instead of queueing on the same locks.
func runChanges(ctx context.Context, db Acquirer, parallel int, cs []sweepCandidate, rep *SweepReport,
	build func(sweepCandidate, *SweepReport) (pipedTx, error)) error {
	if len(cs) == 0 {
		return nil
	}
	rand.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
	parts := min(parallel, len(cs))
	reps := make([]SweepReport, parts)
	chunks := make([][]pipedTx, parts)
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

func runPipelineOn(ctx context.Context, db Acquirer, txs []pipedTx) error {
	conn, err := db.Acquire(ctx)
	if err != nil {
		return Translate(err)
	}
	defer conn.Release()
	_, err = runPipeline(ctx, conn, txs...)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == sqlStateInvalidTextRepresentation && strings.Contains(pe.Message, "ql3 sweep refused") {
		return errs.E(errs.Internal, "", "%s", pe.Message)
	}
	return err
}

func readLeaseChange(rows pgx.Rows, rep *SweepReport) error {
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

func readRunChange(rows pgx.Rows, rep *SweepReport) error {
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
