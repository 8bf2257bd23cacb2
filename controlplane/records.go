package controlplane

import (
	"encoding/json"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/schedule"
	"github.com/ql3/ql3/core/spec"
)

// Limits of every List method.
const (
	DefaultListLimit = 50
	MaxListLimit     = 200
)

// ListRequest asks for one page: Limit 0 means DefaultListLimit; Cursor is
// the NextCursor of the previous page ("" for the first).
type ListRequest struct {
	Limit  int
	Cursor string
}

// PageLimit is the request's limit: DefaultListLimit for 0, else 1..MaxListLimit.
func (r ListRequest) PageLimit() (int, error) {
	switch {
	case r.Limit == 0:
		return DefaultListLimit, nil
	case r.Limit < 1 || r.Limit > MaxListLimit:
		return 0, errs.Invalidf("limit", "must be 1..%d, got %d", MaxListLimit, r.Limit)
	}
	return r.Limit, nil
}

// ListPage is one page of a keyset-paginated list. NextCursor is "" on the last
// page.
type ListPage[T any] struct {
	Items      []T
	NextCursor string
}

// Project is the tenancy boundary. Nothing is scheduled for an archived one.
type Project struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	Version      int64  `json:"version"`
	CreatedAtMs  int64  `json:"createdAtMs"`
	UpdatedAtMs  int64  `json:"updatedAtMs"`
	ArchivedAtMs int64  `json:"archivedAtMs,omitempty"`
}

// ProjectInput creates a project.
type ProjectInput struct {
	MutationID string
	Name       string
}

// ArchiveProjectInput archives a project. ExpectedVersion, when not 0, must
// be the project's current version.
type ArchiveProjectInput struct {
	MutationID      string
	ProjectID       string
	ExpectedVersion int64
}

// Task is a task at its head revision.
type Task struct {
	ID                  string           `json:"id"`
	ProjectID           string           `json:"projectId"`
	Name                string           `json:"name"`
	Enabled             bool             `json:"enabled"`
	Revision            int64            `json:"revision"`
	Digest              canonjson.Digest `json:"digest"`
	ExecutionRevisionID string           `json:"executionRevisionId"`
	Spec                spec.Command     `json:"spec"`
	CreatedAtMs         int64            `json:"createdAtMs"`
	UpdatedAtMs         int64            `json:"updatedAtMs"`
	// Labels (core/find.CheckLabels) are not part of the revision.
	Labels []string `json:"labels,omitempty"`
	// Triggers are the triggers created with the task (TaskInput.Triggers);
	// empty otherwise (list them with ListTriggers).
	Triggers []Trigger `json:"triggers,omitempty"`
	// DeletedAtMs is set on the record DeleteTask returns; deleted tasks
	// are not found otherwise.
	DeletedAtMs int64 `json:"deletedAtMs,omitempty"`
}

// TaskInput creates (TaskID "") or updates a task. An update is a full
// replacement of name and spec and needs ExpectedRevision, the head
// revision it replaces.
type TaskInput struct {
	MutationID       string
	ProjectID        string // create only
	TaskID           string
	ExpectedRevision int64
	Name             string
	Enabled          *bool // nil: true on create, unchanged on update
	Spec             spec.Command
	// Triggers (create only, at most MaxInlineTriggers) are created in the
	// task's transaction, as on the edge: all of them or nothing. Their
	// TaskID, TriggerID, ExpectedRevision and MutationID must be empty.
	Triggers []TriggerInput
}

// TaskEnabledInput switches a task on or off without a new revision.
type TaskEnabledInput struct {
	MutationID string
	TaskID     string
	Enabled    bool
}

// Trigger is a cron trigger at its head revision, with its schedule row.
type Trigger struct {
	ID                  string                 `json:"id"`
	ProjectID           string                 `json:"projectId"`
	TaskID              string                 `json:"taskId"`
	Name                string                 `json:"name"`
	Revision            int64                  `json:"revision"`
	TaskRevision        int64                  `json:"taskRevision"`
	ExecutionRevisionID string                 `json:"executionRevisionId"`
	ExecutionDigest     canonjson.Digest       `json:"executionDigest"`
	Expression          string                 `json:"expression"`
	TimeZone            string                 `json:"timeZone"`
	Misfire             schedule.MisfirePolicy `json:"misfire"`
	GraceMs             int64                  `json:"graceMs"`
	Enabled             bool                   `json:"enabled"`
	ActivatedAtMs       int64                  `json:"activatedAtMs"`
	CreatedAtMs         int64                  `json:"createdAtMs"`
	UpdatedAtMs         int64                  `json:"updatedAtMs"`
	Schedule            Schedule               `json:"schedule"`
	// DeletedAtMs is set on the record DeleteTrigger returns; deleted
	// triggers are not found otherwise.
	DeletedAtMs int64 `json:"deletedAtMs,omitempty"`
}

