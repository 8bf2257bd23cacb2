// Package subplan decides what a subscription pull does to the tasks it
// manages: which scripts become tasks, which tasks follow an edited cron
// comment, which are disabled or removed when their script disappears,
// and which are left alone because a person edited them. It is pure: the
// caller lists the pulled scripts (with scriptmeta headers) and the tasks
// that carry the subscription as their origin, and applies the changes in
// one transaction. Planning twice over the same input, or re-planning
// after applying, changes nothing (idempotent).
package subplan

import (
	"path"
	"sort"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptmeta"
)

// Script is one pulled file that passed the subscription's filter.
type Script struct {
	Path   string // relative to the subscription's folder
	Header scriptmeta.Header
}

// Task is a task whose origin is this subscription. Applied* is what the
// subscription last wrote; Current* is the task now. They differ when a
// person edited the task: it has diverged and is never overwritten.
type Task struct {
	ID          string
	Path        string // the script it runs, relative to the folder
	AppliedName string
	AppliedCron string
	CurrentName string
	CurrentCron string
	Enabled     bool
	HandEdited  bool // an edit the fields above do not show (command, timeout…)
}

// Diverged reports a person's edit since the last apply.
func (t Task) Diverged() bool {
	return t.HandEdited || t.AppliedName != t.CurrentName || t.AppliedCron != t.CurrentCron
}

// Removal modes for a task whose script disappeared.
const (
	RemoveDisable = "disable"
	RemoveDelete  = "delete"
)

// Options are the subscription's settings that shape the plan.
type Options struct {
	AutoAdd     bool
	AutoRemove  bool
	RemoveMode  string // disable | delete
	DefaultCron string // for scripts that declare none; "" = skip them
}

// Actions of a Change.
const (
	Add      = "add"
	Update   = "update"
	Disable  = "disable"
	Remove   = "remove"
	Keep     = "keep"     // nothing to do
	Diverged = "diverged" // a person edited the task: left alone
	Skip     = "skip"     // the script declares no usable schedule, or auto-add is off
)

