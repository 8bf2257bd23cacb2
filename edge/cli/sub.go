package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/edge/notify"
	"github.com/ql3/ql3/edge/subs"
)

const subUsage = `Usage: ql3-edge sub <list|add|rm|pull|preview> ...

  list                       subscriptions, their folder, schedule and last pull
  add --name N --url URL     subscribe: a git repository (--branch) or a raw file (--kind file)
  rm ID                      forget a subscription (its tasks and its folder stay)
  pull ID                    pull now: a Run of the subscription's system task (see "run show")
  preview ID                 what a pull would do now, without writing anything

A pull puts the repository in scripts/<slug>/ and turns the cron comments of its scripts
into tasks. Credentials are never given here: --credential names an env store entry
holding an HTTPS token (--credential-kind token) or an SSH private key (ssh_key).
`

func subCmd(ctx context.Context, e Env, args []string) error {
	return dispatch(ctx, e, "sub", subUsage, args, map[string]subcommand{
		"list": subList, "ls": subList, "add": subAdd, "rm": subRemove, "delete": subRemove,
		"pull": subPull, "preview": subPreview,
		"pull-run": subPullRun, // the system task's program (not listed)
	})
}

func subList(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "sub list", "[flags]", "List subscriptions.")
	var cf clientFlags
	cf.register(fs)
	out, done, err := fetch[httpapi.SubscriptionList](ctx, e, fs, &cf, args, 0, "no arguments",
		func(_ []string) request { return request{method: http.MethodGet, path: "/api/v1/subscriptions"} })
	if err != nil || done {
		return err
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tFOLDER\tKIND\tURL\tSCHEDULE\tLAST PULL\tCOMMIT")
	for _, s := range out.Subscriptions {
		fmt.Fprintf(tw, "%s\t%s\tscripts/%s\t%s\t%s\t%s\t%s\t%.12s\n", s.ID, s.Name, s.Slug, s.Kind, s.URL, dash(s.Schedule),
			fmtTime(s.LastPullAtMs), dash(s.LastCommit))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func subAdd(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "sub add", "--name NAME --url URL [flags]", "Subscribe to a repository or a raw file.")
	var cf clientFlags
	cf.register(fs)
	var req httpapi.SubscriptionRequest
	var include, exclude, ext stringList
	var noAdd, noRemove, disabled bool
	fs.StringVar(&req.Name, "name", "", "display name")
	fs.StringVar(&req.Kind, "kind", "git", "git or file")
	fs.StringVar(&req.URL, "url", "", "repository URL (https, ssh, git@host:path, file) or the raw file's URL")
	fs.StringVar(&req.Branch, "branch", "", "git branch (default: the remote's default branch)")
	fs.StringVar(&req.Slug, "slug", "", "folder under the scripts folder (default: from the URL)")
	fs.StringVar(&req.Credential, "credential", "", "env store entry holding the token or the SSH key")
	fs.StringVar(&req.CredentialKind, "credential-kind", "", "token or ssh_key")
	fs.Var(&include, "include", "glob of the files that are scripts (repeatable; default all)")
	fs.Var(&exclude, "exclude", "glob of files that are not scripts (repeatable)")
	fs.Var(&ext, "ext", "extension of scripts, e.g. .js (repeatable; default all)")
	fs.StringVar(&req.Schedule, "schedule", "", "cron expression of the pulls (default: by hand only)")
	fs.StringVar(&req.TimeZone, "time-zone", "", "IANA zone of the schedule and the tasks (default UTC)")
	fs.StringVar(&req.RemoveMode, "remove-mode", "", "a removed script's task: disable (default) or delete")
	fs.StringVar(&req.DefaultCron, "default-cron", "", "schedule of scripts that declare none (default: no task)")
	fs.StringVar(&req.Proxy, "proxy", "", "http(s):// or socks5:// proxy of the pulls")
	fs.BoolVar(&noAdd, "no-auto-add", false, "do not create tasks for new scripts")
	fs.BoolVar(&noRemove, "no-auto-remove", false, "leave the tasks of removed scripts alone")
	fs.BoolVar(&disabled, "disabled", false, "add it disabled (no scheduled pulls)")
	_, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	req.Include, req.Exclude, req.Extensions = include, exclude, ext
	yes, no := true, false
	req.AutoAddTasks, req.AutoRemoveTasks, req.Enabled = &yes, &yes, &yes
	if noAdd {
		req.AutoAddTasks = &no
	}
	if noRemove {
		req.AutoRemoveTasks = &no
	}
	if disabled {
		req.Enabled = &no
	}
	var out httpapi.Subscription
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/subscriptions", body: req}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.Stdout, out)
	}
	fmt.Fprintf(e.Stdout, "subscription %s added: scripts/%s, system task %s\n", out.ID, out.Slug, out.TaskID)
	return nil
}

