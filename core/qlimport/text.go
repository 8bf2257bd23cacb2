package qlimport

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// WritePlan writes the plan as the command lines print it: a table of the
// rows (only those that need attention unless all), then the counts per
// kind and class, then the plan's notes. The caller adds its own footer
// (the zone, the digest, how to apply it).
func WritePlan(w io.Writer, p Plan, all bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(kind string, id any, class Class, name, what string, reasons []string) {
		if !all && class == Lossless && len(reasons) == 0 {
			return
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%s\t%s\n", kind, id, class, name, what, strings.Join(reasons, "; "))
	}
	fmt.Fprintln(tw, "KIND\tSOURCE\tCLASS\tNAME\tBECOMES\tREASONS")
	for _, t := range p.Tasks {
		what := ""
		switch {
		case t.Script != nil:
			what = "script " + strings.TrimSpace(t.Script.File+" "+strings.Join(t.Script.Args, " "))
		case t.Shell != "":
			what = "bash: " + firstLine(t.Shell)
		}
		if len(t.Schedules) > 0 {
			what += " @ " + strings.Join(t.Schedules, " | ")
		}
		if t.Created() && !t.Enabled {
			what += " (disabled)"
		}
		row("task", t.SourceID, t.Class, t.Name, what, t.Reasons)
	}
	for _, v := range p.Envs {
		row("env", v.SourceID, v.Class, v.Name, fmt.Sprintf("entry #%d of %s, %d bytes, enabled %v", v.Rank+1, v.Name, v.ValueBytes, v.Enabled), v.Reasons)
	}
	for _, d := range p.ConfigDrafts {
		row("config.sh", fmt.Sprintf("line %d", d.Line), d.Class, d.Name, "disabled draft entry", d.Reasons)
	}
	for _, s := range p.Subscriptions {
		row("subscription", s.SourceID, s.Class, s.Name, s.Kind+" "+s.URL+" → scripts/"+s.Folder, s.Reasons)
	}
	for _, d := range p.Dependencies {
		row("dependency", d.SourceID, d.Class, d.Name, d.Kind+" "+d.Version, d.Reasons)
	}
	for _, f := range p.Files {
		row("file", "scripts/"+f.Path, f.Class, "", "", f.Reasons)
	}
	tw.Flush()
	fmt.Fprintln(w)
	kinds := make([]string, 0, len(p.Counts))
	for k := range p.Counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		var parts []string
		for _, c := range []Class{Lossless, RequiresShell, RequiresManual, Malformed} {
			if n := p.Counts[k][c]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, c))
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "%-14s %s\n", k+":", strings.Join(parts, ", "))
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
