package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/ql3/ql3/edge/httpapi"
)

const taskUsage = `Usage: ql3-edge task <add|list|show|edit|enable|disable|rm> [flags] [arguments]

  add      create a task:  task add --name hello --cron '*/5 * * * * *' --zone Europe/London -- echo hi
                            task add --name home --cron '@hourly' --shell 'echo $HOME'
  list     list tasks
  show     show a task, its spec and triggers:  task show hello
  edit     change a task (publishes a new revision):  task edit hello --cron '0 * * * *'
  enable   enable a task (its triggers restart from now, nothing is replayed)
  disable  stop scheduling a task (running runs finish)
  rm       delete a task (history is kept; queued runs are cancelled)

A task is named by its id or its name. Run "ql3-edge task <sub> --help" for flags.
`

func taskCmd(ctx context.Context, env Env, args []string) error {
	enabled := func(on bool) subcommand {
		return func(ctx context.Context, env Env, args []string) error { return taskSetEnabled(ctx, env, args, on) }
	}
	return dispatch(ctx, env, "task", taskUsage, args, map[string]subcommand{
		"add": taskAdd, "list": taskList, "ls": taskList, "show": taskShow, "edit": taskEdit,
		"enable": enabled(true), "disable": enabled(false), "rm": taskRemove, "delete": taskRemove,
	})
}

func taskPath(ref string) string { return "/api/v1/tasks/" + url.PathEscape(ref) }

func taskAdd(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "task add", "--name NAME [--cron EXPR]... (--shell SCRIPT | -- COMMAND [ARGS...])",
		"Create a task and its cron triggers in one request; nothing is created if any part is invalid.")
	var cf clientFlags
	var sf specFlags
	cf.register(fs)
	sf.register(fs, false)
	disabled := fs.Bool("disabled", false, "create the task disabled")
	argv, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if sf.name == "" {
		return usagef("--name is required")
	}
	if len(sf.crons) == 0 && sf.triggerFlagsSet() {
		return usagef("--zone, --misfire and --grace need --cron")
	}
	doc, err := sf.specDoc(env, nil, argv)
	if err != nil {
		return err
	}
	req := httpapi.CreateTaskRequest{Name: sf.name, Spec: doc}
	if *disabled {
		f := false
		req.Enabled = &f
	}
	for _, expr := range sf.crons {
		req.Triggers = append(req.Triggers, sf.triggerRequest(expr, nil))
	}
	c, err := cf.client(env)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(ctx, cf.timeout)
	defer cancel()
	var t httpapi.Task
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/tasks", body: req}, &t); err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, t)
	}
	fmt.Fprintf(env.Stdout, "created task %s (%s), revision %d\n", t.Name, t.ID, t.Revision)
	printTriggers(env.Stdout, t.Triggers)
	return nil
}

func taskList(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "task list", "[flags]", "List tasks, oldest first.")
	var cf clientFlags
	cf.register(fs)
	all := fs.Bool("all", false, "include deleted tasks")
	limit := fs.Int("limit", 0, "page size (default 50, max 200)")
	cursor := fs.String("cursor", "", "continue after this cursor (printed at the end of a full page)")
	search := fs.String("search", "", "only tasks whose name, command or a label contains this text")
	label := fs.String("label", "", "only tasks with this label")
	_, c, ctx, cancel, err := cf.connect(ctx, env, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	q := url.Values{}
	if *all {
		q.Set("deleted", "1")
	}
	if *limit != 0 {
		q.Set("limit", fmt.Sprint(*limit))
	}
	if *cursor != "" {
		q.Set("cursor", *cursor)
	}
	if *search != "" {
		q.Set("q", *search)
	}
	if *label != "" {
		q.Set("label", *label)
	}
	var page httpapi.TaskList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/tasks", query: q}, &page); err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, page)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tENABLED\tREV\tCOMMAND")
	for _, t := range page.Items {
		state := fmt.Sprint(t.Enabled)
		if t.DeletedAtMs != 0 {
			state = "deleted"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", t.ID, t.Name, state, t.Revision, oneLine(commandLine(t), 60))
	}
	return endPage(env, tw, page.NextCursor)
}

