package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/lease"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/placement/matcher"
	"github.com/ql3/ql3/core/spec"
)

// Dispatch numbers (DESIGN.md §8, ADR 0009). Pages × rows and claim tries
// bound one pull; the hard limits bound what an operator may configure.
const (
	DefaultPullPages    = 2
	DefaultPullPageRows = 8
	DefaultPullClaims   = 8
	MaxPullPages        = 16
	MaxPullPageRows     = 64
	MaxPullClaims       = 64
	// The lease lengths are core/lease's (one policy for the cluster).
	UnstartedLeaseMs     = lease.DefaultUnstartedMs   // offer → starting ACK
	StartedLeaseMs       = lease.DefaultStartedMs     // renewed by every heartbeat
	DefaultCancelGraceMs = lease.DefaultCancelGraceMs // SIGTERM → SIGKILL the worker is asked for
	DefaultAttemptLogCap = 64 << 20                   // bytes per attempt, both streams
	MaxAttemptLogCap     = 1 << 30
	// MaxCompletionSkewMs: a completion may not claim to have finished
	// more than this after the authority's clock.
	MaxCompletionSkewMs = 5 * 60 * 1000
	// DefaultIdleRetryAfter is the Retry-After hint of an empty pull.
	DefaultIdleRetryAfter = 2 * time.Second
)

// DispatchOptions configures a Dispatcher; zero values mean the defaults.
type DispatchOptions struct {
	PullPages, PullPageRows, PullClaims int
	AttemptLogCapBytes                  int64
	// Lease is the lease policy: the unstarted and started attempt leases
	// and the cancel grace asked of workers. Zero: lease.Default().
	Lease          lease.Policy
	IdleRetryAfter time.Duration
	// Env opens the env entries pinned for an attempt at its claim (the
	// env store's data key, ADR 0051); nil: an attempt with pinned entries
	// cannot be offered (503) until ql3-control has its key file.
	Env controlplane.EnvOpener
}

func (o DispatchOptions) normalize() (DispatchOptions, error) {
	def := func(v *int, d, hi int, field string) error {
		if *v == 0 {
			*v = d
		}
		if *v < 1 || *v > hi {
			return errs.Invalidf(field, "must be 1..%d, got %d", hi, *v)
		}
		return nil
	}
	if err := def(&o.PullPages, DefaultPullPages, MaxPullPages, "pullPages"); err != nil {
		return o, err
	}
	if err := def(&o.PullPageRows, DefaultPullPageRows, MaxPullPageRows, "pullPageRows"); err != nil {
		return o, err
	}
	if err := def(&o.PullClaims, DefaultPullClaims, MaxPullClaims, "pullClaims"); err != nil {
		return o, err
	}
	if o.AttemptLogCapBytes == 0 {
		o.AttemptLogCapBytes = DefaultAttemptLogCap
	}
	if o.AttemptLogCapBytes < 1 || o.AttemptLogCapBytes > MaxAttemptLogCap {
		return o, errs.Invalidf("attemptLogCapBytes", "must be 1..%d, got %d", int64(MaxAttemptLogCap), o.AttemptLogCapBytes)
	}
	if o.Lease == (lease.Policy{}) {
		o.Lease = lease.Default()
	}
	if err := o.Lease.Validate(); err != nil {
		return o, errs.Prefix("lease", err)
	}
	if o.IdleRetryAfter == 0 {
		o.IdleRetryAfter = DefaultIdleRetryAfter
	}
	if o.IdleRetryAfter < time.Second || o.IdleRetryAfter > time.Minute {
		return o, errs.Invalidf("idleRetryAfter", "must be 1s..60s, got %s", o.IdleRetryAfter)
	}
	return o, nil
}

