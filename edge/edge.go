// Package edge holds the domain types and the storage contract of ql3-edge,
// the single-node profile that schedules and runs tasks by itself on
// embedded SQLite.
//
// The types here are plain data; the rules live in core (spec decoding,
// run/attempt state machines, schedule decisions) and the persistence in
// edge/sqlite, which implements Store. The scheduler (edge/scheduler), the
// runner (edge/runner) and the HTTP API (edge/httpapi) all talk to a Store,
// never to SQL.
//
// Times are epoch milliseconds (int64) everywhere; ids are UUIDv7 strings.
package edge

import (
	"context"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/spec"
)

// DefaultProjectID is the project every edge task belongs to.
const DefaultProjectID = "default"

// Page sizes for every List method: a zero limit means DefaultPageSize; a
// limit above MaxPageSize is refused with errs.Invalid (field "limit").
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
)

// MaxTriggersPerTask bounds the live triggers of one task, so ListTriggers
// answers in one bounded list.
const MaxTriggersPerTask = 64

// Task is what to run. Its spec lives in the current TaskRevision; the task
// row only carries identity, name and the enabled/deleted switches.
type Task struct {
	ID          string
	ProjectID   string
	Name        string
	Enabled     bool
	Labels      []string         // CheckLabels; not part of the revision
	Revision    int64            // current (newest) revision number, 1-based
	Spec        spec.Command     // spec of the current revision
	Digest      canonjson.Digest // content digest of the current revision
	CreatedAtMs int64
	UpdatedAtMs int64
	DeletedAtMs int64 // 0 while the task is live; deleted tasks keep their history
}

// Deleted reports whether the task was soft-deleted.
func (t Task) Deleted() bool { return t.DeletedAtMs != 0 }

// TaskRevision is an immutable snapshot of a task's spec, published by
// CreateTask/UpdateTask. A Run pins one revision.
type TaskRevision struct {
	TaskID      string
	Revision    int64
	Spec        spec.Command
	Canonical   []byte           // canonical JSON of Spec (core/spec Canonical)
	Digest      canonjson.Digest // SHA-256 of Canonical (core/spec Digest)
	CreatedAtMs int64
}

// NewTask is the input of CreateTask.
type NewTask struct {
	Name    string // edge.CheckTaskName: 1..128 characters, readable; unique among live tasks
	Spec    spec.Command
	Enabled bool
	Labels  []string // CheckLabels
	// Triggers are created with the task in the same transaction, so a
	// task never exists without the triggers its request asked for.
	Triggers []TriggerInput
}

// TaskUpdate is the input of UpdateTask: a full replacement of the
// mutable parts (PUT semantics). An update that changes neither name nor
// spec digest publishes nothing and returns the task unchanged.
type TaskUpdate struct {
	Name string
	Spec spec.Command
	// Labels, when not nil, replace the task's labels in the same
	// transaction (labels alone publish no revision).
	Labels *[]string
}

// TaskFilter selects tasks for ListTasks, oldest first. Empty fields do
// not filter.
type TaskFilter struct {
	IncludeDeleted bool
	// Search is a substring of the name, the command or a label (CheckSearch).
	Search  string
	Label   string // exactly this label
	Enabled *bool
	Limit   int
	Cursor  string // NextCursor of the previous page; "" for the first
}

// TaskPage is one page of ListTasks.
type TaskPage struct {
	Tasks      []Task
	NextCursor string // "" when there is no further page
	Total      int64  // tasks the filter selects, over all pages
}

// Trigger is a cron trigger bound to a task, at its current revision, with
// its schedule row.
type Trigger struct {
	ID          string
	TaskID      string
	Revision    int64 // bumped by every UpdateTrigger; resets the schedule
	Expression  string
	TimeZone    string // IANA name, e.g. "Europe/Berlin" or "UTC"
	Misfire     schedule.MisfirePolicy
	GraceMs     int64 // misfire grace, 1..schedule.MaxGraceMs
	Enabled     bool
	CreatedAtMs int64
	UpdatedAtMs int64 // also the activation time of the current revision
	Schedule    Schedule
}

// TriggerInput is the input of CreateTrigger and UpdateTrigger (a full
// replacement). Zero GraceMs means schedule.DefaultEdgeGraceMs; empty
// Misfire means skip; empty TimeZone means UTC.
type TriggerInput struct {
	Expression string
	TimeZone   string
	Misfire    schedule.MisfirePolicy
	GraceMs    int64
	Enabled    bool
}

