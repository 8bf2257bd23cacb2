package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ql3/ql3/edge/httpapi"
)

// The token, app and user commands (ADR 0048, 0049): scoped API tokens,
// QingLong Open API apps, and panel accounts. Secrets are printed once, at
// creation; passwords are read from stdin, never from the command line.

const tokenUsage = `Usage: ql3-edge token <list|create|revoke> [flags] [arguments]

  list     list API tokens (never their secrets)
  create   create a scoped token; it is printed once:
              token create --name ci --scope runs --scope read-only --expires 720h
  revoke   revoke tokens:  token revoke ID [ID...]

Scopes: read-only (every read but the audit log and the access lists), runs (run now,
cancel, and reads), envs (the env store), scripts (the scripts folder), admin (everything).
`

const appUsage = `Usage: ql3-edge app <list|create|rm> [flags] [arguments]

  list     list QingLong Open API apps (never their secrets)
  create   create an app; its client_id and client_secret are printed once:
              app create --name refresher --scope envs
  rm       delete apps and their tokens:  app rm ID [ID...]

Scopes: envs, crons, scripts, logs, system. QingLong tools get a token with
GET /open/auth/token?client_id=…&client_secret=… and call /open/envs, /open/crons.
`

const userUsage = `Usage: ql3-edge user <list|add|passwd|rm|totp-setup|totp-on|totp-off|signins> [flags] [arguments]

  list        list accounts
  add         add an account; the password comes from stdin:  user add alice < pw.txt
  passwd      set a password from stdin (also lifts a lock):  user passwd alice < pw.txt
  rm          delete an account
  totp-setup  print a fresh second-factor secret and its otpauth:// URI (nothing is stored)
  totp-on     turn the second factor on:  user totp-on alice --secret S --code 123456
  totp-off    turn it off
  signins     the sign-in log, newest first

Ten wrong passwords in a row lock an account for 15 minutes.
`

func tokenCmd(ctx context.Context, e Env, args []string) error {
	return dispatch(ctx, e, "token", tokenUsage, args, map[string]subcommand{
		"list": tokenList, "ls": tokenList, "create": tokenCreate, "revoke": tokenRevoke, "rm": tokenRevoke,
	})
}

func appCmd(ctx context.Context, e Env, args []string) error {
	return dispatch(ctx, e, "app", appUsage, args, map[string]subcommand{
		"list": appList, "ls": appList, "create": appCreate, "rm": appRemove, "delete": appRemove,
	})
}

func userCmd(ctx context.Context, e Env, args []string) error {
	return dispatch(ctx, e, "user", userUsage, args, map[string]subcommand{
		"list": userList, "ls": userList, "add": userAdd, "passwd": userPasswd, "rm": userRemove,
		"totp-setup": userTOTPSetup, "totp-on": userTOTPOn, "totp-off": userTOTPOff, "signins": userSignIns,
	})
}

func tokenList(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "token list", "[flags]", "List API tokens, newest first; secrets are never shown.")
	var cf clientFlags
	cf.register(fs)
	l, done, err := fetch[httpapi.List[httpapi.APIToken]](ctx, e, fs, &cf, args, 0, "no arguments",
		func(_ []string) request { return request{method: http.MethodGet, path: "/api/v1/tokens"} })
	if err != nil || done {
		return err
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tLIVE\tEXPIRES\tCREATED")
	for _, t := range l.Items {
		exp := "never"
		if t.ExpiresAtMs != 0 {
			exp = fmtTime(t.ExpiresAtMs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\n", t.ID, t.Name, strings.Join(t.Scopes, ","), t.Live, exp, fmtTime(t.CreatedAtMs))
	}
	return tw.Flush()
}

func tokenCreate(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "token create", "--name NAME --scope SCOPE... [--expires DURATION]",
		"Create a scoped API token. It is printed once; only its digest is stored.")
	var cf clientFlags
	cf.register(fs)
	name := fs.String("name", "", "a name to tell the token apart")
	var scopes stringList
	fs.Var(&scopes, "scope", "read-only, runs, envs, scripts or admin (repeatable)")
	expires := fs.Duration("expires", 0, "lifetime, e.g. 720h (default: never)")
	_, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	if *expires < 0 {
		return usagef("--expires must be positive")
	}
	req := httpapi.CreateTokenRequest{Name: *name, Scopes: scopes}
	if *expires > 0 {
		req.ExpiresAtMs = time.Now().Add(*expires).UnixMilli()
	}
	var out httpapi.CreatedToken
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/tokens", body: req}, &out); err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.Stdout, out)
	}
	fmt.Fprintf(e.Stderr, "created token %s (%s); it is shown this once:\n", out.ID, strings.Join(out.Scopes, ","))
	fmt.Fprintln(e.Stdout, out.Token)
	return nil
}