// DispatchDB is what the Dispatcher needs from a runtime-role pool.
type DispatchDB interface {
	postgres.DB
	postgres.Acquirer
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Dispatcher serves offer pulls and the per-attempt lifecycle on the
// runtime role (ADR 0009, 0011, 0012). It keeps no per-worker state: only
// caches of immutable facts (compiled execution revisions by id, prepared
// capabilities by digest).
type Dispatcher struct {
	db   DispatchDB
	opts DispatchOptions

	stats dispatchCounters

	mu        sync.Mutex
	revisions map[uuid.UUID]*compiledRevision
	prepared  map[canonjson.Digest]*matcher.Prepared
}

// Cache bounds: a cache at its bound is dropped whole (the entries are
// cheap to rebuild and the working set is far smaller).
const (
	maxRevisionCache = 1024
	maxPreparedCache = 4096
)

// NewDispatcher returns a Dispatcher on a runtime-role pool.
func NewDispatcher(db DispatchDB, opts DispatchOptions) (*Dispatcher, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	return &Dispatcher{db: db, opts: o, revisions: map[uuid.UUID]*compiledRevision{},
		prepared: map[canonjson.Digest]*matcher.Prepared{}}, nil
}

// compiledRevision is an execution revision as offers need it: the decoded
// spec, its digest, the stored revision digest and the compiled placement.
type compiledRevision struct {
	id         uuid.UUID
	digest     canonjson.Digest // execution_revisions.digest
	spec       spec.Command
	specDigest canonjson.Digest
	match      *matcher.Matcher // nil: no placement, every worker qualifies
	// The task and task revision it was compiled from (offers carry them;
	// only revision() reads them).
	taskID       uuid.UUID
	taskRevision int64
	scriptTree   string // a script task's pinned tree (ADR 0052), "" otherwise
	// worker is the worker id the placement pins the revision to
	// (placement.WorkerLabel, ADR 0062), "" for any; match is the rest.
	worker string
	// projectID is the revision's project (offers carry it, ADR 0062).
	projectID uuid.UUID
}

// revision returns the compiled revision id, reading it once.
func (d *Dispatcher) revision(ctx context.Context, q querier, id uuid.UUID) (*compiledRevision, error) {
	d.mu.Lock()
	rev := d.revisions[id]
	d.mu.Unlock()
	if rev != nil {
		return rev, nil
	}
	var canonical string
	var digest []byte
	var taskID uuid.UUID
	var taskRevision int64
	var tree []byte
	var projectID uuid.UUID
	if err := q.QueryRow(ctx, sqlRevision, id).Scan(&canonical, &digest, &taskID, &taskRevision, &tree, &projectID); err != nil {
		return nil, postgres.Errorf(err, "postgres: read execution revision")
	}
	rev, err := compileRevision(id, canonical, digest)
	if err != nil {
		return nil, err
	}
	rev.taskID, rev.taskRevision, rev.projectID = taskID, taskRevision, projectID
	if len(tree) == len(canonjson.Digest{}) {
		rev.scriptTree = canonjson.Digest(tree).String()
	}
	d.mu.Lock()
	if len(d.revisions) >= maxRevisionCache {
		clear(d.revisions)
	}
	d.revisions[id] = rev
	d.mu.Unlock()
	return rev, nil
}

const sqlRevision = `SELECT canonical_spec, digest, task_id, task_revision, script_tree, project_id FROM ql3.execution_revisions WHERE execution_revision_id = $1::uuid`

// RevisionMatcher compiles a stored execution revision as offers do and
// returns its placement matcher (nil: no placement, every worker qualifies)
// and the worker id it is pinned to ("" for any, placement.WorkerLabel);
// run operations explain a queued Run's wait with them.
func RevisionMatcher(id uuid.UUID, canonical string, digest []byte) (*matcher.Matcher, string, error) {
	rev, err := compileRevision(id, canonical, digest)
	if err != nil {
		return nil, "", err
	}
	return rev.match, rev.worker, nil
}

func compileRevision(id uuid.UUID, canonical string, digest []byte) (*compiledRevision, error) {
	rev := &compiledRevision{id: id}
	if len(digest) != len(rev.digest) {
		return nil, errs.E(errs.Internal, "", "execution revision %s: digest is %d bytes", id, len(digest))
	}
	copy(rev.digest[:], digest)
	cmd, err := spec.Decode([]byte(canonical))
	if err != nil {
		return nil, errs.E(errs.Internal, "", "execution revision %s: stored spec does not decode: %v", id, err)
	}
	rev.spec = cmd
	if rev.specDigest, err = cmd.Digest(); err != nil {
		return nil, errs.E(errs.Internal, "", "execution revision %s: %v", id, err)
	}
	if rev.specDigest != rev.digest {
		// The revision's digest covers exactly its canonical spec
		// (publication); anything else is a tampered or corrupt row.
		return nil, errs.E(errs.Conflict, "executionRevisionDigest", "execution revision does not match its digest")
	}
	// The placement pinned inside the spec is the authority; the
	// revision's placement column is a copy for queries.
	if cmd.Placement != nil {
		worker, rest := cmd.Placement.PinnedWorker()
		rev.worker = worker
		if !rest.IsZero() || worker == "" {
			if rev.match, err = matcher.Compile(rest); err != nil {
				return nil, errs.E(errs.Internal, "", "execution revision %s: stored placement: %v", id, err)
			}
		}
	}
	return rev, nil
}

// preparedCaps returns the session's capabilities with versions parsed,
// once per capabilities digest (matcher.Prepare once per session).
func (d *Dispatcher) preparedCaps(digest canonjson.Digest, capsJSON []byte) (*matcher.Prepared, error) {
	d.mu.Lock()
	p := d.prepared[digest]
	d.mu.Unlock()
	if p != nil {
		return p, nil
	}
	caps, err := placement.DecodeCapabilities(capsJSON)
	if err != nil {
		return nil, errs.E(errs.Internal, "", "stored session capabilities: %v", err)
	}
	if p, err = matcher.Prepare(caps); err != nil {
		return nil, errs.E(errs.Internal, "", "stored session capabilities: %v", err)
	}
	d.mu.Lock()
	if len(d.prepared) >= maxPreparedCache {
		clear(d.prepared)
	}
	d.prepared[digest] = p
	d.mu.Unlock()
	return p, nil
}

// parseID parses a canonical UUID text, naming field (postgres.ParseID).
var parseID = postgres.ParseID
