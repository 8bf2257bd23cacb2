package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/url"

	"github.com/google/uuid"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/subapi"
	"github.com/ql3/ql3/core/errs"
)

// subArgs are the flags of the subscription commands.
type subArgs struct {
	url, kind, branch, slug, credential, credentialKind string
	include, exclude, extensions                        string // comma-separated
	schedule, removeMode, defaultCron, proxy, timeZone  string
	key                                                 string
	noAutoAdd, noAutoRemove, disabled                   bool
}

// subCommands are a project's subscriptions (ADR 0061): sub
// list|add|rm|pull|preview, the edge's commands under --project.
func subCommands() map[string]Command {
	proj := func(fs *flag.FlagSet, a *Args) {
		fs.StringVar(&a.project, "project", "", "project id or name (required)")
	}
	one := func(fs *flag.FlagSet, a *Args) {
		proj(fs, a)
		fs.StringVar(&a.id, "id", "", "subscription id (required)")
	}
	return map[string]Command{
		"sub list": {Summary: "list a project's subscriptions, their folder, schedule and last pull", Flags: proj,
			Run: func(c *Client, ctx context.Context) error { return c.subCall(ctx, http.MethodGet, "", nil, nil) }},
		"sub add": {Summary: "subscribe a project to a git repository (--branch) or a raw file (--kind file); --credential names an env store entry",
			Flags: func(fs *flag.FlagSet, a *Args) {
				proj(fs, a)
				s := &a.sub
				fs.StringVar(&a.name, "name", "", "display name (required)")
				fs.StringVar(&s.url, "url", "", "repository or file URL (required; never with a password)")
				fs.StringVar(&s.kind, "kind", "git", "git | file")
				fs.StringVar(&s.branch, "branch", "", "git branch (default: the remote's)")
				fs.StringVar(&s.slug, "slug", "", "folder under the scripts folder (default: from the URL)")
				fs.StringVar(&s.credential, "credential", "", "env store entry holding the token or SSH key")
				fs.StringVar(&s.credentialKind, "credential-kind", "", "token | ssh_key")
				fs.StringVar(&s.include, "include", "", "globs of files to keep, comma-separated")
				fs.StringVar(&s.exclude, "exclude", "", "globs of files to leave out, comma-separated")
				fs.StringVar(&s.extensions, "extensions", ".js,.py,.sh,.ts", "extensions of scripts, comma-separated")
				fs.StringVar(&s.schedule, "schedule", "", "cron expression of the pulls (default: by hand only)")
				fs.StringVar(&s.removeMode, "remove-mode", "disable", "what happens to a removed script's task: disable | delete")
				fs.StringVar(&s.defaultCron, "default-cron", "", "cron of scripts that declare none (default: skip them)")
				fs.StringVar(&s.proxy, "proxy", "", "proxy URL for the fetch")
				fs.StringVar(&s.timeZone, "time-zone", "", "IANA time zone of the schedules (default UTC)")
				fs.BoolVar(&s.noAutoAdd, "no-auto-add", false, "do not create tasks for new scripts")
				fs.BoolVar(&s.noAutoRemove, "no-auto-remove", false, "leave the tasks of removed scripts alone")
				fs.BoolVar(&s.disabled, "disabled", false, "create it switched off")
			}, Run: (*Client).subAdd},
		"sub rm": {Summary: "forget a subscription and its system task (the tasks it made and its folder stay)", Flags: one,
			Run: func(c *Client, ctx context.Context) error {
				if err := required("id", c.Args.id); err != nil {
					return err
				}
				if err := c.subCall(ctx, http.MethodDelete, "/"+url.PathEscape(c.Args.id), nil, nil); err != nil {
					return err
				}
				// 204 has no body: say what was deleted, as text or JSON.
				data, _ := json.Marshal(struct {
					ID      string `json:"id"`
					Deleted bool   `json:"deleted"`
				}{c.Args.id, true})
				return c.output(data)
			}},
		"sub pull": {Summary: "pull now: a Run of the subscription's system task (see \"run show\")", Flags: func(fs *flag.FlagSet, a *Args) {
			one(fs, a)
			fs.StringVar(&a.sub.key, "idempotency-key", "", "client key (default: a new random key)")
		}, Run: func(c *Client, ctx context.Context) error {
			if err := required("id", c.Args.id); err != nil {
				return err
			}
			key := c.Args.sub.key
			if key == "" {
				key = "cli-" + uuid.NewString()
			}
			return c.subCall(ctx, http.MethodPost, "/"+url.PathEscape(c.Args.id)+"/pull", nil, http.Header{"Idempotency-Key": {key}})
		}},
		"sub preview": {Summary: "what a pull would do now (fetched into a private stage; nothing written)", Flags: one,
			Run: func(c *Client, ctx context.Context) error {
				if err := required("id", c.Args.id); err != nil {
					return err
				}
				return c.subCall(ctx, http.MethodPost, "/"+url.PathEscape(c.Args.id)+"/preview", nil, nil)
			}},
	}
}

