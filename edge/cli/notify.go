package cli

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/edge/httpapi"
)

const notifyUsage = `Usage: ql3-edge notify <channel|rule|test|deliveries> ...

  channel list|add|edit|rm   where notifications go (webhook, telegram, bark, serverchan, pushplus,
                             dingtalk, wecom, feishu, gotify, ntfy, pushdeer, email)
  rule list|add|edit|rm      which outcomes go to which channels, quiet hours, coalescing
  test CHANNEL_ID            send a test message now and print the attempt
  deliveries                 the delivery log: attempts, status codes, errors, latency

Credentials (token, secret, password) are never taken from the command line: give them in a
JSON file (--secrets-file, - for stdin), e.g. {"token": "123:abc"}; they are never printed back.
Scripts send their own messages with sendNotify (sendNotify.js / notify.py in the scripts folder)
to the channels of rules with kind "script".
`

func notifyCmd(ctx context.Context, e Env, args []string) error {
	return dispatch(ctx, e, "notify", notifyUsage, args, map[string]subcommand{
		"channel": notifyChannel, "channels": notifyChannel, "rule": notifyRule, "rules": notifyRule,
		"test": notifyTest, "deliveries": notifyDeliveries,
	})
}

func notifyChannel(ctx context.Context, e Env, args []string) error {
	return dispatch(ctx, e, "notify channel", notifyUsage, args, map[string]subcommand{
		"list": channelList, "ls": channelList, "add": channelAdd, "edit": channelEdit, "rm": channelRemove, "delete": channelRemove,
	})
}

func notifyRule(ctx context.Context, e Env, args []string) error {
	return dispatch(ctx, e, "notify rule", notifyUsage, args, map[string]subcommand{
		"list": ruleList, "ls": ruleList, "add": ruleAdd, "edit": ruleEdit, "rm": ruleRemove, "delete": ruleRemove,
	})
}

// channelFlags are the settings a channel takes on the command line.
type channelFlags struct {
	name, kind, server, chatID, topic, proxy, smtpHost, username, from, secrets string
	smtpPort                                                                    int
	to                                                                          stringList
	disabled                                                                    bool
}

func (c *channelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.name, "name", "", "channel name")
	fs.StringVar(&c.kind, "kind", "", "webhook, telegram, bark, serverchan, pushplus, dingtalk, wecom, feishu, gotify, ntfy, pushdeer or email")
	fs.StringVar(&c.server, "server", "", "webhook URL, or a self-hosted server (bark, gotify, ntfy, pushdeer, a Telegram API mirror)")
	fs.StringVar(&c.chatID, "chat-id", "", "Telegram chat id")
	fs.StringVar(&c.topic, "topic", "", "ntfy topic, PushPlus group")
	fs.StringVar(&c.proxy, "proxy", "", "http:// or https:// proxy for this channel")
	fs.StringVar(&c.smtpHost, "smtp-host", "", "email: SMTP server")
	fs.IntVar(&c.smtpPort, "smtp-port", 0, "email: SMTP port (465: implicit TLS; otherwise STARTTLS when offered)")
	fs.StringVar(&c.username, "username", "", "email: SMTP user")
	fs.StringVar(&c.from, "from", "", "email: sender address")
	fs.Var(&c.to, "to", "email: recipient (repeatable)")
	fs.StringVar(&c.secrets, "secrets-file", "", `JSON file with {"token", "secret", "password", "headers": [{"name","value"}]} (- : stdin)`)
	fs.BoolVar(&c.disabled, "disabled", false, "add it disabled")
}