// Change is one line of the plan.
type Change struct {
	Action string `json:"action"`
	Path   string `json:"path"`
	TaskID string `json:"taskId,omitempty"`
	Name   string `json:"name,omitempty"`
	Cron   string `json:"cron,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Mutates reports whether applying the change writes anything.
func (c Change) Mutates() bool {
	return c.Action == Add || c.Action == Update || c.Action == Disable || c.Action == Remove
}

// Plan computes the changes, sorted by path then action.
func Plan(scripts []Script, tasks []Task, o Options) ([]Change, error) {
	switch o.RemoveMode {
	case "":
		o.RemoveMode = RemoveDisable
	case RemoveDisable, RemoveDelete:
	default:
		return nil, errs.Invalidf("removeMode", "must be %q or %q, got %q", RemoveDisable, RemoveDelete, o.RemoveMode)
	}
	byPath := map[string][]Task{}
	for _, t := range tasks {
		byPath[t.Path] = append(byPath[t.Path], t)
	}
	seen := map[string]bool{}
	var out []Change
	for _, s := range scripts {
		if seen[s.Path] {
			return nil, errs.Invalidf("scripts", "lists %q twice", s.Path)
		}
		seen[s.Path] = true
		cron, name := s.Header.Cron, s.Header.Name
		if cron == "" && o.DefaultCron != "" {
			cron = o.DefaultCron
		}
		existing := byPath[s.Path]
		if cron == "" {
			for _, t := range existing {
				out = append(out, Change{Action: Skip, Path: s.Path, TaskID: t.ID, Reason: s.Header.Skip + "; the task is left as it is"})
			}
			if len(existing) == 0 {
				out = append(out, Change{Action: Skip, Path: s.Path, Reason: s.Header.Skip})
			}
			continue
		}
		if len(existing) == 0 {
			if !o.AutoAdd {
				out = append(out, Change{Action: Skip, Path: s.Path, Name: name, Cron: cron, Reason: "autoAddTasks is off"})
				continue
			}
			out = append(out, Change{Action: Add, Path: s.Path, Name: name, Cron: cron})
			continue
		}
		for _, t := range existing {
			switch {
			case t.Diverged():
				out = append(out, Change{Action: Diverged, Path: s.Path, TaskID: t.ID, Reason: "edited by hand since the last pull: not overwritten"})
			case t.AppliedCron != cron || t.AppliedName != name:
				out = append(out, Change{Action: Update, Path: s.Path, TaskID: t.ID, Name: name, Cron: cron})
			default:
				out = append(out, Change{Action: Keep, Path: s.Path, TaskID: t.ID})
			}
		}
	}
	for p, ts := range byPath {
		if seen[p] {
			continue
		}
		for _, t := range ts {
			switch {
			case t.Diverged():
				out = append(out, Change{Action: Diverged, Path: p, TaskID: t.ID, Reason: "its script is gone, but it was edited by hand: left alone"})
			case !o.AutoRemove:
				out = append(out, Change{Action: Keep, Path: p, TaskID: t.ID, Reason: "its script is gone; autoRemoveTasks is off"})
			case o.RemoveMode == RemoveDelete:
				out = append(out, Change{Action: Remove, Path: p, TaskID: t.ID, Reason: "its script is gone"})
			case t.Enabled:
				out = append(out, Change{Action: Disable, Path: p, TaskID: t.ID, Reason: "its script is gone"})
			default:
				out = append(out, Change{Action: Keep, Path: p, TaskID: t.ID, Reason: "its script is gone; already disabled"})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].TaskID < out[j].TaskID
	})
	return out, nil
}

// Filter selects the files of a pulled tree that are scripts of the
// subscription. Globs use path.Match syntax and are tried against the
// whole relative path and against its base name; "**/" at the start
// matches any folder depth.
type Filter struct {
	Include    []string // empty = every file
	Exclude    []string
	Extensions []string // ".js", ".py"; empty = every extension
}

// Limits of a filter.
const MaxFilterEntries = 64

// Validate checks every glob parses and the lists are bounded.
func (f Filter) Validate() error {
	for _, l := range []struct {
		field string
		globs []string
	}{{"include", f.Include}, {"exclude", f.Exclude}} {
		if len(l.globs) > MaxFilterEntries {
			return errs.TooLargef(l.field, "has %d entries, limit is %d", len(l.globs), MaxFilterEntries)
		}
		for _, g := range l.globs {
			if _, err := path.Match(strings.TrimPrefix(g, "**/"), ""); err != nil || g == "" {
				return errs.Invalidf(l.field, "%q is not a valid glob", g)
			}
		}
	}
	if len(f.Extensions) > MaxFilterEntries {
		return errs.TooLargef("extensions", "has %d entries, limit is %d", len(f.Extensions), MaxFilterEntries)
	}
	for _, e := range f.Extensions {
		if len(e) < 2 || e[0] != '.' || strings.ContainsAny(e[1:], "./*?[") {
			return errs.Invalidf("extensions", "%q must look like .js", e)
		}
	}
	return nil
}

// Match reports whether the file at p (relative, '/'-separated) is
// selected.
func (f Filter) Match(p string) bool {
	if len(f.Extensions) > 0 {
		ok := false
		for _, e := range f.Extensions {
			if strings.HasSuffix(strings.ToLower(p), strings.ToLower(e)) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(f.Include) > 0 && !anyGlob(f.Include, p) {
		return false
	}
	return !anyGlob(f.Exclude, p)
}

func anyGlob(globs []string, p string) bool {
	base := path.Base(p)
	for _, g := range globs {
		g, anyDepth := strings.CutPrefix(g, "**/")
		if ok, _ := path.Match(g, p); ok {
			return true
		}
		if ok, _ := path.Match(g, base); ok {
			return true
		}
		for i := 0; anyDepth && i < len(p); i++ {
			if p[i] == '/' {
				if ok, _ := path.Match(g, p[i+1:]); ok {
					return true
				}
			}
		}
	}
	return false
}
