// Package qlopen is the pure half of QingLong's Open API as ql3 speaks it
// (ADR 0048, ADR 0057): the envelope, a cron row ↔ a ql3 task and its
// triggers, and the checks of a cron body. ql3-edge and ql3-control both
// use this one copy; the I/O (stores, numeric ids, audit) stays with them.
package qlopen

import (
	"strconv"
	"strings"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/names"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
)

// TokenTTL is how long an app token lives (QingLong: 30 days).
const TokenTTL = 30 * 24 * time.Hour

// Failed GET /open/auth/token requests are counted per peer address:
// after TokenFailMax in TokenFailWindow the route answers 429 until the
// window ends (QingLong has no limit; ADR 0048).
const (
	TokenFailMax    = 10
	TokenFailWindow = 10 * time.Minute
)

// Envelope is QingLong's answer shape.
type Envelope struct {
	Code    int    `json:"code"`
	Data    any    `json:"data,omitempty"`
	Message string `json:"message,omitempty"`
}

// Token is data of a successful GET /open/auth/token.
type Token struct {
	Token      string `json:"token"`
	TokenType  string `json:"token_type"`
	Expiration int64  `json:"expiration"` // epoch seconds
}

// Cron is QingLong's cron row (back/data/cron.ts) for a ql3 task:
// command is the task's shell command, schedule its oldest trigger's
// expression and extra_schedules the others. status 0 running, 1 idle,
// 3 queued; isDisabled mirrors the task's switch. Times of the last run
// are epoch seconds (last_execution_time, its start) and seconds
// (last_running_time, its duration), as QingLong keeps them.
type Cron struct {
	ID                     int64      `json:"id"`
	Name                   string     `json:"name"`
	Command                string     `json:"command"`
	Schedule               string     `json:"schedule"`
	Timestamp              string     `json:"timestamp"`
	Saved                  bool       `json:"saved"`
	Status                 int        `json:"status"`
	IsSystem               int        `json:"isSystem"`
	Pid                    *int       `json:"pid"`
	IsDisabled             int        `json:"isDisabled"`
	LogPath                string     `json:"log_path"`
	IsPinned               int        `json:"isPinned"`
	Labels                 []string   `json:"labels"`
	LastRunningTime        int64      `json:"last_running_time"`
	LastExecutionTime      int64      `json:"last_execution_time"`
	SubID                  *int64     `json:"sub_id"`
	ExtraSchedules         []Schedule `json:"extra_schedules"`
	TaskBefore             *string    `json:"task_before"`
	TaskAfter              *string    `json:"task_after"`
	LogName                *string    `json:"log_name"`
	AllowMultipleInstances int        `json:"allow_multiple_instances"`
	WorkDir                *string    `json:"work_dir"`
	CreatedAt              string     `json:"createdAt"`
	UpdatedAt              string     `json:"updatedAt"`
}

// Schedule is one element of extra_schedules.
type Schedule struct {
	Schedule string `json:"schedule"`
}

// CronInput is the body of POST and PUT /open/crons: QingLong's
// commonCronSchema (back/validation/schedule.ts) plus id on PUT. Fields
// ql3 cannot express are refused when set, never dropped.
type CronInput struct {
	ID                     int64      `json:"id,omitempty"`
	Name                   string     `json:"name"`
	Command                string     `json:"command"`
	Schedule               string     `json:"schedule"`
	Labels                 []string   `json:"labels"`
	SubID                  *int64     `json:"sub_id"`
	ExtraSchedules         []Schedule `json:"extra_schedules"`
	TaskBefore             *string    `json:"task_before"`
	TaskAfter              *string    `json:"task_after"`
	LogName                *string    `json:"log_name"`
	AllowMultipleInstances *int       `json:"allow_multiple_instances"`
	WorkDir                *string    `json:"work_dir"`
}

// CronPage is data of GET /open/crons.
type CronPage struct {
	Data  []Cron `json:"data"`
	Total int    `json:"total"`
}

// TaskView is what a cron row is made of: a task, its trigger
// expressions oldest first, and its newest run (Last nil when none).
type TaskView struct {
	Num         int64
	Name        string
	Spec        spec.Command
	Enabled     bool
	CreatedAtMs int64
	UpdatedAtMs int64
	Schedules   []string
	Last        *LastRun
}

// LastRun is the newest run of a task as a cron row shows it.
type LastRun struct {
	Status       run.RunStatus
	CreatedAtMs  int64
	FinishedAtMs int64
}

// CronOf makes the row of a task.
func CronOf(v TaskView) Cron {
	c := Cron{ID: v.Num, Name: v.Name, Command: TaskCommand(v.Spec), Status: 1, Labels: []string{},
		ExtraSchedules: []Schedule{}, Saved: true, Timestamp: Stamp(v.UpdatedAtMs),
		CreatedAt: Time(v.CreatedAtMs), UpdatedAt: Time(v.UpdatedAtMs)}
	for i, e := range v.Schedules {
		if i == 0 {
			c.Schedule = e
		} else {
			c.ExtraSchedules = append(c.ExtraSchedules, Schedule{Schedule: e})
		}
	}
	if !v.Enabled {
		c.IsDisabled = 1
	}
	if v.Spec.Concurrency == spec.ConcurrencyAllow {
		c.AllowMultipleInstances = 1
	}
	if l := v.Last; l != nil {
		c.Status = CronStatus(l.Status)
		c.LastExecutionTime = l.CreatedAtMs / 1000
		if l.FinishedAtMs != 0 {
			c.LastRunningTime = (l.FinishedAtMs - l.CreatedAtMs) / 1000
		}
	}
	return c
}