// Schedule is the durable cursor of one trigger (table trigger_schedules).
type Schedule struct {
	TriggerID         string
	TriggerRevision   int64
	Initialized       bool  // false after create or reset: the next decision is Init
	NextFireAtMs      int64 // meaningful when Initialized
	LastScheduledAtMs int64 // scheduled_for of the newest admitted occurrence, 0 if none
	StateVersion      int64 // compare-and-set token, bumped by every write
	MissedTotal       int64 // occurrences passed over (skip decisions and fell-behind fires)
	LastMissedAtMs    int64 // observation time of the newest decision that missed something
	// LastError says why the scheduler parked this schedule (its expression
	// or zone no longer compiles, or it never fires again); a parked
	// schedule is inactive until the trigger is published again.
	LastError   string
	UpdatedAtMs int64
}

// ScheduleItem is a schedule row together with the trigger it belongs to,
// as read by the scheduler.
type ScheduleItem struct {
	Trigger  Trigger
	Schedule Schedule
}

// RunOrigin says why a Run exists.
type RunOrigin string

const (
	OriginSchedule RunOrigin = "schedule" // admitted by the scheduler for a cron occurrence
	OriginManual   RunOrigin = "manual"   // run-now from the API/CLI (optionally a re-run of another run)
)

// Run is one occurrence of a task. It pins the task revision it executes.
type Run struct {
	ID                  string
	ProjectID           string
	TaskID              string
	TaskName            string // the task's current name (read with the run)
	TaskRevision        int64
	Origin              RunOrigin
	TriggerID           string // "" for manual runs
	TriggerRevision     int64  // 0 for manual runs
	RerunOf             string // run id this one re-runs, "" otherwise
	IdempotencyKey      string // cron: schedule.IdempotencyKey(...); manual: "ql3:manual:v1:<client key>"
	ScheduledForMs      int64  // cron occurrence time; creation time for manual runs
	Status              run.RunStatus
	Version             int64 // compare-and-set token, bumped by every transition
	AttemptCount        int   // attempts created so far (the newest attempt's number)
	MaxAttempts         int   // from the pinned spec's retry policy
	NotBeforeMs         int64 // queued/retry_wait: not to be started before this time
	RandomDelayMs       int64 // the spec's randomDelayMs drawn for this occurrence (scheduled runs; in NotBeforeMs)
	Concurrency         spec.ConcurrencyPolicy
	CancelRequestedAtMs int64  // set by RequestCancel while the run was active
	Reason              string // why a run ended the way it did (e.g. SkipConcurrencyForbid), "" otherwise
	ErrorClass          run.ErrorClass
	ExitCode            *int // of the final attempt, nil when there was no exit
	CreatedAtMs         int64
	UpdatedAtMs         int64
	FinishedAtMs        int64 // 0 until terminal (or lost without retry)
}

// Attempt is one try of a Run. Retries create new Attempts on the same Run.
type Attempt struct {
	RunID        string
	Number       int // 1-based, unique per run
	Status       run.AttemptStatus
	PID          int
	PGID         int
	CreatedAtMs  int64
	StartedAtMs  int64
	FinishedAtMs int64
	ExitCode     *int
	ErrorClass   run.ErrorClass
	Message      string // short, human-readable; never output or secrets
	LogPath      string
	LogSize      int64
	LogTruncated bool
	MaskedCount  int    // occurrences of env store values replaced by *** in the log (ADR 0038)
	ScriptTree   string // script tasks: the tree digest of the script's folder this attempt started from (ADR 0044)
}

// AttemptRef addresses one attempt.
type AttemptRef struct {
	RunID  string
	Number int
}

// RunEvent is one append-only entry of a Run's history, ordered by Seq.
type RunEvent struct {
	RunID   string
	Seq     int64 // 1-based, gapless per run
	Type    run.EventType
	AtMs    int64
	Payload run.Payload // allow-listed tokens only (core/run)
}

// RunFilter selects runs for ListRuns, newest first. Empty fields do not
// filter.
type RunFilter struct {
	TaskID    string
	TriggerID string
	Statuses  []run.RunStatus
	Origin    RunOrigin // "" → any
	Limit     int       // 0 → DefaultPageSize; max MaxPageSize
	Cursor    string    // NextCursor of the previous page
}

