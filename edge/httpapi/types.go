package httpapi

import (
	"encoding/json"

	"github.com/ql3/ql3/core/cron"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/httpkit"
)

// Wire types of the /api/v1 JSON API. Times are epoch milliseconds, ids are
// strings. The CLI decodes the same types.

// CreateTaskRequest is the body of POST /api/v1/tasks. Spec is a
// qinglong/command@v1 document (core/spec); omitted spec fields take their
// defaults. Triggers are created with the task; every one of them is
// validated before anything is written.
type CreateTaskRequest struct {
	Name     string           `json:"name"`
	Enabled  *bool            `json:"enabled,omitempty"` // default true
	Labels   []string         `json:"labels,omitempty"`  // at most 16, each 1..32 characters, no comma
	Spec     json.RawMessage  `json:"spec"`
	Triggers []TriggerRequest `json:"triggers,omitempty"`
}

// UpdateTaskRequest is the body of PUT /api/v1/tasks/{task}: a full
// replacement of name and spec, accepted only while ExpectedRevision is the
// task's current revision (409 otherwise).
type UpdateTaskRequest struct {
	ExpectedRevision int64           `json:"expectedRevision"`
	Name             string          `json:"name"`
	Spec             json.RawMessage `json:"spec"`
	// Labels, when present, replace the task's labels (no new revision
	// for labels alone); absent keeps them.
	Labels *[]string `json:"labels,omitempty"`
}

// PatchTaskRequest is the body of PATCH /api/v1/tasks/{task}.
type PatchTaskRequest struct {
	Enabled *bool     `json:"enabled,omitempty"`
	Labels  *[]string `json:"labels,omitempty"` // replaces the labels
}

// TriggerRequest is the body of POST /api/v1/tasks/{task}/triggers and an
// element of CreateTaskRequest.Triggers.
type TriggerRequest struct {
	Expression string `json:"expression"`         // 5 or 6 fields, or @hourly-style
	TimeZone   string `json:"timeZone,omitempty"` // IANA name; default UTC
	Misfire    string `json:"misfire,omitempty"`  // skip (default) | fire_once
	GraceMs    int64  `json:"graceMs,omitempty"`  // default 30000, max 300000
	Enabled    *bool  `json:"enabled,omitempty"`  // default true
}

// UpdateTriggerRequest is the body of PUT .../triggers/{trigger}.
type UpdateTriggerRequest struct {
	ExpectedRevision int64 `json:"expectedRevision"`
	TriggerRequest
}

// RunNowRequest is the optional body of POST /api/v1/tasks/{task}/runs.
// The Idempotency-Key header, when present, takes precedence over the body.
type RunNowRequest struct {
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	RerunOf        string `json:"rerunOf,omitempty"`
}

// Task is a task with its current revision's spec.
type Task struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	Enabled     bool         `json:"enabled"`
	Labels      []string     `json:"labels,omitempty"`
	Revision    int64        `json:"revision"`
	Digest      string       `json:"digest"`
	Spec        spec.Command `json:"spec"`
	CreatedAtMs int64        `json:"createdAtMs"`
	UpdatedAtMs int64        `json:"updatedAtMs"`
	DeletedAtMs int64        `json:"deletedAtMs,omitempty"`
	Triggers    []Trigger    `json:"triggers,omitempty"` // on create, get and list
	LastRun     *Run         `json:"lastRun,omitempty"`  // on list: the task's newest run
}

// Trigger is a trigger with its schedule cursor.
type Trigger struct {
	ID                string `json:"id"`
	TaskID            string `json:"taskId"`
	Revision          int64  `json:"revision"`
	Expression        string `json:"expression"`
	TimeZone          string `json:"timeZone"`
	Misfire           string `json:"misfire"`
	GraceMs           int64  `json:"graceMs"`
	Enabled           bool   `json:"enabled"`
	CreatedAtMs       int64  `json:"createdAtMs"`
	UpdatedAtMs       int64  `json:"updatedAtMs"`
	NextFireAtMs      int64  `json:"nextFireAtMs,omitempty"` // 0 until the scheduler initialised the cursor
	LastScheduledAtMs int64  `json:"lastScheduledAtMs,omitempty"`
	MissedTotal       int64  `json:"missedTotal,omitempty"`
}