// settings builds the settings from the flags and the secrets file.
func (c *channelFlags) settings(e Env) (httpapi.ChannelSettings, error) {
	s := httpapi.ChannelSettings{Kind: c.kind, Server: c.server, ChatID: c.chatID, Topic: c.topic, Proxy: c.proxy,
		SMTPHost: c.smtpHost, SMTPPort: c.smtpPort, Username: c.username, From: c.from, To: c.to}
	if c.secrets == "" {
		return s, nil
	}
	var r = e.Stdin
	if c.secrets != "-" {
		f, err := os.Open(c.secrets)
		if err != nil {
			return s, err
		}
		defer f.Close()
		r = f
	}
	data, err := readAllLimited(r, 64<<10)
	if err != nil {
		return s, fmt.Errorf("reading the secrets file: %w", err)
	}
	var sec struct {
		Token    string                 `json:"token"`
		Secret   string                 `json:"secret"`
		Password string                 `json:"password"`
		Headers  []httpapi.NotifyHeader `json:"headers"`
	}
	if err := canonjson.DecodeStrict(data, canonjson.Limits{MaxBytes: 64 << 10, MaxDepth: 4, MaxEntries: 64, MaxString: 8 << 10}, &sec); err != nil {
		return s, fmt.Errorf("the secrets file: %w", err)
	}
	s.Token, s.Secret, s.Password, s.Headers = sec.Token, sec.Secret, sec.Password, sec.Headers
	return s, nil
}

func printChannel(e Env, cf clientFlags, c httpapi.NotifyChannel, verb string) error {
	if cf.json {
		return printJSON(e.Stdout, c)
	}
	fmt.Fprintf(e.Stdout, "%s channel %s (%s, %s), enabled %v\n", verb, c.Name, c.ID, c.Kind, c.Enabled)
	return nil
}

func channelList(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "notify channel list", "[flags]", "List notification channels; credentials are never shown.")
	var cf clientFlags
	cf.register(fs)
	out, done, err := fetch[httpapi.List[httpapi.NotifyChannel]](ctx, e, fs, &cf, args, 0, "no arguments",
		func(_ []string) request { return request{method: http.MethodGet, path: "/api/v1/notify/channels"} })
	if err != nil || done {
		return err
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tKIND\tENABLED\tSERVER\tCREDENTIALS SET")
	for _, v := range out.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\n", v.ID, v.Name, v.Kind, v.Enabled, v.Settings.Server, strings.Join(v.Settings.SecretsSet, ","))
	}
	return tw.Flush()
}

func channelAdd(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "notify channel add", "--name NAME --kind KIND [flags]", "Add a notification channel.")
	var cf clientFlags
	cf.register(fs)
	var ch channelFlags
	ch.register(fs)
	_, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	if ch.name == "" || ch.kind == "" {
		return usagef("--name and --kind are required")
	}
	st, err := ch.settings(e)
	if err != nil {
		return err
	}
	on := !ch.disabled
	var out httpapi.NotifyChannel
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/notify/channels",
		body: httpapi.CreateChannelRequest{Name: ch.name, Enabled: &on, Settings: st}}, &out); err != nil {
		return err
	}
	return printChannel(e, cf, out, "added")
}

func channelEdit(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "notify channel edit", "ID [flags]",
		"Change a channel. Settings flags replace the settings (credentials not given are kept); --enabled switches it.")
	var cf clientFlags
	cf.register(fs)
	var ch channelFlags
	ch.register(fs)
	enabled := fs.Bool("enabled", true, "enable (--enabled=false disables)")
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "ID")
	if err != nil {
		return err
	}
	defer cancel()
	var req httpapi.PatchChannelRequest
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "name":
			req.Name = &ch.name
		case "enabled":
			req.Enabled = enabled
		case "kind", "server", "chat-id", "topic", "proxy", "smtp-host", "smtp-port", "username", "from", "to", "secrets-file":
			req.Settings = &httpapi.ChannelSettings{}
		}
	})
	if req.Settings != nil {
		if ch.kind == "" {
			return usagef("--kind is required when settings change")
		}
		st, err := ch.settings(e)
		if err != nil {
			return err
		}
		req.Settings = &st
	}
	var out httpapi.NotifyChannel
	if err := c.do(ctx, request{method: http.MethodPatch, path: "/api/v1/notify/channels/" + url.PathEscape(pos[0]), body: req}, &out); err != nil {
		return err
	}
	return printChannel(e, cf, out, "changed")
}