// RunPage is one page of ListRuns.
type RunPage struct {
	Runs       []Run
	NextCursor string // "" when there is no further page
}

// ManualRun is the input of CreateManualRun.
type ManualRun struct {
	TaskID string
	// IdempotencyKey is the client's key: 1..128 printable ASCII bytes. The
	// same key returns the same run (Created=false); the same key for a
	// different task is a conflict. Empty means "always a new run".
	IdempotencyKey string
	RerunOf        string // optional: the run this one re-runs
}

// Claim is a run handed to the runner: the run moved to dispatching and its
// current attempt to starting, durably, before any process is spawned.
type Claim struct {
	Run      Run
	Attempt  Attempt
	Revision TaskRevision
}

// AttemptStart is what the runner records once the process exists.
type AttemptStart struct {
	PID         int
	PGID        int
	LogPath     string
	StartedAtMs int64
	ScriptTree  string // script tasks: core/scriptpath.TreeDigest of the folder it runs from
}

// AttemptResult ends an attempt. Status is one of succeeded, failed,
// timed_out, cancelled, lost.
type AttemptResult struct {
	Status       run.AttemptStatus
	ExitCode     *int
	ErrorClass   run.ErrorClass
	Message      string // truncated to 512 bytes
	LogSize      int64
	LogTruncated bool
	MaskedCount  int // secret occurrences masked in the log
	FinishedAtMs int64
	// NoRetry suppresses the retry policy (e.g. the attempt was replaced).
	NoRetry bool
	// Reason is recorded on the run when the attempt ends it (e.g.
	// ReasonShutdown for a cancelled attempt, "oom" for a failed one);
	// "" keeps the default (ReasonUserCancel for a cancel).
	Reason string
}

// FinishResult reports what FinishAttempt did to the run.
type FinishResult struct {
	Run     Run
	Attempt Attempt
	// Retry is the new attempt when the retry policy scheduled one (the run
	// is then retry_wait, also after a lost attempt, with NotBeforeMs).
	Retry *Attempt
}

// InFlight is an attempt that was starting or running, with its run; the
// runner reads these at startup to recover from a crash.
type InFlight struct {
	Run     Run
	Attempt Attempt
}

// Reasons recorded on runs and events.
const (
	SkipConcurrencyForbid = "concurrency_forbid"  // forbid policy: another run of the task was active
	ReasonReplaced        = "concurrency_replace" // replace policy: a newer run took over
	ReasonUserCancel      = "user"
	ReasonTaskDeleted     = "task_deleted"
	ReasonShutdown        = "shutdown" // ql3-edge stopped the attempt when it shut down (drain grace over)
)

// TaskStore is the publishing side used by the HTTP API and the CLI.
type TaskStore interface {
	CreateTask(ctx context.Context, in NewTask) (Task, error)
	// UpdateTask publishes a new revision if expectedRevision is still the
	// current one (errs.Conflict otherwise).
	UpdateTask(ctx context.Context, taskID string, expectedRevision int64, in TaskUpdate) (Task, error)
	// SetTaskEnabled enables or disables a task. Enabling resets the
	// schedules of its triggers (no retroactive fire for the disabled span).
	SetTaskEnabled(ctx context.Context, taskID string, enabled bool) (Task, error)
	// DeleteTask soft-deletes a task: history stays, triggers stop, queued
	// runs are cancelled (reason task_deleted), running ones finish.
	DeleteTask(ctx context.Context, taskID string) error
	GetTask(ctx context.Context, taskID string) (Task, error)
	// GetTaskByName finds a live task by name.
	GetTaskByName(ctx context.Context, name string) (Task, error)
	GetTaskRevision(ctx context.Context, taskID string, revision int64) (TaskRevision, error)
	ListTasks(ctx context.Context, f TaskFilter) (TaskPage, error)

	CreateTrigger(ctx context.Context, taskID string, in TriggerInput) (Trigger, error)
	// UpdateTrigger publishes a new trigger revision if expectedRevision is
	// current; the schedule is reset in the same transaction.
	UpdateTrigger(ctx context.Context, triggerID string, expectedRevision int64, in TriggerInput) (Trigger, error)
	DeleteTrigger(ctx context.Context, triggerID string) error
	GetTrigger(ctx context.Context, triggerID string) (Trigger, error)
	ListTriggers(ctx context.Context, taskID string) ([]Trigger, error)
}