// Schedule is the trigger's schedule row as the admin sees it. The
// claim token is never exposed; Claimed says whether a coordinator holds it.
type Schedule struct {
	TriggerRevision   int64 `json:"triggerRevision"`
	NextFireAtMs      int64 `json:"nextFireAtMs,omitempty"` // 0 until a coordinator initialised the cursor
	LastScheduledAtMs int64 `json:"lastScheduledAtMs,omitempty"`
	StateVersion      int64 `json:"stateVersion"`
	ClaimVersion      int64 `json:"claimVersion"`
	Claimed           bool  `json:"claimed"`
	UpdatedAtMs       int64 `json:"updatedAtMs"`
}

// TriggerInput creates (TriggerID "") or updates a trigger: a full
// replacement of its settings, pinned to the task's head revision.
type TriggerInput struct {
	MutationID       string
	TaskID           string // required on create; on update "" or the trigger's task
	TriggerID        string
	ExpectedRevision int64
	Name             string // "" on create: the trigger id; on update: unchanged
	Expression       string
	TimeZone         string                 // IANA name; "" means UTC
	Misfire          schedule.MisfirePolicy // "" means skip
	GraceMs          *int64                 // nil means the publisher's default
	Enabled          *bool                  // nil means true
}

// DeleteInput names what to delete. TaskID is required for a trigger too
// (a trigger under another task is not found).
type DeleteInput struct {
	MutationID string
	TaskID     string
	TriggerID  string
}

// Run is one occurrence, as read by the admin API.
type Run struct {
	ID        string `json:"id"`
	ProjectID string `json:"projectId"`
	TaskID    string `json:"taskId"`
	// TaskName is the task's current name, read in the run's own
	// statement (a primary-key lookup per row, ADR 0057).
	TaskName            string           `json:"taskName"`
	TaskRevision        int64            `json:"taskRevision"`
	ExecutionRevisionID string           `json:"executionRevisionId"`
	ExecutionDigest     canonjson.Digest `json:"executionDigest"`
	Origin              string           `json:"origin"`
	TriggerID           string           `json:"triggerId,omitempty"`
	TriggerRevision     int64            `json:"triggerRevision,omitempty"`
	RerunOf             string           `json:"rerunOf,omitempty"`
	IdempotencyKey      string           `json:"idempotencyKey"`
	ScheduledForMs      int64            `json:"scheduledForMs"`
	Priority            int              `json:"priority"`
	Status              string           `json:"status"`
	Version             int64            `json:"version"`
	AttemptCount        int              `json:"attemptCount"`
	MaxAttempts         int              `json:"maxAttempts"`
	NotBeforeMs         int64            `json:"notBeforeMs,omitempty"`
	RandomDelayMs       int64            `json:"randomDelayMs,omitempty"` // the occurrence's start delay (spec randomDelayMs)
	CancelRequestedAtMs int64            `json:"cancelRequestedAtMs,omitempty"`
	ErrorClass          string           `json:"errorClass,omitempty"`
	ErrorMessage        string           `json:"errorMessage,omitempty"`
	CreatedAtMs         int64            `json:"createdAtMs"`
	UpdatedAtMs         int64            `json:"updatedAtMs"`
	FinishedAtMs        int64            `json:"finishedAtMs,omitempty"`
	// ExitCode is the latest Attempt's exit code (none before it exits,
	// or when it was killed by a signal), in lists too.
	ExitCode *int      `json:"exitCode,omitempty"`
	Attempts []Attempt `json:"attempts,omitempty"`
}

// Attempt is one try of a Run.
type Attempt struct {
	ID           string `json:"id"`
	Number       int    `json:"number"`
	Status       string `json:"status"`
	WorkerID     string `json:"workerId,omitempty"`
	SessionID    string `json:"sessionId,omitempty"`
	ExitCode     *int   `json:"exitCode,omitempty"`
	ErrorClass   string `json:"errorClass,omitempty"`
	Message      string `json:"message,omitempty"`
	CreatedAtMs  int64  `json:"createdAtMs"`
	StartedAtMs  int64  `json:"startedAtMs,omitempty"`
	FinishedAtMs int64  `json:"finishedAtMs,omitempty"`
	// MaskedCount: occurrences of env values the worker masked in the
	// attempt's output (ADR 0051).
	MaskedCount int64 `json:"maskedCount,omitempty"`
}

// RunEvent is one entry of a Run's history.
type RunEvent struct {
	Seq     int64           `json:"seq"`
	Type    string          `json:"type"`
	Attempt int             `json:"attempt,omitempty"`
	AtMs    int64           `json:"atMs"`
	Payload json.RawMessage `json:"payload"`
}

// RunListFilter selects runs, newest first.
type RunListFilter struct {
	ProjectID string
	TaskID    string
	TriggerID string
	Statuses  []string
	Origin    string // cron | manual | rerun; "" → any
	Page      ListRequest
}
