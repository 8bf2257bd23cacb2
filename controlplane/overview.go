package controlplane

import "context"

// Overview is the control plane's overview (ADR 0050's shape, ADR 0057):
// live tasks, runs not finished by status, runs that finished since
// SinceMs by status, the failures of that window (count and the newest
// OverviewFailures with their tasks' names), the earliest next fires and
// the workers online. Times are the database's.
type Overview struct {
	NowMs     int64            `json:"nowMs"`
	SinceMs   int64            `json:"sinceMs"`
	Tasks     OverviewTasks    `json:"tasks"`
	Runs      OverviewRuns     `json:"runs"`
	Failures  OverviewFailures `json:"failures"`
	NextFires []NextFire       `json:"nextFires"`
	Workers   OverviewWorkers  `json:"workers"`
}

// OverviewTasks counts live tasks.
type OverviewTasks struct {
	Total    int64 `json:"total"`
	Enabled  int64 `json:"enabled"`
	Disabled int64 `json:"disabled"`
}

// OverviewRuns counts runs by status.
type OverviewRuns struct {
	Active  map[string]int64 `json:"active"`
	Last24h map[string]int64 `json:"last24h"`
}

// OverviewFailures are the runs that failed, timed out or were lost in the
// window.
type OverviewFailures struct {
	Count  int64 `json:"count"`
	Recent []Run `json:"recent"`
}

// NextFire is one upcoming occurrence.
type NextFire struct {
	AtMs       int64  `json:"atMs"`
	TaskID     string `json:"taskId"`
	TaskName   string `json:"taskName"`
	TriggerID  string `json:"triggerId"`
	Expression string `json:"expression"`
	TimeZone   string `json:"timeZone"`
}

// OverviewWorkers counts registered (not disabled) workers and those with
// a live session.
type OverviewWorkers struct {
	Online int64 `json:"online"`
	Total  int64 `json:"total"`
}

// Bounds of the overview.
const (
	OverviewFailureRows = 10
	OverviewFireRows    = 10
	OverviewWindowMs    = 24 * 60 * 60 * 1000
)

// Overviews reads the overview of one project ("" for all) (admin role).
type Overviews interface {
	Overview(ctx context.Context, projectID string) (Overview, error)
}