// RunStore is the read and user-action side for runs.
//
// Admission (scheduled or manual) applies the pinned concurrency policy in
// the same transaction: forbid with another non-terminal run of the task
// (queued, dispatching, running, retry_wait) → the new run goes created →
// cancelled with run.skipped (reason concurrency_forbid) and is returned
// as such; replace → queued/retry_wait runs of the task are cancelled and
// dispatching/running ones get a cancel request (reason
// concurrency_replace, CancelRequested signalled); allow → nothing.
type RunStore interface {
	GetRun(ctx context.Context, runID string) (Run, error)
	ListRuns(ctx context.Context, f RunFilter) (RunPage, error)
	ListAttempts(ctx context.Context, runID string) ([]Attempt, error)
	GetAttempt(ctx context.Context, ref AttemptRef) (Attempt, error)
	// ListRunEvents returns events with Seq > afterSeq, up to limit (≤ MaxPageSize).
	ListRunEvents(ctx context.Context, runID string, afterSeq int64, limit int) ([]RunEvent, error)
	// CreateManualRun admits a run-now: queued run + claimed attempt +
	// run.created/run.queued events. created=false when the idempotency key
	// already named a run of the same task.
	CreateManualRun(ctx context.Context, in ManualRun) (r Run, created bool, err error)
	// RequestCancel cancels a queued/retry_wait/lost run at once, or marks an
	// active (dispatching/running) one cancel-requested and signals the
	// runner, which then finishes the attempt as cancelled. A finished run is
	// errs.Conflict.
	RequestCancel(ctx context.Context, runID string) (Run, error)
	// PruneRuns deletes up to limit (≤ MaxPruneBatch) runs that ended
	// before finishedBeforeMs (terminal, or lost without retry), with their
	// attempts and events, oldest first, and returns how many it deleted.
	// Task and trigger revisions stay. Retention keeps the database of a
	// busy every-second task from growing without bound; call it in
	// batches from a periodic sweep. Log files are the log store's job.
	PruneRuns(ctx context.Context, finishedBeforeMs int64, limit int) (deleted int, err error)
}

// MaxPruneBatch bounds one PruneRuns call (one write transaction).
const MaxPruneBatch = 500

// RunnerStore is the side used by edge/runner. nowMs is the runner's clock.
type RunnerStore interface {
	// ListDueRuns lists queued and retry_wait runs with NotBeforeMs ≤ nowMs,
	// oldest first, up to limit (≤ MaxPageSize). Read-only. A run whose
	// policy is forbid or replace is not listed while another run of its task
	// is dispatching or running (replace: the old one was asked to cancel at
	// admission and the new one starts once it has ended).
	ListDueRuns(ctx context.Context, nowMs int64, limit int) ([]Run, error)
	// NextDueAtMs is the earliest NotBeforeMs > nowMs of a queued/retry_wait
	// run (ok=false when there is none): when the runner must look again
	// without being signalled. Runs already due but held back by their
	// concurrency policy become listable when the blocking attempt finishes
	// (FinishAttempt signals RunsReady).
	NextDueAtMs(ctx context.Context, nowMs int64) (atMs int64, ok bool, err error)
	// ClaimRun moves a due run (queued or retry_wait, at expectedVersion) to
	// dispatching and its current attempt to starting, in one durable
	// transaction (synchronous=FULL) so a crash after spawning is never
	// mistaken for "never started". errs.Conflict if the run moved on.
	ClaimRun(ctx context.Context, runID string, expectedVersion int64, nowMs int64) (Claim, error)
	// SkipRun ends a due run without running it: run → cancelled with
	// Reason, attempt → cancelled, event run.cancelled (payload reason).
	// Admission already applies the forbid policy (created → cancelled with
	// run.skipped), so the runner needs this only for its own refusals.
	SkipRun(ctx context.Context, runID string, expectedVersion int64, reason string, nowMs int64) (Run, error)
	// MarkAttemptRunning records the spawned process: attempt starting →
	// running, run dispatching → running, event run.running.
	MarkAttemptRunning(ctx context.Context, ref AttemptRef, in AttemptStart) (Run, error)
	// FinishAttempt ends a starting/running attempt and moves the run: to the
	// matching terminal status, or — per the pinned retry policy, unless
	// cancel was requested or NoRetry — to retry_wait (failed/timed_out) or
	// lost → retry_wait (lost with retryOnLost) with a new claimed attempt not
	// before now+backoff. A lost attempt without retry leaves the run lost.
	// Commits durably (synchronous=FULL), like ClaimRun.
	FinishAttempt(ctx context.Context, ref AttemptRef, res AttemptResult) (FinishResult, error)
	// ListInFlight lists attempts in starting/running (crash recovery at
	// startup; also what is active now).
	ListInFlight(ctx context.Context) ([]InFlight, error)
	// ListCancelRequested lists active runs whose cancel was requested.
	ListCancelRequested(ctx context.Context) ([]Run, error)
	// UpdateAttemptLog records log size/truncation while an attempt runs.
	UpdateAttemptLog(ctx context.Context, ref AttemptRef, size int64, truncated bool) error
}