// eachArg runs a DELETE on path(arg) for every positional argument.
func eachArg(ctx context.Context, e Env, name, synopsis, about, verb string, path func(string) string, args []string) error {
	fs := newFlagSet(e, name, synopsis, about)
	var cf clientFlags
	cf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("expected at least one argument: %s", synopsis)
	}
	c, err := cf.client(e)
	if err != nil {
		return err
	}
	ctx, cancel := withTimeout(ctx, cf.timeout)
	defer cancel()
	for _, a := range pos {
		if err := c.do(ctx, request{method: http.MethodDelete, path: path(a)}, nil); err != nil {
			return err
		}
		fmt.Fprintf(e.Stdout, "%s %s\n", verb, a)
	}
	return nil
}

func tokenRevoke(ctx context.Context, e Env, args []string) error {
	return eachArg(ctx, e, "token revoke", "ID [ID...]", "Revoke API tokens.", "revoked",
		func(id string) string { return "/api/v1/tokens/" + url.PathEscape(id) }, args)
}

func appList(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "app list", "[flags]", "List Open API apps; secrets are never shown.")
	var cf clientFlags
	cf.register(fs)
	l, done, err := fetch[httpapi.List[httpapi.OpenAppView]](ctx, e, fs, &cf, args, 0, "no arguments",
		func(_ []string) request { return request{method: http.MethodGet, path: "/api/v1/apps"} })
	if err != nil || done {
		return err
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tCLIENT_ID\tSCOPES\tCREATED")
	for _, a := range l.Items {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", a.ID, a.Name, a.ClientID, strings.Join(a.Scopes, ","), fmtTime(a.CreatedAtMs))
	}
	return tw.Flush()
}

func appCreate(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "app create", "--name NAME --scope SCOPE...",
		"Create a QingLong Open API app. Its client secret is printed once; only its digest is stored.")
	var cf clientFlags
	cf.register(fs)
	name := fs.String("name", "", "the app's name")
	var scopes stringList
	fs.Var(&scopes, "scope", "envs, crons, scripts, logs or system (repeatable)")
	out, done, err := fetch[httpapi.CreatedApp](ctx, e, fs, &cf, args, 0, "no arguments",
		func(_ []string) request {
			return request{method: http.MethodPost, path: "/api/v1/apps", body: httpapi.CreateAppRequest{Name: *name, Scopes: scopes}}
		})
	if err != nil || done {
		return err
	}
	fmt.Fprintf(e.Stderr, "created app %d (%s); the secret is shown this once\n", out.ID, strings.Join(out.Scopes, ","))
	fmt.Fprintf(e.Stdout, "client_id=%s\nclient_secret=%s\n", out.ClientID, out.ClientSecret)
	return nil
}

func appRemove(ctx context.Context, e Env, args []string) error {
	return eachArg(ctx, e, "app rm", "ID [ID...]", "Delete Open API apps and their tokens.", "deleted",
		func(id string) string { return "/api/v1/apps/" + url.PathEscape(id) }, args)
}

func userPath(name string) string { return "/api/v1/users/" + url.PathEscape(name) }

func userList(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "user list", "[flags]", "List accounts.")
	var cf clientFlags
	cf.register(fs)
	l, done, err := fetch[httpapi.List[httpapi.UserView]](ctx, e, fs, &cf, args, 0, "no arguments",
		func(_ []string) request { return request{method: http.MethodGet, path: "/api/v1/users"} })
	if err != nil || done {
		return err
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USERNAME\tTOTP\tLOCKED_UNTIL\tCREATED")
	for _, u := range l.Items {
		locked := "-"
		if u.LockedUntilMs != 0 {
			locked = fmtTime(u.LockedUntilMs)
		}
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\n", u.Username, u.TOTP, locked, fmtTime(u.CreatedAtMs))
	}
	return tw.Flush()
}

