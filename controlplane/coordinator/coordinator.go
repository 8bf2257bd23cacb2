// Package coordinator is the cluster scheduler (issue 5, ADR 0006): every
// control-plane replica runs one Coordinator over the same PostgreSQL
// database. There is no leader. A round claims up to Budget due or
// uninitialised schedule rows (a round continuing a backlog: up to Page,
// ADR 0066) with a short row lease (one statement, committed at once), decides each one outside the database with
// core/schedule.Decide at the claim-acquired database time, and admits the
// decisions in SERIALIZABLE transactions that re-check the whole claim fence,
// the revisions and digests, write the queued Run, its claimed Attempt and
// two events, advance the cursor and clear the claim. A replica that dies
// holds only its own short leases; anyone takes them over once they expire
// by database time.
//
// Time: fences and decisions use database time only (ADR-0107). The
// injected Clock paces the loop (cadence, wake-ups, stop deadline) and
// measures round durations; it never reaches the database.
package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/cron"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
)

// AdmissionMode chooses how a round's decisions are committed.
type AdmissionMode string

const (
	// AdmitBatched commits a round's decisions in one SERIALIZABLE
	// transaction (one statement), falling back to one transaction per
	// occurrence when the batch fails for any reason other than a lost
	// fence. The default; see ADR 0006 for the measurements.
	AdmitBatched AdmissionMode = "batched"
	// AdmitPerOccurrence commits every decision in its own transaction.
	AdmitPerOccurrence AdmissionMode = "per_occurrence"
)

// Defaults and limits (DESIGN.md §8).
const (
	DefaultCadence     = time.Second
	MinCadence         = 10 * time.Millisecond
	MaxCadence         = time.Minute
	DefaultStopTimeout = 10 * time.Second
	MaxStopTimeout     = 10 * time.Second
	DefaultMaxAttempts = 5
	// DefaultPage is the default Config.Page (ADR 0066).
	DefaultPage    = 64
	MaxMaxAttempts = 16
	// minWake keeps a loop whose next due row is already due (but was not
	// claimable: locked by a concurrent claim) from spinning.
	minWake = 5 * time.Millisecond
)