// CronStatus is QingLong's status of a cron whose newest run is in st:
// 0 running, 3 queued, 1 idle.
func CronStatus(st run.RunStatus) int {
	switch st {
	case run.RunRunning, run.RunDispatching:
		return 0
	case run.RunCreated, run.RunQueued, run.RunRetryWait:
		return 3
	}
	return 1
}

// ActiveStatuses are the run states QingLong calls running or queued
// (what PUT /open/crons/stop cancels).
var ActiveStatuses = []run.RunStatus{run.RunCreated, run.RunQueued, run.RunDispatching, run.RunRunning, run.RunRetryWait}

// TaskCommand is what the Open API shows as a task's command: a shell
// spec's command, an argv spec's words joined by spaces.
func TaskCommand(c spec.Command) string {
	switch {
	case c.Shell != nil:
		return c.Shell.Command
	case c.Argv != nil:
		return strings.Join(append([]string{c.Argv.File}, c.Argv.Args...), " ")
	}
	return ""
}

// CheckCronInput refuses what a ql3 task cannot express and returns the
// schedules in order (schedule first); maxTriggers bounds them.
func CheckCronInput(in CronInput, maxTriggers int) ([]string, error) {
	refuse := func(field, why string) error { return errs.Invalidf(field, "ql3 cannot express this: %s", why) }
	switch {
	case strings.TrimSpace(in.Command) == "":
		return nil, errs.Invalidf("command", "is required")
	case strings.TrimSpace(in.Schedule) == "":
		return nil, errs.Invalidf("schedule", "is required")
	case strings.HasPrefix(in.Schedule, "@once") || strings.HasPrefix(in.Schedule, "@boot"):
		return nil, refuse("schedule", "@once and @boot tasks have no ql3 trigger; use run now")
	case len(in.Labels) > 0:
		return nil, refuse("labels", "labels are not set through the Open API's crons")
	case in.SubID != nil:
		return nil, refuse("sub_id", "subscriptions are not served by the Open API")
	case in.TaskBefore != nil && *in.TaskBefore != "", in.TaskAfter != nil && *in.TaskAfter != "":
		return nil, refuse("task_before", "put the commands into command")
	case in.LogName != nil && *in.LogName != "":
		return nil, refuse("log_name", "ql3 keeps each attempt's log itself")
	case in.WorkDir != nil && *in.WorkDir != "":
		return nil, refuse("work_dir", "use a cd in command")
	case in.AllowMultipleInstances != nil && *in.AllowMultipleInstances != 0 && *in.AllowMultipleInstances != 1:
		return nil, errs.Invalidf("allow_multiple_instances", "must be 0 or 1")
	case len(in.ExtraSchedules) > maxTriggers-1:
		return nil, errs.Invalidf("extra_schedules", "at most %d", maxTriggers-1)
	}
	out := []string{strings.TrimSpace(in.Schedule)}
	for _, e := range in.ExtraSchedules {
		out = append(out, strings.TrimSpace(e.Schedule))
	}
	return out, nil
}

// CronName is the task name of a cron: its name, or (QingLong allows an
// empty name) its command cut to the name limit.
func CronName(in CronInput) string {
	if n := strings.TrimSpace(in.Name); n != "" {
		return n
	}
	c := []rune(strings.Join(strings.Fields(in.Command), " "))
	return string(c[:min(len(c), names.MaxDisplayChars)])
}

// CronSpec is the spec of a cron: base (a new shell spec with defaults
// when nil) with its command replaced by the cron's, run by /bin/bash,
// and its concurrency set from allow_multiple_instances when given.
func CronSpec(in CronInput, base *spec.Command) spec.Command {
	var sp spec.Command
	if base == nil {
		sp = spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: in.Command, Shell: spec.ShellBash}}.WithDefaults()
	} else {
		sp = *base
		sp.Argv, sp.Shell = nil, &spec.Shell{Command: in.Command, Shell: spec.ShellBash}
	}
	if in.AllowMultipleInstances != nil {
		sp.Concurrency = spec.DefaultConcurrency
		if *in.AllowMultipleInstances == 1 {
			sp.Concurrency = spec.ConcurrencyAllow
		}
	}
	return sp
}

// Time formats ms the way QingLong's rows carry createdAt and updatedAt
// (ISO 8601, Sequelize).
func Time(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// Stamp formats ms as QingLong's timestamp column (JavaScript's
// Date.toString() in UTC).
func Stamp(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("Mon Jan 02 2006 15:04:05") + " GMT+0000 (Coordinated Universal Time)"
}

// Paging reads QingLong's page and size (given together, size ≤ max);
// 0, 0 when neither is given.
func Paging(page, size string, max int) (int, int, error) {
	if page == "" && size == "" {
		return 0, 0, nil
	}
	p, err1 := strconv.Atoi(page)
	s, err2 := strconv.Atoi(size)
	if err1 != nil || err2 != nil || p < 1 || s < 1 || s > max {
		return 0, 0, errs.Invalidf("page", "page must be >= 1 and size 1..%d, given together", max)
	}
	return p, s, nil
}

// CheckListQuery refuses what QingLong's cron list accepts and ql3 has
// not: its panel sends filters={} (and a sorter when a column is sorted).
func CheckListQuery(filters, sorter, queryString string) error {
	if (filters != "" && filters != "{}") || sorter != "" || queryString != "" {
		return errs.Invalidf("filters", "filters, sorter and queryString are not supported by ql3; use searchValue")
	}
	return nil
}
