package controlplane

import "context"

// Task labels, the task list's filters with its total, and saved views
// (ADR 0050's contract on the control plane, ADR 0057). The rules
// (label and view checks, the search text) are core/find's.

// TaskFilter selects the task list: a project ("" for every project), a
// search Q (name, command or label substring; core/find.CheckSearch), one
// Label exactly, Enabled (nil: both), keyset-paged by task id.
type TaskFilter struct {
	ProjectID string
	Q         string
	Label     string
	Enabled   *bool
	Page      ListRequest
}

// TaskPage is a page of the task list and how many tasks the filter
// selects in all.
type TaskPage struct {
	Items      []Task
	NextCursor string
	Total      int64
}

// TaskViewFilter is what a saved view selects ("" for no filter).
type TaskViewFilter struct {
	Q       string `json:"q,omitempty"`
	Label   string `json:"label,omitempty"`
	Enabled string `json:"enabled,omitempty"` // "true" | "false"
}

// TaskView is a saved task filter of a project.
type TaskView struct {
	ID          string         `json:"id"`
	ProjectID   string         `json:"projectId"`
	Name        string         `json:"name"`
	Filter      TaskViewFilter `json:"filter"`
	CreatedAtMs int64          `json:"createdAtMs"`
}

// TaskFinding is the findable side of the task list (admin role): the
// filtered page with its total, labels (not part of a task's revision;
// a change writes an audit line) and a project's saved views (at most
// core/find.MaxViews per project).
type TaskFinding interface {
	FindTaskPage(ctx context.Context, f TaskFilter) (TaskPage, error)
	SetTaskLabels(ctx context.Context, taskID string, labels []string) (Task, error)
	ListTaskViews(ctx context.Context, projectID string) ([]TaskView, error)
	CreateTaskView(ctx context.Context, projectID, name string, f TaskViewFilter) (TaskView, error)
	DeleteTaskView(ctx context.Context, viewID string) error
}
