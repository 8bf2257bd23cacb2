package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/notifykit"
)

// notifyArgs are the notify commands' flags.
type notifyArgs struct {
	settingsFile       string
	channels, kinds    string
	status             string
	limit              int
	disabled           bool
	settingsFileReader io.Reader // tests; nil → the file or stdin
}

// notifyCommands are `ql3-control notify …` (ADR 0053): a project's
// channels, rules, "send test" and the delivery log, over the admin API.
// Credentials only ever come from a file or stdin (--settings-file), never
// from the command line, and are never printed.
func notifyCommands() map[string]Command {
	project := func(fs *flag.FlagSet, a *Args) {
		fs.StringVar(&a.project, "project", "", "project id or name (required)")
	}
	withID := func(usage string) func(*flag.FlagSet, *Args) {
		return func(fs *flag.FlagSet, a *Args) { project(fs, a); fs.StringVar(&a.id, "id", "", usage) }
	}
	return map[string]Command{
		"notify channels": {Summary: "list a project's notification channels (never their credentials)", Flags: project,
			Run: notifyGet("/api/v1/notify/channels", nil)},
		"notify channel-add": {Summary: "add a channel; its settings (kind, server, token, secret, …) come from --settings-file",
			Flags: func(fs *flag.FlagSet, a *Args) {
				project(fs, a)
				fs.StringVar(&a.name, "name", "", "channel name (required)")
				fs.StringVar(&a.notify.settingsFile, "settings-file", "", `settings JSON, e.g. {"kind":"telegram","token":"…","chatId":"42"} (file; - for stdin)`)
				fs.BoolVar(&a.notify.disabled, "disabled", false, "add it disabled")
			}, Run: func(c *Client, ctx context.Context) error {
				if err := required("project", c.Args.project, "name", c.Args.name); err != nil {
					return err
				}
				var st notifykit.ChannelSettings
				if err := c.readNotifySettings(&st); err != nil {
					return err
				}
				on := !c.Args.notify.disabled
				return c.call(ctx, http.MethodPost, notifyPath("/api/v1/notify/channels", c.Args.project),
					notifykit.CreateChannelRequest{Name: c.Args.name, Enabled: &on, Settings: st})
			}},
		"notify channel-delete": {Summary: "delete a channel no rule names", Flags: withID("channel id"), Run: notifyDelete("/api/v1/notify/channels/")},
		"notify rules":          {Summary: "list a project's notification rules", Flags: project, Run: notifyGet("/api/v1/notify/rules", nil)},
		"notify rule-add": {Summary: "add a rule: which outcomes of the project's tasks go to which channels", Flags: func(fs *flag.FlagSet, a *Args) {
			project(fs, a)
			fs.StringVar(&a.name, "name", "", "rule name (required)")
			fs.StringVar(&a.notify.channels, "channel", "", "channel ids, comma-separated (required)")
			fs.StringVar(&a.notify.kinds, "kinds", "", "outcomes, comma-separated (default failed,timed_out,lost; also cancelled, recovered, succeeded, script)")
			fs.BoolVar(&a.notify.disabled, "disabled", false, "add it disabled")
		}, Run: func(c *Client, ctx context.Context) error {
			a := c.Args
			if err := required("project", a.project, "name", a.name, "channel", a.notify.channels); err != nil {
				return err
			}
			on := !a.notify.disabled
			req := notifykit.RuleRequest{Name: a.name, Channels: splitList(a.notify.channels), Kinds: splitList(a.notify.kinds), Enabled: &on}
			return c.call(ctx, http.MethodPost, notifyPath("/api/v1/notify/rules", a.project), req)
		}},
		"notify rule-delete": {Summary: "delete a rule", Flags: withID("rule id"), Run: notifyDelete("/api/v1/notify/rules/")},
		"notify test": {Summary: "send a test message through a channel now and print the attempt", Flags: withID("channel id"),
			Run: func(c *Client, ctx context.Context) error {
				if err := required("project", c.Args.project, "id", c.Args.id); err != nil {
					return err
				}
				return c.call(ctx, http.MethodPost, notifyPath("/api/v1/notify/channels/"+url.PathEscape(c.Args.id)+"/test", c.Args.project), nil)
			}},
		"notify deliveries": {Summary: "the project's delivery log, newest first, with every attempt", Flags: func(fs *flag.FlagSet, a *Args) {
			project(fs, a)
			fs.StringVar(&a.notify.status, "status", "", "only this status: "+strings.Join(notifykit.DeliveryStatuses, ", "))
			fs.IntVar(&a.notify.limit, "limit", 0, "deliveries per page (default 50)")
		}, Run: notifyGet("/api/v1/notify/deliveries", func(a Args, v url.Values) {
			v.Set("status", a.notify.status)
			if a.notify.limit > 0 {
				v.Set("limit", strconv.Itoa(a.notify.limit))
			}
		})},
	}
}

