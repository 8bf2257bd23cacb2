package qlimport

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/ql3/ql3/core/cron"
	"github.com/ql3/ql3/core/names"
	"github.com/ql3/ql3/core/scriptpath"
)

// MaxTriggers is how many schedules one imported task may carry (its
// schedule plus extra_schedules).
const MaxTriggers = 64

// MaxLabels bounds the labels kept per task or env entry.
const MaxLabels = 32

// ScriptCall is a script task: a file of the scripts folder and its
// arguments.
type ScriptCall struct {
	File string   `json:"file"`
	Args []string `json:"args"`
}

// TaskPlan is what one Crontab row becomes.
type TaskPlan struct {
	SourceID    int64       `json:"sourceId"`
	Class       Class       `json:"class"`
	Reasons     []string    `json:"reasons,omitempty"`
	Name        string      `json:"name"`
	Kind        string      `json:"kind,omitempty"` // script | shell; empty when not created
	Script      *ScriptCall `json:"script,omitempty"`
	Shell       string      `json:"shell,omitempty"` // run by /bin/bash, as QingLong ran it
	WorkDir     string      `json:"workDir,omitempty"`
	Schedules   []string    `json:"schedules,omitempty"`
	Enabled     bool        `json:"enabled"`
	Labels      []string    `json:"labels,omitempty"`
	Concurrency string      `json:"concurrency,omitempty"` // replace (QingLong's default) | allow
	TimeoutMs   int64       `json:"timeoutMs,omitempty"`   // from task -m
}

// Created reports whether apply creates the task.
func (t TaskPlan) Created() bool { return t.Class == Lossless || t.Class == RequiresShell }

// qlScriptsPrefixes are where QingLong containers keep the scripts folder;
// a `task /ql/data/scripts/x.js` names the file x.js of the folder.
var qlScriptsPrefixes = []string{"/ql/data/scripts/", "/ql/scripts/"}

// qlShellHelpers are marks of a command that relied on QingLong's shell
// environment: its paths, its variables, its helper commands.
var qlShellHelpers = regexp.MustCompile(`(^|[^A-Za-z0-9_])(/ql/|\$\{?QL_DIR\b|\$\{?dir_[a-z_]+|\$\{?file_[a-z_]+|ql\s|task\s|notify\s)`)

// qlSubscriptionCommand are QingLong's repository commands, which ql3
// expresses as subscriptions.
var qlSubscriptionCommand = regexp.MustCompile(`^\s*ql\s+(repo|raw)\s`)

type verdict struct {
	class   Class
	reasons []string
}

func (v *verdict) add(c Class, format string, args ...any) {
	v.reasons = append(v.reasons, fmt.Sprintf(format, args...))
	if rank(c) > rank(v.class) {
		v.class = c
	}
}

func rank(c Class) int {
	switch c {
	case RequiresShell:
		return 1
	case RequiresManual:
		return 2
	case Malformed:
		return 3
	}
	return 0
}