func removeCmd(what, path string) subcommand {
	return func(ctx context.Context, e Env, args []string) error {
		fs := newFlagSet(e, "notify "+what+" rm", "ID", "Delete a "+what+" (audited).")
		var cf clientFlags
		cf.register(fs)
		pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "ID")
		if err != nil {
			return err
		}
		defer cancel()
		if err := c.do(ctx, request{method: http.MethodDelete, path: path + url.PathEscape(pos[0])}, nil); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "deleted %s %s\n", what, pos[0])
		return nil
	}
}

var (
	channelRemove = removeCmd("channel", "/api/v1/notify/channels/")
	ruleRemove    = removeCmd("rule", "/api/v1/notify/rules/")
)

// ruleFlags are a rule's settings on the command line.
type ruleFlags struct {
	name, quiet, quietZone, quietMode string
	kinds, tasks, labels, channels    stringList
	coalesceMax                       int
	coalesceWindow                    time.Duration
	disabled                          bool
}

func (r *ruleFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.name, "name", "", "rule name")
	fs.Var(&r.channels, "channel", "channel id (repeatable)")
	fs.Var(&r.kinds, "kind", "failed, timed_out, lost, cancelled, recovered, succeeded or script (repeatable; default failed, timed_out, lost)")
	fs.Var(&r.tasks, "task", "only this task id (repeatable; none and no --label: every task)")
	fs.Var(&r.labels, "label", "only tasks with this placement label key=value (repeatable)")
	fs.StringVar(&r.quiet, "quiet", "", "quiet hours HH:MM-HH:MM, e.g. 22:00-07:00")
	fs.StringVar(&r.quietZone, "quiet-zone", "UTC", "time zone of the quiet hours (IANA, e.g. Asia/Shanghai)")
	fs.StringVar(&r.quietMode, "quiet-mode", "hold", "hold (one digest when the quiet hours end) or drop")
	fs.IntVar(&r.coalesceMax, "coalesce-max", 0, "at most this many messages per task per window, then a summary (0: no cap)")
	fs.DurationVar(&r.coalesceWindow, "coalesce-window", 0, "the coalescing window, e.g. 10m")
	fs.BoolVar(&r.disabled, "disabled", false, "add it disabled")
}

func (r *ruleFlags) request() (httpapi.RuleRequest, error) {
	on := !r.disabled
	req := httpapi.RuleRequest{Name: r.name, Kinds: r.kinds, TaskIDs: r.tasks, Labels: r.labels, Channels: r.channels, Enabled: &on}
	if r.quiet != "" {
		start, end, ok := strings.Cut(r.quiet, "-")
		if !ok {
			return req, usagef("--quiet must be HH:MM-HH:MM, got %q", r.quiet)
		}
		req.Quiet = &httpapi.QuietHoursBody{Zone: r.quietZone, Start: start, End: end, Mode: r.quietMode}
	}
	if r.coalesceMax != 0 || r.coalesceWindow != 0 {
		req.Coalesce = &httpapi.CoalesceBody{Max: r.coalesceMax, WindowMs: r.coalesceWindow.Milliseconds()}
	}
	return req, nil
}

func printRule(e Env, cf clientFlags, r httpapi.NotifyRule, verb string) error {
	if cf.json {
		return printJSON(e.Stdout, r)
	}
	fmt.Fprintf(e.Stdout, "%s rule %s (%s): %s → %s, enabled %v\n", verb, r.Name, r.ID, strings.Join(r.Kinds, ","), strings.Join(r.Channels, ","), r.Enabled)
	return nil
}

