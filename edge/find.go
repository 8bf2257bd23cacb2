package edge

import (
	"context"

	"github.com/ql3/ql3/core/find"
	"github.com/ql3/ql3/core/spec"
)

// Findable at scale (ADR 0050): labels on tasks, the search text a task
// search looks in, saved task filters ("views") and the overview.

// Limits of labels and searches (core/find's).
const (
	MaxTaskLabels  = find.MaxTaskLabels  // labels per task
	MaxLabelChars  = find.MaxLabelChars  // characters per label
	MaxSearchChars = find.MaxSearchChars // characters of a search
	MaxViews       = find.MaxViews       // saved views
	// OverviewFailures and OverviewFires bound the overview's lists.
	OverviewFailures = 10
	OverviewFires    = 10
	// OverviewWindowMs is the overview's "recent": the last 24 hours.
	OverviewWindowMs = 24 * 60 * 60 * 1000
)

// CheckLabels validates a task's labels (find.CheckLabels: one copy for
// both binaries).
func CheckLabels(labels []string) ([]string, error) { return find.CheckLabels(labels) }

// FoldSearch, CommandText, SearchText and CheckSearch are core/find's
// (one copy for the edge and the control plane, ADR 0057). Migration 0007
// computes the same search text for tasks stored before it.
func FoldSearch(s string) string { return find.Fold(s) }

// CommandText is the command a search looks in (find.CommandText).
func CommandText(c spec.Command) string { return find.CommandText(c) }

// SearchText is what a task search looks in (find.Text).
func SearchText(name string, c spec.Command, labels []string) string {
	return find.Text(name, c, labels)
}

// CheckSearch validates a search and returns the form it is matched in
// (find.CheckSearch).
func CheckSearch(field, q string) (string, error) { return find.CheckSearch(field, q) }

// View is a saved task filter.
type View struct {
	ID          string
	Name        string
	Filter      ViewFilter
	CreatedAtMs int64
}

// ViewFilter is what a view selects (find.ViewFilter).
type ViewFilter = find.ViewFilter

// CheckView validates a view to save and returns it normalized
// (find.CheckView).
func CheckView(name string, f ViewFilter) (string, ViewFilter, error) { return find.CheckView(name, f) }

// Overview is the state of the edge at a glance.
type Overview struct {
	NowMs, SinceMs int64
	Tasks          TaskCounts
	Active         map[string]int64 // non-terminal runs by status
	Recent         map[string]int64 // runs that finished since SinceMs, by status
	FailureCount   int64            // failed, timed_out or lost since SinceMs
	Failures       []Run            // the newest of them (OverviewFailures), with TaskName
	NextFires      []NextFire       // the earliest next fires (OverviewFires)
}

// TaskCounts counts live tasks.
type TaskCounts struct {
	Total, Enabled int64
}

// NextFire is a trigger's next occurrence with its task's name.
type NextFire struct {
	TaskID, TaskName, TriggerID string
	Expression, TimeZone        string
	AtMs                        int64
}

// FindStore is the findable side: labels, views and the overview.
type FindStore interface {
	// SetTaskLabels replaces a live task's labels (no new revision).
	SetTaskLabels(ctx context.Context, taskID string, labels []string) (Task, error)
	ListViews(ctx context.Context) ([]View, error)
	CreateView(ctx context.Context, name string, f ViewFilter) (View, error)
	DeleteView(ctx context.Context, id string) error
	Overview(ctx context.Context, nowMs int64) (Overview, error)
	// LastRuns returns the newest run of each task of taskIDs that has one
	// (one query for a page of tasks).
	LastRuns(ctx context.Context, taskIDs []string) (map[string]Run, error)
	// TriggersOf lists the live triggers of each task of taskIDs (one
	// query for a page of tasks).
	TriggersOf(ctx context.Context, taskIDs []string) (map[string][]Trigger, error)
}
