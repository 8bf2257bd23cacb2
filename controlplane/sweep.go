package controlplane

import (
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/lease"
)

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

func (o SweepOptions) WithDefaults() SweepOptions {
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
	o = o.WithDefaults()
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

// Retention defaults and bounds.
const (
	DefaultLogRetention   = 7 * 24 * time.Hour
	DefaultRunRetention   = 30 * 24 * time.Hour
	DefaultAuditRetention = 90 * 24 * time.Hour
	MinRetention          = time.Hour
	MaxRetention          = 10 * 365 * 24 * time.Hour
)

// RetentionReport counts what retention deleted in one pass.
type RetentionReport struct {
	LogChunks, Runs, AuditRows int
	// ScriptBlobs counts script blobs no folder entry and no pinned tree
	// names any more (ADR 0052).
	ScriptBlobs int
}

func validRetention(field string, d time.Duration) error {
	if d < MinRetention || d > MaxRetention {
		return errs.Invalidf(field, "must be %v..%v, got %v", MinRetention, MaxRetention, d)
	}
	return nil
}
