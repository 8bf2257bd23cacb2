package pullpace

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
)

// Pull pacing source (ADR 0030). An empty pull is answered with the time
// until the cluster's next scheduled occurrence (plus a margin), so a
// worker is back just after the Run is admitted instead of up to an idle
// pause later. The forecast is one indexed read of the scheduler's
// cursors, made by one loop per replica every TTL (and just after the
// forecast instant) — never per pull, never per worker — and pulls read
// it from memory: an idle pull stays one read-only round trip (ADR 0009).

// Defaults and limits of PullPacerOptions.
const (
	DefaultPullMargin      = 50 * time.Millisecond
	DefaultPullFloor       = 100 * time.Millisecond
	DefaultPullForecastTTL = 200 * time.Millisecond
	DefaultPullDueGrace    = time.Second
	minPullForecastTTL     = 10 * time.Millisecond
	maxPullForecastTTL     = 5 * time.Second
	maxPullDueGrace        = 30 * time.Second
	pullForecastTimeout    = time.Second
	// overdueReread is the read period while the forecast instant has
	// passed (bounded by DueGrace: a cursor further overdue leaves the
	// forecast).
	overdueReread = 25 * time.Millisecond
)

// PullPacerOptions configure a PullPacer; zero values take the defaults.
type PullPacerOptions struct {
	// Margin is added to the time until the next occurrence: the usual
	// admission lag (due → Run queued), so the pull does not arrive just
	// before the Run exists. 0–10 s; default 50 ms.
	Margin time.Duration
	// Floor is the shortest pause answered (100 ms – 60 s; default 100 ms):
	// what a pull that arrives while an occurrence is being admitted is
	// told, and the bound on one session's pull rate.
	Floor time.Duration
	// TTL is the period of Run's reads (10 ms – 5 s; default 200 ms); it
	// also reads just after the instant a forecast named. A forecast older
	// than five TTLs (at least 1 s) is not used.
	TTL time.Duration
	// DueGrace is how long past its due instant an occurrence still counts
	// as "being admitted" (0–30 s; default 1 s). A cursor stuck further in
	// the past (no replica scheduling, a trigger that fails to decide)
	// must not keep every worker on the floor pause.
	DueGrace time.Duration
	// Now is the replica's clock (monotonic readings); nil: time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

func (o PullPacerOptions) withDefaults() (PullPacerOptions, error) {
	if o.Margin == 0 {
		o.Margin = DefaultPullMargin
	}
	if o.Floor == 0 {
		o.Floor = DefaultPullFloor
	}
	if o.TTL == 0 {
		o.TTL = DefaultPullForecastTTL
	}
	if o.DueGrace == 0 {
		o.DueGrace = DefaultPullDueGrace
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.Margin < 0 || o.Margin > protocol.MaxPullMarginMs*time.Millisecond:
		return o, errs.Invalidf("pullMargin", "must be 0..%dms, got %s", protocol.MaxPullMarginMs, o.Margin)
	case o.Floor < protocol.MinRetryAfterMs*time.Millisecond || o.Floor > protocol.MaxRetryAfterMs*time.Millisecond:
		return o, errs.Invalidf("pullFloor", "must be %dms..%dms, got %s", protocol.MinRetryAfterMs, protocol.MaxRetryAfterMs, o.Floor)
	case o.TTL < minPullForecastTTL || o.TTL > maxPullForecastTTL:
		return o, errs.Invalidf("pullForecastTTL", "must be %s..%s, got %s", minPullForecastTTL, maxPullForecastTTL, o.TTL)
	case o.DueGrace < 0 || o.DueGrace > maxPullDueGrace:
		return o, errs.Invalidf("pullDueGrace", "must be 0..%s, got %s", maxPullDueGrace, o.DueGrace)
	}
	return o, nil
}

// pullForecastSQL reads the earliest cursor of an active schedule that is
// not more than $1 ms overdue, and the database time. It reads
// trigger_schedules_due_idx from that bound in index order and stops at the
// first entry (uninitialised rows sort before every bound and are not
// read: initialising a schedule admits no Run). active is publication's
// summary of eligibility (migration 0004); a row wrongly active costs only
// an early pull, which is all a forecast can cost.
const pullForecastSQL = `WITH db_now AS MATERIALIZED (SELECT ` + postgres.DBNowMs + ` AS ms)
SELECT (SELECT ms FROM db_now), (
	SELECT coalesce(s.next_fire_at_ms, -9223372036854775808)
	FROM ql3.trigger_schedules s
	WHERE s.active AND coalesce(s.next_fire_at_ms, -9223372036854775808) >= (SELECT ms FROM db_now) - $1::bigint
	ORDER BY coalesce(s.next_fire_at_ms, -9223372036854775808), s.project_id, s.trigger_id
	LIMIT 1)`

// pullForecast is one read, in the replica's clock.
type pullForecast struct {
	readAt time.Time // local time the answer arrived
	known  bool      // some schedule has a cursor not too far overdue
	dueAt  time.Time // local instant of that cursor (database delay added to readAt)
}

// PullPacer answers the pacing of empty pulls (controlplane.PullPacer). It keeps
// one forecast per replica, re-read by its own loop (Run) every TTL and just
// after the instant it named (plus the margin, when that occurrence has
// normally been admitted and the cursor has moved on). Pulls only read the
// forecast from memory. Re-reading from the pulls instead (stale while
// revalidate) does not work: a worker pulls about once per idle pause,
// later than any useful TTL, so every pull would meet a forecast that had
// expired and be answered the idle pause.
type PullPacer struct {
	db   postgres.DB
	opts PullPacerOptions

	mu      sync.Mutex
	last    pullForecast
	lastSeq uint64 // the read that produced last
	have    bool

	seq      atomic.Uint64 // reads started
	reads    atomic.Int64
	failures atomic.Int64
}

// NewPullPacer builds the pacer on a pool that can read trigger_schedules
// (the runtime role's dispatch pool: the ingress role cannot). Run keeps
// its forecast fresh; without Run, Forecast answers "unknown" once the last
// read is older than a few TTLs.
func NewPullPacer(db postgres.DB, opts PullPacerOptions) (*PullPacer, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &PullPacer{db: db, opts: o}, nil
}

// Refresh reads the forecast now.
func (p *PullPacer) Refresh(ctx context.Context) error {
	seq := p.seq.Add(1)
	var nowMs int64
	var dueMs *int64
	err := p.db.QueryRow(ctx, pullForecastSQL, p.opts.DueGrace.Milliseconds()).Scan(&nowMs, &dueMs)
	readAt := p.opts.Now()
	p.reads.Add(1)
	if err != nil {
		p.failures.Add(1)
		return postgres.Translate(err)
	}
	f := pullForecast{readAt: readAt, known: dueMs != nil}
	if f.known {
		// The delay is measured on the database clock and applied to the
		// local one: only the read's own latency separates the two.
		f.dueAt = readAt.Add(time.Duration(*dueMs-nowMs) * time.Millisecond)
	}
	p.mu.Lock()
	if seq > p.lastSeq { // a slower, older read never replaces a newer one
		p.last, p.lastSeq, p.have = f, seq, true
	}
	p.mu.Unlock()
	return nil
}

// Run re-reads the forecast until ctx ends: every TTL, and at the
// forecast instant plus the margin when that comes first. A failed read is
// logged (debug) and retried at the next TTL; meanwhile the old forecast
// ages out to "unknown" (the idle pause).
func (p *PullPacer) Run(ctx context.Context) {
	for {
		rctx, cancel := context.WithTimeout(ctx, pullForecastTimeout)
		err := p.Refresh(rctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			p.opts.Logger.Debug("pull pacing forecast not read; pulls keep the previous one until it ages out", "err", err)
		}
		t := time.NewTimer(p.nextRead(p.opts.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// nextRead is how long Run waits before the next read: the TTL, or until
// just after the forecast instant (margin, at least 1 ms) when sooner; and
// only overdueReread while the forecast names an instant that had already
// passed when it was read (an occurrence being admitted): every idle pull
// is told the floor until the cursor moves on, so the pacer looks again
// soon rather than a whole TTL later.
func (p *PullPacer) nextRead(now time.Time) time.Duration {
	wait := p.opts.TTL
	p.mu.Lock()
	f, have := p.last, p.have
	p.mu.Unlock()
	if !have || !f.known {
		return wait
	}
	if !f.dueAt.After(f.readAt) {
		return min(wait, overdueReread)
	}
	if d := f.dueAt.Add(max(p.opts.Margin, time.Millisecond)).Sub(now); d > 0 && d < wait {
		wait = d
	}
	return wait
}

// Forecast is the pacer's current knowledge of the next occurrence, from
// memory.
func (p *PullPacer) Forecast() protocol.PullForecast {
	now := p.opts.Now()
	p.mu.Lock()
	f, have := p.last, p.have
	p.mu.Unlock()
	if !have || !f.known || now.Sub(f.readAt) > p.maxAge() || now.Before(f.readAt) {
		return protocol.PullForecast{}
	}
	due := f.dueAt.Sub(now)
	if due < -p.opts.DueGrace {
		// Past the grace (and not re-read yet): not "being admitted".
		return protocol.PullForecast{}
	}
	return protocol.PullForecast{Known: true, DueInMs: due.Milliseconds()}
}

// maxAge is how old a forecast may be before it is not used at all (the
// loop stopped or the database is unreachable): five reads missed, at
// least a second.
func (p *PullPacer) maxAge() time.Duration { return max(5*p.opts.TTL, time.Second) }

// PullPauseMs implements controlplane.PullPacer: the pause an empty pull asks
// for, given the dispatcher's idle pause.
func (p *PullPacer) PullPauseMs(idleMs int64) int64 {
	return protocol.PullPacing{IdleMs: idleMs, MarginMs: p.opts.Margin.Milliseconds(),
		FloorMs: p.opts.Floor.Milliseconds()}.PauseMs(p.Forecast())
}

// PullPacerStats counts forecast reads and failed reads.
type PullPacerStats struct{ Reads, Failures int64 }

// Stats returns the counters.
func (p *PullPacer) Stats() PullPacerStats {
	return PullPacerStats{Reads: p.reads.Load(), Failures: p.failures.Load()}
}