// Config configures a Coordinator. The zero value of every field means its
// default; Validate runs before anything touches PostgreSQL.
type Config struct {
	// Owner identifies this replica in claim_owner (1..128 bytes). "" means
	// "<hostname>-<pid>-<random>", unique per process start.
	Owner string
	// Budget is the claims of a fresh round: default 16, hard limit 256.
	Budget int
	// Page is the claims of a round chained to a full round's admission
	// (ADR 0066): while a backlog is worked through, each admission
	// transaction admits a page of up to Page occurrences (each with its
	// own fence and key) and claims the next page in the same round trip.
	// Default max(64, Budget); Budget..256.
	Page int
	// Lease is the claim lease: default 30 s, 1..60 s.
	Lease time.Duration
	// Cadence is the longest wait between rounds: default 1 s. The loop
	// wakes earlier for the earliest next_fire_at_ms and on publish.
	Cadence time.Duration
	// StopTimeout bounds Stop: default and maximum 10 s.
	StopTimeout time.Duration
	// Admission is AdmitBatched (default) or AdmitPerOccurrence.
	Admission AdmissionMode
	// MaxAttempts bounds the runs of one admission transaction on
	// serialization failures: default 5, at most 16.
	MaxAttempts int
	// Clock paces the loop; nil means the system clock.
	Clock Clock
	// Diagnostics receives low-sensitivity diagnostics (errors, fail-closed
	// refusals); nil means slog.Default at warn level.
	Diagnostics Sink
	// DisableListen turns off the LISTEN/NOTIFY wake-up (the loop still
	// wakes on its cadence and the earliest due time).
	DisableListen bool
	// Sweep bounds the run-lifecycle sweep that runs before each round's
	// scheduling (and is startup recovery); zero fields take defaults.
	Sweep controlplane.SweepOptions
	// DisableSweep leaves the lifecycle to another process (tests of the
	// scheduler alone). Recover still sweeps.
	DisableSweep bool
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.Budget == 0 {
		c.Budget = controlplane.DefaultClaimBudget
	}
	if c.Lease == 0 {
		c.Lease = controlplane.DefaultClaimLease
	}
	if c.Page == 0 {
		c.Page = max(DefaultPage, c.Budget)
	}
	if c.Cadence == 0 {
		c.Cadence = DefaultCadence
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.Admission == "" {
		c.Admission = AdmitBatched
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Clock == nil {
		c.Clock = SystemClock()
	}
	if c.Diagnostics == nil {
		c.Diagnostics = SlogSink(nil)
	}
	return c
}

// Validate checks the configuration against the hard limits. Errors name
// the field.
func (c Config) Validate() error {
	c = c.withDefaults()
	owner := c.Owner
	if owner == "" {
		owner = "default" // New generates one
	}
	if err := (controlplane.ClaimRequest{Owner: owner, Budget: c.Budget, Lease: c.Lease}).Validate(); err != nil {
		return err
	}
	if c.Lease%time.Millisecond != 0 {
		return errs.Invalidf("lease", "must be whole milliseconds, got %v", c.Lease)
	}
	switch {
	case c.Page < c.Budget || c.Page > controlplane.MaxClaimBudget:
		return errs.Invalidf("page", "must be budget (%d)..%d, got %d", c.Budget, controlplane.MaxClaimBudget, c.Page)
	case c.Cadence < MinCadence || c.Cadence > MaxCadence:
		return errs.Invalidf("cadence", "must be %v..%v, got %v", MinCadence, MaxCadence, c.Cadence)
	case c.StopTimeout < 0 || c.StopTimeout > MaxStopTimeout:
		return errs.Invalidf("stopTimeout", "must be 0..%v, got %v", MaxStopTimeout, c.StopTimeout)
	case c.Admission != AdmitBatched && c.Admission != AdmitPerOccurrence:
		return errs.Invalidf("admission", "must be %q or %q, got %q", AdmitBatched, AdmitPerOccurrence, c.Admission)
	case c.MaxAttempts < 1 || c.MaxAttempts > MaxMaxAttempts:
		return errs.Invalidf("maxAttempts", "must be 1..%d, got %d", MaxMaxAttempts, c.MaxAttempts)
	}
	return c.Sweep.Validate()
}

// DB is what a Coordinator needs from storage: the scheduling port
// (postgres.Scheduler over a ql3_runtime pool).
type DB = controlplane.Scheduling

// Coordinator is one replica's scheduler. Round may be called directly
// (tests, tools); Start runs the lifecycle loop.
type Coordinator struct {
	db      DB
	cfg     Config
	metrics *Metrics
	crons   *cronCache

	// testHookAfterClaim, when set, runs between claim and admission (fault
	// tests use it to kill the replica mid-round).
	testHookAfterClaim func([]controlplane.ClaimedSchedule)

	mu      sync.Mutex // guards the lifecycle fields below
	running bool
	stopReq chan struct{}
	done    chan struct{}
	cancel  context.CancelFunc
	wake    chan struct{}
}

// New validates cfg and returns a Coordinator over db. It does not touch
// the database.
func New(db DB, cfg Config) (*Coordinator, error) {
	if db == nil {
		return nil, errs.Invalidf("db", "required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Owner == "" {
		cfg.Owner = defaultOwner()
	}
	return &Coordinator{db: db, cfg: cfg, metrics: newMetrics(), crons: newCronCache(1024),
		wake: make(chan struct{}, 1)}, nil
}

// Owner is the claim_owner this replica writes.
func (c *Coordinator) Owner() string { return c.cfg.Owner }

// Metrics returns the live counters.
func (c *Coordinator) Metrics() *Metrics { return c.metrics }

func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "ql3"
	}
	if len(host) > 64 {
		host = host[:64]
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// RoundResult summarises one round.
type RoundResult struct {
	Claimed     int
	Admitted    int
	Skipped     int
	Initialized int
	Released    int
	Raced       int
	Stale       int
	Corrupt     int
	Retries     int
	// Unresolved counts decisions whose admission failed with an error
	// (including an unknown commit outcome): their claims run out and the
	// rows are claimed again.
	Unresolved int
	// Full: the round used its whole budget; more work is probably due.
	Full bool
}

// Round runs one claim → decide → admit pass. An error means the claim
// itself failed (nothing was claimed); admission errors are reported to the
// diagnostic sink and counted in the result, never returned, so one bad row
// cannot stop the others.
func (c *Coordinator) Round(ctx context.Context) (RoundResult, error) {
	res, _, err := c.round(ctx, nil, false)
	return res, err
}

// round is Round over claims already taken (claimed non-nil: the previous
// round's admission claimed them in its round trip) or a fresh claim. With
// claimNext, a full round in batched mode asks its admission to claim the
// next batch in the same round trip and returns it (nil when it did not
// ask, empty when nothing more was claimable). Only the lifecycle loop
// chains rounds like this, and it always admits what it claimed.
func (c *Coordinator) round(ctx context.Context, claimed []controlplane.ClaimedSchedule, claimNext bool) (RoundResult, []controlplane.ClaimedSchedule, error) {
	start := c.cfg.Clock.Now()
	var res RoundResult
	defer func() { c.metrics.observeRound(c.cfg.Clock.Now().Sub(start)) }()
	want := c.cfg.Page // claims handed in were chained: a page was asked for
	if claimed == nil {
		want = c.cfg.Budget
		var err error
		claimed, err = c.db.ClaimSchedules(ctx, c.claimRequest())
		if err != nil {
			c.metrics.Errors.Add(1)
			return res, nil, fmt.Errorf("coordinator: claim: %w", err)
		}
		c.countClaimed(claimed, false)
	}
	res.Claimed, res.Full = len(claimed), len(claimed) == want
	if len(claimed) == 0 {
		return res, nil, nil
	}
	if c.testHookAfterClaim != nil {
		c.testHookAfterClaim(claimed)
	}
	batch := make([]controlplane.Admission, 0, len(claimed))
	metas := make([]decisionMeta, 0, len(claimed))
	for _, cl := range claimed {
		ad, meta, err := c.decide(cl)
		if err != nil {
			// Fail closed: no admission; the claim runs out after Lease, which
			// bounds how often a broken trigger is retried.
			res.Unresolved++
			c.metrics.DecideErrors.Add(1)
			c.report(Diagnostic{Kind: "decide_failed", TriggerID: cl.TriggerID.String(), Err: err})
			continue
		}
		batch = append(batch, ad)
		metas = append(metas, meta)
	}
	next := c.admit(ctx, batch, metas, &res, claimNext && res.Full)
	return res, next, nil
}

// countClaimed counts a claim's rows, and the takeovers among them.
func (c *Coordinator) countClaimed(claimed []controlplane.ClaimedSchedule, chained bool) {
	c.metrics.Claimed.Add(int64(len(claimed)))
	if chained {
		c.metrics.ClaimedChained.Add(int64(len(claimed)))
	}
	for _, cl := range claimed {
		if cl.TakenOver() {
			c.metrics.TakenOver.Add(1)
		}
	}
}

func (c *Coordinator) claimRequest() controlplane.ClaimRequest {
	return controlplane.ClaimRequest{Owner: c.cfg.Owner, Budget: c.cfg.Budget, Lease: c.cfg.Lease}
}

// pageRequest is the claim chained to a full round's admission.
func (c *Coordinator) pageRequest() controlplane.ClaimRequest {
	return controlplane.ClaimRequest{Owner: c.cfg.Owner, Budget: c.cfg.Page, Lease: c.cfg.Lease}
}

// decisionMeta is what the metrics need of a decision once it committed.
type decisionMeta struct {
	lagMs  int64 // claim-acquired − scheduled of a Fire; -1 otherwise
	missed int64 // occurrences that will never run (Fire, Skip)
}

// decide runs core's decision at the claim-acquired database time and
// builds the admission.
func (c *Coordinator) decide(cl controlplane.ClaimedSchedule) (controlplane.Admission, decisionMeta, error) {
	meta := decisionMeta{lagMs: -1}
	sched, err := c.crons.get(cl.Expression, cl.TimeZone)
	if err != nil {
		return controlplane.Admission{}, meta, err
	}
	t := schedule.Trigger{ID: cl.TriggerID.String(), Revision: cl.TriggerRevision, Cron: sched,
		Misfire: cl.Misfire, GraceMs: cl.GraceMs, ActivatedAtMs: cl.ActivatedAtMs}
	d, err := schedule.Decide(t, cl.State(), cl.AcquiredAtMs)
	if err != nil {
		return controlplane.Admission{}, meta, err
	}
	ad, err := controlplane.AdmissionFor(cl, d)
	if err != nil {
		return ad, meta, err
	}
	if d.Kind == schedule.Fire {
		meta.lagMs = d.LateMs
	}
	if d.Kind == schedule.Fire || d.Kind == schedule.Skip {
		meta.missed = d.Missed
	}
	return ad, meta, nil
}

// admit commits the batch according to the admission mode. With claimNext
// (batched mode only) the next claim rides in the admission's round trip
// and its rows are returned; nil means no claim was made.
func (c *Coordinator) admit(ctx context.Context, batch []controlplane.Admission, metas []decisionMeta, res *RoundResult, claimNext bool) []controlplane.ClaimedSchedule {
	if len(batch) == 0 {
		return nil
	}
	opts := controlplane.AdmitOptions{MaxAttempts: c.cfg.MaxAttempts}
	if c.cfg.Admission == AdmitBatched && len(batch) > 1 {
		var r controlplane.AdmitResult
		var nc controlplane.NextClaim
		var err error
		if claimNext {
			r, nc, err = c.db.AdmitThenClaim(ctx, batch, opts, c.pageRequest())
		} else {
			r, err = c.db.Admit(ctx, batch, opts)
		}
		c.count(r.Retries, res)
		if err == nil {
			c.tally(batch, metas, r.Outcomes, res)
			if !claimNext {
				return nil
			}
			if nc.Err != nil {
				c.metrics.Errors.Add(1)
				c.report(Diagnostic{Kind: "claim_failed", Err: nc.Err})
				return nil
			}
			c.countClaimed(nc.Claimed, true)
			if nc.Claimed == nil {
				return []controlplane.ClaimedSchedule{} // claimed, found nothing
			}
			return nc.Claimed
		}
		if errors.Is(err, controlplane.ErrCommitUnknown) || ctx.Err() != nil {
			// Whatever happened is durable or not; the next claim sees it.
			c.unresolved(len(batch), err, res)
			return nil
		}
		// Confine the blast radius: one poisoned occurrence must not hold
		// the others back. Each gets its own transaction.
		c.metrics.BatchFallbacks.Add(1)
		c.report(Diagnostic{Kind: "batch_fallback", Err: err})
	}
	for i := range batch {
		r, err := c.db.Admit(ctx, batch[i:i+1], opts)
		c.count(r.Retries, res)
		if err != nil {
			c.unresolved(1, err, res)
			if ctx.Err() != nil {
				res.Unresolved += len(batch) - i - 1
				return nil
			}
			c.report(Diagnostic{Kind: "admit_failed", TriggerID: batch[i].Claim.TriggerID.String(), Err: err})
			continue
		}
		c.tally(batch[i:i+1], metas[i:i+1], r.Outcomes, res)
	}
	return nil
}

func (c *Coordinator) count(retries int, res *RoundResult) {
	res.Retries += retries
	c.metrics.SerializationRetries.Add(int64(retries))
}

func (c *Coordinator) unresolved(n int, err error, res *RoundResult) {
	res.Unresolved += n
	if errors.Is(err, controlplane.ErrCommitUnknown) {
		c.metrics.CommitUnknown.Add(1)
	}
	c.metrics.AdmitErrors.Add(1)
}

func (c *Coordinator) tally(batch []controlplane.Admission, metas []decisionMeta, outcomes []controlplane.Outcome, res *RoundResult) {
	for i, o := range outcomes {
		switch o {
		case controlplane.OutcomeAdmitted:
			res.Admitted++
			c.metrics.Admitted.Add(1)
			c.metrics.FireLag.Observe(metas[i].lagMs)
			c.report(Diagnostic{Kind: "run_admitted", TriggerID: batch[i].Claim.TriggerID.String(), RunID: batch[i].RunID.String(), Info: true})
			c.metrics.Missed.Add(metas[i].missed)
		case controlplane.OutcomeSkipped:
			res.Skipped++
			c.metrics.Skipped.Add(1)
			c.metrics.Missed.Add(metas[i].missed)
		case controlplane.OutcomeInitialized:
			res.Initialized++
			c.metrics.Initialized.Add(1)
		case controlplane.OutcomeReleased:
			res.Released++
			c.metrics.Released.Add(1)
		case controlplane.OutcomeRaced:
			// Expected when a claim expired (this replica stalled past its
			// lease) or a publish reset the row: counted, logged at debug.
			res.Raced++
			c.metrics.Raced.Add(1)
			c.report(Diagnostic{Kind: "admission_refused_raced", TriggerID: batch[i].Claim.TriggerID.String(), Debug: true})
		case controlplane.OutcomeStale:
			// The world moved under the claim (disabled, re-pinned,
			// archived): expected, counted, logged at debug.
			res.Stale++
			c.metrics.Stale.Add(1)
			c.report(Diagnostic{Kind: "admission_refused_stale", TriggerID: batch[i].Claim.TriggerID.String(), Debug: true})
		case controlplane.OutcomeCorrupt:
			res.Corrupt++
			c.metrics.Corrupt.Add(1)
			c.report(Diagnostic{Kind: "admission_refused_corrupt", TriggerID: batch[i].Claim.TriggerID.String()})
		}
	}
}

func (c *Coordinator) report(d Diagnostic) {
	d.Owner = c.cfg.Owner
	c.cfg.Diagnostics(d)
}

// cronCache keeps parsed expressions per (expression, zone); a fleet of
// triggers usually shares a few. It is reset when full, which bounds it.
type cronCache struct {
	mu    sync.Mutex
	max   int
	items map[[2]string]*cron.Schedule
}

func newCronCache(max int) *cronCache {
	return &cronCache{max: max, items: map[[2]string]*cron.Schedule{}}
}

func (cc *cronCache) get(expr, zone string) (*cron.Schedule, error) {
	key := [2]string{expr, zone}
	cc.mu.Lock()
	s, ok := cc.items[key]
	cc.mu.Unlock()
	if ok {
		return s, nil
	}
	if zone == "Local" || zone == "" {
		return nil, errs.Invalidf("timeZone", "must be an IANA zone name, got %q", zone)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return nil, errs.Invalidf("timeZone", "unknown time zone %.64q", zone)
	}
	s, err = cron.Parse(expr, loc)
	if err != nil {
		return nil, err
	}
	cc.mu.Lock()
	if len(cc.items) >= cc.max {
		clear(cc.items)
	}
	cc.items[key] = s
	cc.mu.Unlock()
	return s, nil
}
