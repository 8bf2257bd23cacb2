package adminapi

import (
	"encoding/json"

	"github.com/ql3/ql3/controlplane"
)

// Wire types of /api/v1. Times are epoch milliseconds, ids are UUID strings,
// digests "sha256:<hex>". Every publication body takes an optional
// mutationId (1..128 of A-Z a-z 0-9 . _ : -) for idempotent retries.

// CreateProjectRequest is the body of POST /api/v1/projects.
type CreateProjectRequest struct {
	MutationID string `json:"mutationId,omitempty"`
	Name       string `json:"name"`
}

// ArchiveProjectRequest is the optional body of POST .../archive.
// ExpectedVersion, when set, must be the project's version.
type ArchiveProjectRequest struct {
	MutationID      string `json:"mutationId,omitempty"`
	ExpectedVersion int64  `json:"expectedVersion,omitempty"`
}

// CreateTaskRequest is the body of POST /api/v1/tasks. Project is the
// project's id or name; Spec is a qinglong/command@v1 document whose
// omitted fields take their defaults.
type CreateTaskRequest struct {
	MutationID string          `json:"mutationId,omitempty"`
	Project    string          `json:"project"`
	Name       string          `json:"name"`
	Enabled    *bool           `json:"enabled,omitempty"` // default true
	Spec       json.RawMessage `json:"spec"`
	// Triggers are created with the task, in its transaction (as on the
	// edge); at most 16. Their mutationId must be empty.
	Triggers []TriggerRequest `json:"triggers,omitempty"`
	// Labels (at most 16, 1..32 characters, no comma) are set after the
	// task is created; they are not part of its revision.
	Labels []string `json:"labels,omitempty"`
}

// UpdateTaskRequest is the body of PUT /api/v1/tasks/{task}: a full
// replacement of name and spec, accepted only while ExpectedRevision is the
// task's head revision (409 otherwise). Every trigger of the task moves to
// the new revision, its schedule reset.
type UpdateTaskRequest struct {
	MutationID       string          `json:"mutationId,omitempty"`
	ExpectedRevision int64           `json:"expectedRevision"`
	Name             string          `json:"name"`
	Enabled          *bool           `json:"enabled,omitempty"` // default: unchanged
	Spec             json.RawMessage `json:"spec"`
	// Labels, when present, replace the task's labels.
	Labels *[]string `json:"labels,omitempty"`
}

// PatchTaskRequest is the body of PATCH /api/v1/tasks/{task}.
type PatchTaskRequest struct {
	MutationID string    `json:"mutationId,omitempty"`
	Enabled    *bool     `json:"enabled"`
	Labels     *[]string `json:"labels,omitempty"` // replace the labels
}

// EnableRequest is the optional body of POST .../enable and .../disable.
type EnableRequest struct {
	MutationID string `json:"mutationId,omitempty"`
}

// TriggerRequest is the body of POST /api/v1/tasks/{task}/triggers.
type TriggerRequest struct {
	MutationID string `json:"mutationId,omitempty"`
	Name       string `json:"name,omitempty"`     // default: the trigger id
	Expression string `json:"expression"`         // 5 or 6 fields, or @hourly-style
	TimeZone   string `json:"timeZone,omitempty"` // IANA name; default UTC
	Misfire    string `json:"misfire,omitempty"`  // skip (default) | fire_once
	GraceMs    *int64 `json:"graceMs,omitempty"`  // default 30000, max 300000
	Enabled    *bool  `json:"enabled,omitempty"`  // default true
}

// UpdateTriggerRequest is the body of PUT .../triggers/{trigger}: a full
// replacement, accepted only at ExpectedRevision.
type UpdateTriggerRequest struct {
	ExpectedRevision int64 `json:"expectedRevision"`
	TriggerRequest
}

// RegisterWorkerRequest is the body of POST /api/v1/workers.
type RegisterWorkerRequest struct {
	Name        string `json:"name"`
	TLSIdentity string `json:"tlsIdentity,omitempty"` // the client certificate identity bound to it
}

// RotateCredentialsRequest is the optional body of .../credentials/rotate.
// The new credential supersedes the others: they stay valid until the
// worker presents the new one, and at most GraceMs (default 24 h, max 7
// days). An explicit 0 revokes them at once (a compromised credential).
type RotateCredentialsRequest struct {
	GraceMs *int64 `json:"graceMs,omitempty"`
}

// IssuedCredential is a new worker credential with its text
// (ql3w_<id>_<secret>), which appears in this response only.
type IssuedCredential struct {
	controlplane.WorkerCredential
	Credential string `json:"credential"`
}

// Records as this API returns them: the control plane's records (same
// fields, same JSON; a conversion costs nothing) under the names of this
// API's document. The views below embed them.
type (
	ProjectRecord  controlplane.Project
	TaskRecord     controlplane.Task
	TriggerRecord  controlplane.Trigger
	ScheduleRecord controlplane.Schedule
	RunRecord      controlplane.Run
	AttemptRecord  controlplane.Attempt
	RunEventRecord controlplane.RunEvent
	WorkerRecord   controlplane.Worker
)

// Task is a task at its head revision, with its triggers on get.
type Task struct {
	TaskRecord
	Triggers []Trigger `json:"triggers,omitempty"`
}

// Trigger is a trigger with its schedule. NextFireAtMs and
// LastScheduledAtMs are also given flat, as the edge API does.
type Trigger struct {
	TriggerRecord
	NextFireAtMs      int64 `json:"nextFireAtMs,omitempty"`
	LastScheduledAtMs int64 `json:"lastScheduledAtMs,omitempty"`
}

func triggerView(t controlplane.Trigger) Trigger {
	v := Trigger{TriggerRecord: TriggerRecord(t), LastScheduledAtMs: t.Schedule.LastScheduledAtMs}
	if t.Schedule.TriggerRevision == t.Revision {
		v.NextFireAtMs = t.Schedule.NextFireAtMs
	}
	return v
}