// readPassword reads a password from stdin (one trailing newline dropped).
func readPassword(e Env) (string, error) {
	data, err := readAllLimited(e.Stdin, 260)
	if err != nil {
		return "", fmt.Errorf("reading the password from stdin: %w", err)
	}
	return strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r"), nil
}

func userAdd(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "user add", "USERNAME < password", "Add an account; the password (8..256 characters) is read from stdin.")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "USERNAME")
	if err != nil {
		return err
	}
	defer cancel()
	pw, err := readPassword(e)
	if err != nil {
		return err
	}
	var out httpapi.UserView
	if err := c.do(ctx, request{method: http.MethodPost, path: "/api/v1/users", body: httpapi.CreateUserRequest{Username: pos[0], Password: pw}}, &out); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "added %s\n", out.Username)
	return nil
}

func userPasswd(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "user passwd", "USERNAME < password", "Set an account's password from stdin; this also lifts a lock.")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "USERNAME")
	if err != nil {
		return err
	}
	defer cancel()
	pw, err := readPassword(e)
	if err != nil {
		return err
	}
	if err := c.do(ctx, request{method: http.MethodPut, path: userPath(pos[0]) + "/password", body: httpapi.PasswordRequest{Password: pw}}, nil); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "password of %s set\n", pos[0])
	return nil
}

func userRemove(ctx context.Context, e Env, args []string) error {
	return eachArg(ctx, e, "user rm", "USERNAME [USERNAME...]", "Delete accounts.", "deleted", userPath, args)
}

func userTOTPSetup(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "user totp-setup", "USERNAME", "Print a fresh second-factor secret and its otpauth:// URI; nothing is stored until totp-on.")
	var cf clientFlags
	cf.register(fs)
	var user string
	out, done, err := fetch[httpapi.TOTPSetup](ctx, e, fs, &cf, args, 1, "USERNAME", func(pos []string) request {
		user = pos[0]
		return request{method: http.MethodPost, path: userPath(user) + "/totp/setup"}
	})
	if err != nil || done {
		return err
	}
	fmt.Fprintf(e.Stdout, "secret %s\nuri    %s\n", out.Secret, out.URI)
	fmt.Fprintf(e.Stderr, "add it to an authenticator app, then: ql3-edge user totp-on %s --secret %s --code <code>\n", user, out.Secret)
	return nil
}

func userTOTPOn(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "user totp-on", "USERNAME --secret S --code C", "Turn the second factor on, proven by a current code.")
	var cf clientFlags
	cf.register(fs)
	secret := fs.String("secret", "", "the secret totp-setup printed")
	code := fs.String("code", "", "the code the authenticator app shows now")
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 1, "USERNAME")
	if err != nil {
		return err
	}
	defer cancel()
	if err := c.do(ctx, request{method: http.MethodPut, path: userPath(pos[0]) + "/totp", body: httpapi.TOTPConfirm{Secret: *secret, Code: *code}}, nil); err != nil {
		return err
	}
	fmt.Fprintf(e.Stdout, "second factor of %s on\n", pos[0])
	return nil
}

func userTOTPOff(ctx context.Context, e Env, args []string) error {
	return eachArg(ctx, e, "user totp-off", "USERNAME", "Turn the second factor off.", "second factor off for",
		func(n string) string { return userPath(n) + "/totp" }, args)
}

func userSignIns(ctx context.Context, e Env, args []string) error {
	fs := newFlagSet(e, "user signins", "[flags]", "Print the sign-in log, newest first.")
	var cf clientFlags
	cf.register(fs)
	limit := fs.Int("limit", 0, "lines (default 50, max 200)")
	before := fs.String("before", "", "lines before this seq (printed at the end of a full page)")
	_, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	q := url.Values{}
	if *limit != 0 {
		q.Set("limit", fmt.Sprint(*limit))
	}
	if *before != "" {
		q.Set("before", *before)
	}
	var l httpapi.List[httpapi.SignInLine]
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/signins", query: q}, &l); err != nil {
		return err
	}
	if cf.json {
		return printJSON(e.Stdout, l)
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tAT\tUSERNAME\tOUTCOME\tFROM")
	for _, s := range l.Items {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", s.Seq, fmtTime(s.AtMs), s.Username, s.Outcome, s.Remote)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if l.NextCursor != "" {
		fmt.Fprintf(e.Stdout, "more: --before %s\n", l.NextCursor)
	}
	return nil
}