func taskShow(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "task show", "TASK", "Show a task: spec, revision, digest and triggers.")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, env, fs, args, 1, "TASK (id or name)")
	if err != nil {
		return err
	}
	defer cancel()
	var t httpapi.Task
	if err := c.do(ctx, request{method: http.MethodGet, path: taskPath(pos[0])}, &t); err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, t)
	}
	w := env.Stdout
	fmt.Fprintf(w, "task      %s\nid        %s\nenabled   %v\nrevision  %d (%s)\ncreated   %s\nupdated   %s\n",
		t.Name, t.ID, t.Enabled, t.Revision, t.Digest, fmtTime(t.CreatedAtMs), fmtTime(t.UpdatedAtMs))
	if t.DeletedAtMs != 0 {
		fmt.Fprintf(w, "deleted   %s\n", fmtTime(t.DeletedAtMs))
	}
	fmt.Fprintf(w, "command   %s\n", commandLine(t))
	fmt.Fprintln(w, "spec:")
	if err := printJSON(indent{w}, t.Spec); err != nil {
		return err
	}
	printTriggers(w, t.Triggers)
	return nil
}

func printTriggers(w io.Writer, triggers []httpapi.Trigger) {
	if len(triggers) == 0 {
		fmt.Fprintln(w, "triggers: none (run it with `ql3-edge run now`)")
		return
	}
	fmt.Fprintln(w, "triggers:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tEXPRESSION\tZONE\tMISFIRE\tGRACE\tENABLED\tNEXT FIRE")
	for _, tr := range triggers {
		next := "-"
		if tr.NextFireAtMs != 0 {
			next = fmtTime(tr.NextFireAtMs)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%dms\t%v\t%s\n", tr.ID, tr.Expression, tr.TimeZone, tr.Misfire, tr.GraceMs, tr.Enabled, next)
	}
	_ = tw.Flush()
}

func taskEdit(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "task edit", "TASK [flags] [-- COMMAND [ARGS...]]",
		"Change a task. Only the flags given change anything; a changed spec or name publishes a new\n"+
			"revision (guarded by the revision read first, so a concurrent edit is a conflict, exit 4).\n"+
			"--cron replaces all triggers; --zone/--misfire/--grace alone change every trigger.")
	var cf clientFlags
	var sf specFlags
	cf.register(fs)
	sf.register(fs, true)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 {
		return usagef("expected TASK (id or name)")
	}
	ref, argv := pos[0], pos[1:]
	if sf.noCron && (len(sf.crons) > 0 || sf.triggerFlagsSet()) {
		return usagef("--no-cron cannot be combined with --cron, --zone, --misfire or --grace")
	}
	c, err := cf.client(env)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(ctx, cf.timeout)
	defer cancel()
	var t httpapi.Task
	if err := c.do(ctx, request{method: http.MethodGet, path: taskPath(ref)}, &t); err != nil {
		return err
	}
	specChanged := sf.specFile != "" || sf.shell != "" || len(argv) > 0 || len(sf.env) > 0 || len(sf.unsetEnv) > 0
	for _, name := range []string{"shell-path", "workdir", "run-timeout", "max-attempts", "backoff", "backoff-max", "retry-on-lost", "concurrency"} {
		specChanged = specChanged || sf.set(name)
	}
	changed := false
	if specChanged || sf.set("name") {
		base, err := specMap(t.Spec)
		if err != nil {
			return err
		}
		doc, err := sf.specDoc(env, base, argv)
		if err != nil {
			return err
		}
		name := t.Name
		if sf.set("name") {
			name = sf.name
		}
		var updated httpapi.Task
		req := httpapi.UpdateTaskRequest{ExpectedRevision: t.Revision, Name: name, Spec: doc}
		if err := c.do(ctx, request{method: http.MethodPut, path: taskPath(t.ID), body: req}, &updated); err != nil {
			return err
		}
		if updated.Revision != t.Revision {
			fmt.Fprintf(env.Stdout, "task %s: revision %d published\n", updated.Name, updated.Revision)
		} else {
			fmt.Fprintf(env.Stdout, "task %s: unchanged (revision %d)\n", updated.Name, updated.Revision)
		}
		changed = true
	}
	if len(sf.crons) > 0 || sf.noCron || sf.triggerFlagsSet() {
		if err := editTriggers(ctx, env, c, t, &sf); err != nil {
			return err
		}
		changed = true
	}
	if !changed {
		return usagef("nothing to change: give flags or a command after --")
	}
	return nil
}