func (c *Client) subAdd(ctx context.Context) error {
	s := c.Args.sub
	if err := required("name", c.Args.name, "url", s.url); err != nil {
		return err
	}
	yes := func(b bool) *bool { return &b }
	req := subapi.SubscriptionRequest{Name: c.Args.name, Slug: s.slug, Kind: s.kind, URL: s.url, Branch: s.branch,
		Credential: s.credential, CredentialKind: s.credentialKind, Include: splitList(s.include), Exclude: splitList(s.exclude),
		Extensions: splitList(s.extensions), Schedule: s.schedule, AutoAddTasks: yes(!s.noAutoAdd), AutoRemoveTasks: yes(!s.noAutoRemove),
		RemoveMode: s.removeMode, DefaultCron: s.defaultCron, Proxy: s.proxy, TimeZone: s.timeZone, Enabled: yes(!s.disabled)}
	return c.subCall(ctx, http.MethodPost, "", req, nil)
}

// subCall sends one request under /api/v1/projects/{project}/subscriptions
// and prints the JSON answer.
func (c *Client) subCall(ctx context.Context, method, suffix string, body any, hdr http.Header) error {
	if err := required("project", c.Args.project); err != nil {
		return err
	}
	p := "/api/v1/projects/" + url.PathEscape(c.Args.project) + "/subscriptions" + suffix
	var resp *http.Response
	var err error
	if hdr != nil {
		resp, err = c.sendRaw(ctx, method, p, bytes.NewReader(nil), hdr, true)
	} else {
		resp, err = c.send(ctx, method, p, body, true)
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return errs.E(errs.Unavailable, "server", "reading the response: %v", err)
	}
	if len(data) == 0 {
		return nil
	}
	return c.output(data)
}

// subPrinters are the text forms of the subscription commands.
func subPrinters() map[string]Printer {
	return map[string]Printer{
		"sub list": one(func(w io.Writer, _ Args, l subapi.SubscriptionList) error {
			t := newTable(w, "ID", "NAME", "FOLDER", "KIND", "URL", "SCHEDULE", "LAST PULL", "COMMIT")
			for _, s := range l.Subscriptions {
				last, commit := fmtTime(s.LastPullAtMs), "-"
				if s.LastCommit != "" {
					commit = oneLine(s.LastCommit, 12)
				}
				sched := s.Schedule
				if sched == "" {
					sched = "-"
				}
				t.row(s.ID, s.Name, s.Slug+"/", s.Kind, s.URL, sched, last, commit)
			}
			return t.end(w, "")
		}),
		"sub add": one(said[subapi.SubscriptionView](func(s subapi.SubscriptionView) string {
			return "subscribed " + named(s.Name, s.ID) + " into " + s.Slug + "/ (system task " + s.TaskID + ")"
		})),
		"sub rm": func(w io.Writer, a Args, _ []byte) error {
			_, err := io.WriteString(w, "deleted subscription "+a.id+" (its tasks and folder stay)\n")
			return err
		},
		"sub pull":    one(printRunNow),
		"sub preview": one(printPreview),
	}
}

func printPreview(w io.Writer, _ Args, p controlplane.SubscriptionPreview) error {
	t := newTable(w, "ACTION", "PATH", "TASK", "NAME", "CRON", "REASON")
	for _, c := range p.Changes {
		t.row(c.Action, c.Path, c.TaskID, c.Name, c.Cron, c.Reason)
	}
	for _, k := range p.Skipped {
		t.row("skipped", k.Path, "", "", "", k.Reason)
	}
	if err := t.end(w, ""); err != nil {
		return err
	}
	_, err := io.WriteString(w, "commit "+p.Commit+"\n")
	return err
}