func notifyPath(path, project string) string {
	return path + "?" + url.Values{"project": {project}}.Encode()
}

func notifyGet(path string, more func(Args, url.Values)) func(*Client, context.Context) error {
	return get(path, func(a Args) url.Values {
		v := url.Values{"project": {a.project}}
		if more != nil {
			more(a, v)
		}
		return v
	})
}

func notifyDelete(prefix string) func(*Client, context.Context) error {
	return func(c *Client, ctx context.Context) error {
		if err := required("project", c.Args.project, "id", c.Args.id); err != nil {
			return err
		}
		return c.call(ctx, http.MethodDelete, notifyPath(prefix+url.PathEscape(c.Args.id), c.Args.project), nil)
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// readNotifySettings reads --settings-file (or stdin for "-"), bounded,
// strictly (an unknown field is refused, naming it).
func (c *Client) readNotifySettings(st *notifykit.ChannelSettings) error {
	name := c.Args.notify.settingsFile
	if name == "" {
		return errs.Invalidf("settings-file", "required: the channel's settings as JSON (a file, or - for stdin)")
	}
	r := c.Args.notify.settingsFileReader
	if r == nil && name == "-" {
		r = os.Stdin
	}
	if r == nil {
		f, err := os.Open(name)
		if err != nil {
			return errs.Invalidf("settings-file", "cannot open it: %v", err)
		}
		defer f.Close()
		r = f
	}
	const limit = 64 << 10
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return err
	}
	if len(data) > limit {
		return errs.TooLargef("settings-file", "larger than %d bytes", limit)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(st); err != nil {
		return errs.Invalidf("settings-file", "not channel settings JSON: %v", err)
	}
	return nil
}

// notifyPrinters are the notify commands' text forms (credentials are
// never in the answers they print).
func notifyPrinters() map[string]Printer {
	return map[string]Printer{
		"notify channels": one(func(w io.Writer, _ Args, l listView[notifykit.NotifyChannel]) error {
			t := newTable(w, "ID", "NAME", "KIND", "ENABLED", "SERVER", "CREDENTIALS SET")
			for _, ch := range l.Items {
				t.row(ch.ID, ch.Name, ch.Kind, strconv.FormatBool(ch.Enabled), ch.Settings.Server, strings.Join(ch.Settings.SecretsSet, ","))
			}
			return t.end(w, "")
		}),
		"notify channel-add": one(said[notifykit.NotifyChannel](func(ch notifykit.NotifyChannel) string {
			return fmt.Sprintf("added %s channel %s", ch.Kind, named(ch.Name, ch.ID))
		})),
		"notify channel-delete": func(w io.Writer, a Args, _ []byte) error {
			_, err := fmt.Fprintf(w, "deleted channel %s\n", a.id)
			return err
		},
		"notify rules": one(func(w io.Writer, _ Args, l listView[notifykit.NotifyRule]) error {
			t := newTable(w, "ID", "NAME", "KINDS", "CHANNELS", "ENABLED")
			for _, r := range l.Items {
				t.row(r.ID, r.Name, strings.Join(r.Kinds, ","), strings.Join(r.Channels, ","), strconv.FormatBool(r.Enabled))
			}
			return t.end(w, "")
		}),
		"notify rule-add": one(said[notifykit.NotifyRule](func(r notifykit.NotifyRule) string {
			return fmt.Sprintf("added rule %s: %s → %s", named(r.Name, r.ID), strings.Join(r.Kinds, ","), strings.Join(r.Channels, ","))
		})),
		"notify rule-delete": func(w io.Writer, a Args, _ []byte) error {
			_, err := fmt.Fprintf(w, "deleted rule %s\n", a.id)
			return err
		},
		"notify test": one(func(w io.Writer, _ Args, d notifykit.NotifyDelivery) error {
			return printDeliveries(w, []notifykit.NotifyDelivery{d}, 0)
		}),
		"notify deliveries": one(func(w io.Writer, _ Args, l notifykit.DeliveryList) error {
			return printDeliveries(w, l.Items, l.NextBefore)
		}),
	}
}

func printDeliveries(w io.Writer, ds []notifykit.NotifyDelivery, nextBefore int64) error {
	t := newTable(w, "ID", "KIND", "CHANNEL", "STATUS", "ATTEMPTS", "LAST", "ERROR")
	for _, d := range ds {
		last := ""
		if d.LastStatus != 0 {
			last = strconv.Itoa(d.LastStatus)
		}
		t.row(strconv.FormatInt(d.ID, 10), d.Kind, d.ChannelID, d.Status, strconv.Itoa(d.Attempts), last, d.LastError)
	}
	next := ""
	if nextBefore > 0 {
		next = strconv.FormatInt(nextBefore, 10)
	}
	return t.end(w, next)
}