// editTriggers applies the trigger flags: with --cron the task ends up with
// exactly those expressions (existing triggers updated in order, extra ones
// created, surplus ones deleted); without, the zone/misfire/grace flags
// change every trigger.
func editTriggers(ctx context.Context, env Env, c *Client, t httpapi.Task, sf *specFlags) error {
	base := t.Triggers
	exprs := []string(sf.crons)
	if len(exprs) == 0 && !sf.noCron {
		for _, tr := range base {
			exprs = append(exprs, tr.Expression)
		}
	}
	for i, expr := range exprs {
		if i < len(base) {
			cur := base[i]
			req := httpapi.UpdateTriggerRequest{ExpectedRevision: cur.Revision, TriggerRequest: sf.triggerRequest(expr, &cur)}
			var out httpapi.Trigger
			if err := c.do(ctx, request{method: http.MethodPut, path: taskPath(t.ID) + "/triggers/" + url.PathEscape(cur.ID), body: req}, &out); err != nil {
				return err
			}
			fmt.Fprintf(env.Stdout, "trigger %s: %s %s (revision %d)\n", out.ID, out.Expression, out.TimeZone, out.Revision)
			continue
		}
		var out httpapi.Trigger
		if err := c.do(ctx, request{method: http.MethodPost, path: taskPath(t.ID) + "/triggers", body: sf.triggerRequest(expr, nil)}, &out); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "trigger %s: %s %s (new)\n", out.ID, out.Expression, out.TimeZone)
	}
	for i := len(exprs); i < len(base); i++ {
		if err := c.do(ctx, request{method: http.MethodDelete, path: taskPath(t.ID) + "/triggers/" + url.PathEscape(base[i].ID)}, nil); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "trigger %s: removed\n", base[i].ID)
	}
	return nil
}

func taskSetEnabled(ctx context.Context, env Env, args []string, enabled bool) error {
	verb := map[bool]string{true: "enable", false: "disable"}[enabled]
	fs := newFlagSet(env, "task "+verb, "TASK", strings.ToUpper(verb[:1])+verb[1:]+" a task.")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, env, fs, args, 1, "TASK (id or name)")
	if err != nil {
		return err
	}
	defer cancel()
	var t httpapi.Task
	if err := c.do(ctx, request{method: http.MethodPost, path: taskPath(pos[0]) + "/" + verb}, &t); err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, t)
	}
	fmt.Fprintf(env.Stdout, "task %s: %sd\n", t.Name, verb)
	return nil
}

func taskRemove(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "task rm", "TASK", "Delete a task: its triggers stop, queued runs are cancelled, history is kept.")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, env, fs, args, 1, "TASK (id or name)")
	if err != nil {
		return err
	}
	defer cancel()
	if err := c.do(ctx, request{method: http.MethodDelete, path: taskPath(pos[0])}, nil); err != nil {
		return err
	}
	if !cf.json {
		fmt.Fprintf(env.Stdout, "task %s: deleted\n", pos[0])
	}
	return nil
}

func commandLine(t httpapi.Task) string {
	switch {
	case t.Spec.Shell != nil:
		return t.Spec.Shell.Command
	case t.Spec.Argv != nil:
		return strings.Join(append([]string{t.Spec.Argv.File}, t.Spec.Argv.Args...), " ")
	case t.Spec.Script != nil:
		return strings.Join(append([]string{"task", t.Spec.Script.File}, t.Spec.Script.Args...), " ")
	}
	return t.Spec.Kind
}

func oneLine(s string, max int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return string(r)
}

// indent prefixes every line written through it with two spaces.
type indent struct{ w io.Writer }

func (i indent) Write(p []byte) (int, error) {
	lines := strings.SplitAfter(string(p), "\n")
	for _, l := range lines {
		if l == "" {
			continue
		}
		if _, err := io.WriteString(i.w, "  "+l); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func readAllLimited(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("input exceeds %d bytes", max)
	}
	return data, nil
}