// planTasks classifies every Crontab row; names are made unique in the
// order of the source ids (the first keeps its name, later ones get
// " #<id>").
func planTasks(rows []Crontab, loc *time.Location) []TaskPlan {
	rows = append([]Crontab(nil), rows...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	out := make([]TaskPlan, 0, len(rows))
	taken := map[string]bool{}
	for _, r := range rows {
		p := planTask(r, loc)
		if p.Created() {
			if taken[p.Name] {
				suffixed := fmt.Sprintf("%s #%d", p.Name, r.ID)
				p.Reasons = append(p.Reasons, fmt.Sprintf("name %q is taken by an earlier task: imported as %q", p.Name, suffixed))
				p.Name = suffixed
			}
			taken[p.Name] = true
		}
		out = append(out, p)
	}
	return out
}

func planTask(r Crontab, loc *time.Location) TaskPlan {
	v := verdict{class: Lossless}
	p := TaskPlan{SourceID: r.ID, Enabled: !r.IsDisabled, Concurrency: "replace", WorkDir: strings.TrimSpace(r.WorkDir)}
	if r.AllowMultipleInstances {
		p.Concurrency = "allow"
	}

	p.Name = strings.TrimSpace(r.Name)
	if p.Name == "" {
		p.Name = fmt.Sprintf("Legacy Crontab %d", r.ID)
		v.reasons = append(v.reasons, "empty name: imported as "+p.Name)
	}
	if n, err := names.CheckDisplay("name", p.Name); err != nil {
		v.add(RequiresManual, "name %q is not a valid ql3 name: %v", p.Name, err)
	} else {
		p.Name = n
	}
	for i, l := range r.Labels {
		if i >= MaxLabels {
			v.add(RequiresManual, "more than %d labels", MaxLabels)
			break
		}
		if n, err := names.CheckDisplay("label", l); err != nil {
			v.add(RequiresManual, "label %q is not a valid ql3 name: %v", l, err)
		} else {
			p.Labels = append(p.Labels, n)
		}
	}

	if r.IsSystem {
		v.add(RequiresManual, "a QingLong system task (update, log cleanup, bot): ql3 does its own maintenance")
	}
	if r.SubID != 0 {
		v.add(RequiresManual, "created by subscription %d: import the subscription and let it add its tasks", r.SubID)
	}

	p.Schedules = planSchedules(&v, r, loc)
	planCommand(&v, &p, r)
	p.Class, p.Reasons = v.class, append(v.reasons, p.Reasons...)
	if !p.Created() {
		p.Kind, p.Script, p.Shell = "", nil, ""
	}
	return p
}

func planSchedules(v *verdict, r Crontab, loc *time.Location) []string {
	all := append([]string{r.Schedule}, r.ExtraSchedules...)
	if len(all) > MaxTriggers {
		v.add(RequiresManual, "%d schedules: a ql3 task takes at most %d", len(all), MaxTriggers)
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for i, s := range all {
		s = strings.Join(strings.Fields(s), " ")
		where := "schedule"
		if i > 0 {
			where = fmt.Sprintf("extra_schedules[%d]", i-1)
		}
		switch {
		case s == "":
			v.add(Malformed, "%s is empty", where)
			continue
		case s == "@once" || s == "@boot":
			v.add(RequiresManual, "%s is %s: ql3 schedules only recurring cron expressions (use run now)", where, s)
			continue
		case strings.HasPrefix(s, "@"):
			v.add(RequiresManual, "%s is the macro %s: write it as a cron expression", where, s)
			continue
		}
		if _, err := cron.Parse(s, loc); err != nil {
			v.add(Malformed, "%s %q does not parse: %v", where, s, err)
			continue
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func planCommand(v *verdict, p *TaskPlan, r Crontab) {
	cmd := strings.TrimSpace(r.Command)
	if cmd == "" {
		v.add(Malformed, "empty command")
		return
	}
	if qlSubscriptionCommand.MatchString(cmd) {
		v.add(RequiresManual, "a QingLong repository command (ql repo/raw): import it as a subscription")
		return
	}
	before, after := strings.TrimSpace(r.TaskBefore), strings.TrimSpace(r.TaskAfter)
	tc, isTask, err := scriptpath.ParseTaskCommand(stripScriptsPrefix(cmd))
	switch {
	case isTask && err != nil:
		v.add(Malformed, "task command: %v", err)
		return
	case isTask && (tc.Mode == "conc" || tc.Mode == "desi"):
		v.add(RequiresManual, "task %s runs the script once per account of %s: ql3 runs a task once", tc.Mode, tc.ModeEnv)
		return
	case isTask:
		if _, err := scriptpath.DefaultInterpretersTable().For("command", tc.File); err != nil {
			v.add(RequiresManual, "%v", err)
			return
		}
		if tc.MaxTimeSec > 0 {
			p.TimeoutMs = int64(tc.MaxTimeSec) * 1000
		}
		if before == "" && after == "" {
			p.Kind, p.Script = "script", &ScriptCall{File: tc.File, Args: tc.Args}
			if p.Script.Args == nil {
				p.Script.Args = []string{}
			}
			return
		}
	}
	// A bash command: as written, with task_before/task_after around it
	// (QingLong ran them in the same shell).
	p.Kind = "shell"
	p.Shell = cmd
	if before != "" || after != "" {
		v.add(RequiresShell, "task_before/task_after run around the command: imported as one bash command")
		p.Shell = strings.TrimSpace(strings.Join([]string{before, cmd, after}, "\n"))
	}
	if qlShellHelpers.MatchString(p.Shell) || strings.Contains(p.WorkDir, "/ql/") {
		v.add(RequiresShell, "uses QingLong's shell environment (its paths, variables or helper commands)")
	}
}

func stripScriptsPrefix(cmd string) string {
	for _, pre := range qlScriptsPrefixes {
		cmd = strings.Replace(cmd, " "+pre, " ", 1)
	}
	return cmd
}