func ruleList(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "notify rule list", "[flags]", "List notification rules.")
	var cf clientFlags
	cf.register(fs)
	out, done, err := fetch[httpapi.List[httpapi.NotifyRule]](ctx, e, fs, &cf, args, 0, "no arguments",
		func(_ []string) request { return request{method: http.MethodGet, path: "/api/v1/notify/rules"} })
	if err != nil || done {
		return err
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tKINDS\tCHANNELS\tSCOPE\tENABLED")
	for _, r := range out.Items {
		scope := "every task"
		if len(r.TaskIDs)+len(r.Labels) > 0 {
			scope = strings.Join(append(append([]string{}, r.TaskIDs...), r.Labels...), ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", r.ID, r.Name, strings.Join(r.Kinds, ","), strings.Join(r.Channels, ","), scope, r.Enabled)
	}
	return tw.Flush()
}

func ruleAdd(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "notify rule add", "--name NAME --channel ID [flags]", "Add a notification rule.")
	var cf clientFlags
	cf.register(fs)
	var rf ruleFlags
	rf.register(fs)
	_, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	req, err := rf.request()
	if err != nil {
		return err
	}
	var out httpapi.NotifyRule
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/notify/rules", body: req}, &out); err != nil {
		return err
	}
	return printRule(e, cf, out, "added")
}

func ruleEdit(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "notify rule edit", "ID [flags]", "Replace a rule with the flags given (the whole rule: give every setting).")
	var cf clientFlags
	cf.register(fs)
	var rf ruleFlags
	rf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "ID")
	if err != nil {
		return err
	}
	defer cancel()
	req, err := rf.request()
	if err != nil {
		return err
	}
	var out httpapi.NotifyRule
	if err := c.do(ctx, request{method: http.MethodPut, path: "/api/v1/notify/rules/" + url.PathEscape(pos[0]), body: req}, &out); err != nil {
		return err
	}
	return printRule(e, cf, out, "replaced")
}

func printDelivery(e Env, d httpapi.NotifyDelivery) {
	fmt.Fprintf(e.Stdout, "delivery %d  %s  %s  channel %s  attempts %d\n", d.ID, d.Kind, d.Status, d.ChannelID, d.Attempts)
	for _, a := range d.Log {
		fmt.Fprintf(e.Stdout, "  #%d %s  status %d  %d ms  %s\n", a.N, time.UnixMilli(a.AtMs).UTC().Format(time.RFC3339), a.StatusCode, a.LatencyMs, a.Error)
	}
}

func notifyTest(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "notify test", "CHANNEL_ID", "Send a test message through a channel now and print the attempt.")
	var cf clientFlags
	cf.register(fs)
	d, done, err := fetch[httpapi.NotifyDelivery](ctx, e, fs, &cf, args, 1, "CHANNEL_ID",
		func(pos []string) request {
			return request{method: http.MethodPost, path: "/api/v1/notify/channels/" + url.PathEscape(pos[0]) + "/test"}
		})
	if err != nil || done {
		return err
	}
	printDelivery(e, d)
	if d.Status != "delivered" {
		return fmt.Errorf("the test message was not accepted: %s", d.LastError)
	}
	return nil
}

func notifyDeliveries(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "notify deliveries", "[flags]", "The delivery log, newest first, with every attempt.")
	var cf clientFlags
	cf.register(fs)
	status := fs.String("status", "", "pending, held, delivered, failed, dropped or digested")
	channel := fs.String("channel", "", "only this channel id")
	runID := fs.String("run", "", "only this run id")
	limit := fs.Int("limit", 0, "page size (default 50, max 200)")
	before := fs.Int64("before", 0, "continue below this delivery id (printed at the end of a full page)")
	_, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	q := url.Values{}
	for k, v := range map[string]string{"status": *status, "channel": *channel, "run": *runID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if *limit != 0 {
		q.Set("limit", fmt.Sprint(*limit))
	}
	if *before != 0 {
		q.Set("before", fmt.Sprint(*before))
	}
	var out httpapi.DeliveryList
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/notify/deliveries", query: q}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.Stdout, out)
	}
	for _, d := range out.Items {
		printDelivery(e, d)
	}
	if out.NextBefore != 0 {
		fmt.Fprintf(e.Stderr, "more: --before %d\n", out.NextBefore)
	}
	return nil
}