// Run is one occurrence of a task.
type Run struct {
	ID                  string    `json:"id"`
	TaskID              string    `json:"taskId"`
	TaskName            string    `json:"taskName,omitempty"` // the task's current name (lists and get)
	TaskRevision        int64     `json:"taskRevision"`
	Origin              string    `json:"origin"`
	TriggerID           string    `json:"triggerId,omitempty"`
	TriggerRevision     int64     `json:"triggerRevision,omitempty"`
	RerunOf             string    `json:"rerunOf,omitempty"`
	IdempotencyKey      string    `json:"idempotencyKey"`
	ScheduledForMs      int64     `json:"scheduledForMs"`
	Status              string    `json:"status"`
	Version             int64     `json:"version"`
	AttemptCount        int       `json:"attemptCount"`
	MaxAttempts         int       `json:"maxAttempts"`
	NotBeforeMs         int64     `json:"notBeforeMs,omitempty"`
	RandomDelayMs       int64     `json:"randomDelayMs,omitempty"` // the spec's randomDelayMs drawn for this occurrence (in notBeforeMs)
	Concurrency         string    `json:"concurrency"`
	CancelRequestedAtMs int64     `json:"cancelRequestedAtMs,omitempty"`
	Reason              string    `json:"reason,omitempty"`
	ErrorClass          string    `json:"errorClass,omitempty"`
	ExitCode            *int      `json:"exitCode,omitempty"`
	CreatedAtMs         int64     `json:"createdAtMs"`
	UpdatedAtMs         int64     `json:"updatedAtMs"`
	FinishedAtMs        int64     `json:"finishedAtMs,omitempty"`
	Attempts            []Attempt `json:"attempts,omitempty"` // on get
	// Created is set on run-now: false when the idempotency key named an
	// existing run.
	Created *bool `json:"created,omitempty"`
}

// Attempt is one try of a run.
type Attempt struct {
	Number       int    `json:"number"`
	Status       string `json:"status"`
	PID          int    `json:"pid,omitempty"`
	CreatedAtMs  int64  `json:"createdAtMs"`
	StartedAtMs  int64  `json:"startedAtMs,omitempty"`
	FinishedAtMs int64  `json:"finishedAtMs,omitempty"`
	ExitCode     *int   `json:"exitCode,omitempty"`
	ErrorClass   string `json:"errorClass,omitempty"`
	Message      string `json:"message,omitempty"`
	LogSize      int64  `json:"logSize"`
	LogTruncated bool   `json:"logTruncated,omitempty"`
	MaskedCount  int    `json:"maskedCount,omitempty"` // env values replaced by *** in the log
	ScriptTree   string `json:"scriptTree,omitempty"`  // script tasks: tree digest of the script's folder it started from
}

// RunEvent is one entry of a run's history.
type RunEvent struct {
	Seq     int64       `json:"seq"`
	Type    string      `json:"type"`
	AtMs    int64       `json:"atMs"`
	Payload run.Payload `json:"payload"`
}