func subRemove(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "sub rm", "ID", "Forget a subscription and its system task; its tasks and folder stay.")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "a subscription id")
	if err != nil {
		return err
	}
	defer cancel()
	if err := c.do(ctx, request{method: http.MethodDelete, path: "/api/v1/subscriptions/" + url.PathEscape(pos[0])}, nil); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "subscription %s removed\n", pos[0])
	return nil
}

func subPull(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "sub pull", "ID", "Pull now: a Run of the subscription's system task.")
	var cf clientFlags
	cf.register(fs)
	out, done, err := fetch[httpapi.Run](ctx, e, fs, &cf, args, 1, "a subscription id",
		func(pos []string) request {
			return request{method: http.MethodPost, path: "/api/v1/subscriptions/" + url.PathEscape(pos[0]) + "/pull"}
		})
	if err != nil || done {
		return err
	}
	fmt.Fprintf(e.Stdout, "pull started: run %s (%s); follow it with: ql3-edge logs -f %s\n", out.ID, out.Status, out.ID)
	return nil
}

func subPreview(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "sub preview", "ID", "What a pull would do now (fetched into a private stage; nothing written).")
	var cf clientFlags
	cf.register(fs)
	out, done, err := fetch[httpapi.SubscriptionPreview](ctx, e, fs, &cf, args, 1, "a subscription id",
		func(pos []string) request {
			return request{method: http.MethodPost, path: "/api/v1/subscriptions/" + url.PathEscape(pos[0]) + "/preview"}
		})
	if err != nil || done {
		return err
	}
	fmt.Fprintf(e.Stdout, "commit %s\n", out.Commit)
	for _, k := range out.Skipped {
		fmt.Fprintf(e.Stdout, "skipped file %s: %s\n", k.Path, k.Reason)
	}
	printChanges(e, out.Changes)
	return nil
}

func printChanges(e Env, ch []subplan.Change) {
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tSCRIPT\tTASK\tNAME\tCRON\tREASON")
	for _, c := range ch {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Action, c.Path, dash(c.TaskID), dash(c.Name), dash(c.Cron), dash(c.Reason))
	}
	tw.Flush()
}

// subPullRun is the program of a subscription's system task: it reads
// the source with its Run's token, stages and swaps the tree in (the log
// is the Run's), and asks the server to apply the tasks' plan. The
// server's address is QL3_NOTIFY_URL's (the same loopback listener).
func subPullRun(ctx context.Context, e Env, args []string) error {
	if len(args) != 1 {
		return usagef("sub pull-run runs as a subscription's system task: expected the subscription id")
	}
	base, tok := strings.TrimSuffix(e.Getenv(notify.EnvURL), notify.SendPath), e.Getenv(notify.EnvToken)
	if base == "" || tok == "" {
		return errs.Invalidf(notify.EnvToken, "sub pull-run runs as a subscription's system task: %s and %s are not set", notify.EnvURL, notify.EnvToken)
	}
	c, err := NewClient(base, tok, false)
	if err != nil {
		return err
	}
	var src httpapi.PullSource
	if err := c.do(ctx, request{method: http.MethodGet, path: httpapi.PullSourcePath}, &src); err != nil {
		return err
	}
	if src.SubscriptionID != args[0] {
		return errs.Invalidf("id", "this Run pulls subscription %s, not %s", src.SubscriptionID, args[0])
	}
	source := subs.Source{Kind: src.Kind, URL: src.URL, Branch: src.Branch, Proxy: src.Proxy, CredentialKind: src.CredentialKind}
	if src.Credential != "" {
		if source.Credential = e.Getenv(src.Credential); source.Credential == "" {
			return errs.Invalidf("credential", "the env store entry %s is missing, disabled or empty", src.Credential)
		}
	}
	st, err := subs.Pull(ctx, subs.PullJob{ScriptsRoot: src.ScriptsDir, WorkDir: src.WorkDir, Slug: src.Slug, Source: source}, e.Stdout)
	if err != nil {
		return fmt.Errorf("pull failed, scripts/%s/ is unchanged: %w", src.Slug, err)
	}
	var out httpapi.PullApplied
	if err := c.do(ctx, request{method: http.MethodPost, path: httpapi.PullAppliedPath, body: httpapi.PullAppliedRequest{Commit: st.Commit}}, &out); err != nil {
		return err
	}
	printChanges(e, out.Changes)
	return nil
}