// ScheduleStore is the side used by edge/scheduler.
type ScheduleStore interface {
	// DueSchedules returns up to limit schedules of enabled triggers of
	// enabled, live tasks that are uninitialised or have NextFireAtMs ≤ nowMs.
	DueSchedules(ctx context.Context, nowMs int64, limit int) ([]ScheduleItem, error)
	// NextFireAtMs is the earliest NextFireAtMs over schedules DueSchedules
	// could return (ok=false when none); uninitialised ones count as nowMs.
	NextFireAtMs(ctx context.Context, nowMs int64) (atMs int64, ok bool, err error)
	// ApplyDecision writes one schedule decision in one transaction with a
	// compare-and-set on the item's StateVersion and TriggerRevision:
	// advances the cursor and, for Fire, admits the queued Run (+ claimed
	// Attempt + run.created/run.queued) under schedule.IdempotencyKey.
	// errs.Conflict when the row moved on (another scheduler, a publish).
	ApplyDecision(ctx context.Context, item ScheduleItem, d schedule.Decision, nowMs int64) (Admission, error)
	// ApplyDecisions writes a scheduler round's decisions together (ADR
	// 0065): each exactly as ApplyDecision would, with its own
	// compare-and-set and idempotency key, as one member of a group commit.
	// A member's failure (errs.Conflict, errs.NotFound) leaves the others
	// committed; results are in batch order and returned after the commit.
	ApplyDecisions(ctx context.Context, batch []Decided, nowMs int64) []DecisionResult
	// ParkSchedule deactivates a schedule that cannot be decided (reason is
	// kept in Schedule.LastError) so it does not hot-loop; compare-and-set
	// like ApplyDecision. A new trigger revision re-activates it.
	ParkSchedule(ctx context.Context, item ScheduleItem, reason string, nowMs int64) error
}

// Decided is one schedule and the decision taken for it.
type Decided struct {
	Item     ScheduleItem
	Decision schedule.Decision
}

// DecisionResult is one member's outcome in ApplyDecisions.
type DecisionResult struct {
	Admission Admission
	Err       error
}

// Admission reports the outcome of ApplyDecision.
type Admission struct {
	Schedule Schedule // the row after the write
	RunID    string   // the admitted run for Fire, "" otherwise
	Created  bool     // false when the idempotency key already existed
}

// Signals are coalescing in-process notifications sent after commit. Each
// channel has one consumer: RunsReady and CancelRequested the runner,
// SchedulesChanged the scheduler.
type Signals interface {
	RunsReady() <-chan struct{}        // a run became queued (admission, run-now, lost retry)
	CancelRequested() <-chan struct{}  // RequestCancel marked an active run
	SchedulesChanged() <-chan struct{} // a trigger/task publish reset or created a schedule
}

// Store is everything ql3-edge keeps durable.
type Store interface {
	TaskStore
	RunStore
	RunnerStore
	ScheduleStore
	Signals
	EventFeed
	FindStore
	Close() error
}

// AuditAppender writes audit lines for changes made outside the store's
// own transactions (the scripts folder, ADR 0044); they are listed with
// the env store's by ListAudit.
type AuditAppender interface {
	AppendAudit(ctx context.Context, a AuditEntry) error
}

// Audit actions of the scripts folder (ADR 0044): Target is the path.
const (
	AuditScriptWrite  = "script.write"
	AuditScriptCreate = "script.create"
	AuditScriptMkdir  = "script.mkdir"
	AuditScriptMove   = "script.move"
	AuditScriptDelete = "script.delete"
	AuditScriptUpload = "script.upload"
	AuditScriptRun    = "script.run"
)