// List is the envelope of every list response. NextCursor is "" on the
// last page; pass it back as ?cursor= for the next one.
type List[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// listOf maps a page of stored items to their API views.
func listOf[S, T any](items []S, next string, view func(S) T) List[T] {
	out := List[T]{Items: make([]T, 0, len(items)), NextCursor: next}
	for _, it := range items {
		out.Items = append(out.Items, view(it))
	}
	return out
}

// Health is the body of /healthz and /readyz.
type Health struct {
	Status  string `json:"status"` // ok | unavailable
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
	// Containment (readyz) says how attempts are contained: per-attempt
	// cgroups and which, or none (ADR 0041).
	Containment string `json:"containment,omitempty"`
}

// taskView maps a task and its triggers; nowMs (0: unknown) lets a
// trigger the scheduler has not initialised yet show the next fire it will
// get, when the task is enabled.
func taskView(t edge.Task, triggers []edge.Trigger, nowMs int64) Task {
	v := Task{
		ID: t.ID, Name: t.Name, Enabled: t.Enabled, Labels: t.Labels, Revision: t.Revision,
		Digest: t.Digest.String(), Spec: t.Spec,
		CreatedAtMs: t.CreatedAtMs, UpdatedAtMs: t.UpdatedAtMs, DeletedAtMs: t.DeletedAtMs,
	}
	if !t.Enabled || t.Deleted() {
		nowMs = 0
	}
	for _, tr := range triggers {
		v.Triggers = append(v.Triggers, triggerView(tr, nowMs))
	}
	return v
}

// triggerView maps a trigger. Until the scheduler initialises the cursor
// (milliseconds after a publish) NextFireAtMs is what that initialisation
// computes — the first occurrence after max(now, the revision's
// activation), schedule.Decide's Init — so `task add` does not print
// "NEXT FIRE -"; nowMs 0 leaves it empty.
func triggerView(t edge.Trigger, nowMs int64) Trigger {
	v := Trigger{
		ID: t.ID, TaskID: t.TaskID, Revision: t.Revision, Expression: t.Expression,
		TimeZone: t.TimeZone, Misfire: string(t.Misfire), GraceMs: t.GraceMs, Enabled: t.Enabled,
		CreatedAtMs: t.CreatedAtMs, UpdatedAtMs: t.UpdatedAtMs,
		LastScheduledAtMs: t.Schedule.LastScheduledAtMs, MissedTotal: t.Schedule.MissedTotal,
	}
	switch {
	case t.Schedule.Initialized && t.Schedule.TriggerRevision == t.Revision:
		v.NextFireAtMs = t.Schedule.NextFireAtMs
	case nowMs > 0 && t.Enabled && t.Schedule.LastError == "":
		if loc, err := edge.LoadZone(t.TimeZone); err == nil {
			if c, err := cron.Parse(t.Expression, loc); err == nil {
				if next, err := c.NextMs(max(nowMs, t.UpdatedAtMs)); err == nil {
					v.NextFireAtMs = next
				}
			}
		}
	}
	return v
}

func runView(r edge.Run, attempts []edge.Attempt) Run {
	v := Run{
		ID: r.ID, TaskID: r.TaskID, TaskName: r.TaskName, TaskRevision: r.TaskRevision, Origin: string(r.Origin),
		TriggerID: r.TriggerID, TriggerRevision: r.TriggerRevision, RerunOf: r.RerunOf,
		IdempotencyKey: r.IdempotencyKey, ScheduledForMs: r.ScheduledForMs, Status: string(r.Status),
		Version: r.Version, AttemptCount: r.AttemptCount, MaxAttempts: r.MaxAttempts,
		NotBeforeMs: r.NotBeforeMs, RandomDelayMs: r.RandomDelayMs, Concurrency: string(r.Concurrency),
		CancelRequestedAtMs: r.CancelRequestedAtMs, Reason: r.Reason, ErrorClass: string(r.ErrorClass),
		ExitCode: r.ExitCode, CreatedAtMs: r.CreatedAtMs, UpdatedAtMs: r.UpdatedAtMs, FinishedAtMs: r.FinishedAtMs,
	}
	for _, a := range attempts {
		v.Attempts = append(v.Attempts, attemptView(a))
	}
	return v
}

func attemptView(a edge.Attempt) Attempt {
	return Attempt{
		Number: a.Number, Status: string(a.Status), PID: a.PID, CreatedAtMs: a.CreatedAtMs,
		StartedAtMs: a.StartedAtMs, FinishedAtMs: a.FinishedAtMs, ExitCode: a.ExitCode,
		ErrorClass: string(a.ErrorClass), Message: a.Message, LogSize: a.LogSize, LogTruncated: a.LogTruncated, MaskedCount: a.MaskedCount,
		ScriptTree: a.ScriptTree,
	}
}

func eventView(e edge.RunEvent) RunEvent {
	return RunEvent{Seq: e.Seq, Type: string(e.Type), AtMs: e.AtMs, Payload: e.Payload}
}

// ErrorBody is the JSON shape of every error response (the admin API's
// too: httpkit.ErrorBody, core/errs.Body).
type ErrorBody = httpkit.ErrorBody
