package app

import (
	"bufio"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ql3/ql3/controlplane/postgres/accounts"
	"github.com/ql3/ql3/core/access"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/password"
	"github.com/ql3/ql3/core/totp"
)

// accessArgs are the flags of token scopes and the user commands (ADR 0060).
type accessArgs struct {
	scopes       string // token create: comma-separated core/access scopes
	expires      string // token create: a duration (720h) or an RFC 3339 time
	passwordFile string // user add: the file holding the password ("-": stdin)
	secret, code string // user totp-setup: confirm a secret with a current code
}

func tokenScopeFlags(fs *flag.FlagSet, a *cmdArgs) {
	fs.StringVar(&a.access.scopes, "scope", string(access.Admin), "comma-separated scopes: read-only, runs, envs, scripts, admin")
	fs.StringVar(&a.access.expires, "expires", "", "when the token ends: a duration (720h) or an RFC 3339 time (empty: --ttl)")
}

// tokenScopes reads --scope and --expires (which wins over --ttl).
func (a accessArgs) tokenScopes(ttl time.Duration, now time.Time) ([]string, time.Duration, error) {
	var scopes []string
	for s := range strings.SplitSeq(a.scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			scopes = append(scopes, s)
		}
	}
	if _, err := access.ParseScopes("scope", scopes); err != nil {
		return nil, 0, err
	}
	if a.expires == "" {
		return scopes, ttl, nil
	}
	if d, err := time.ParseDuration(a.expires); err == nil && d > 0 {
		return scopes, d, nil
	}
	at, err := time.Parse(time.RFC3339, a.expires)
	if err != nil || !at.After(now) {
		return nil, 0, errs.Invalidf("expires", "must be a positive duration (720h) or a future RFC 3339 time, got %.40q", a.expires)
	}
	return scopes, at.Sub(now), nil
}

// accessCommands are the token commands (serve.go) and the user commands.
func accessCommands() map[string]command {
	cmds := tokenCommands()
	name := func(fs *flag.FlagSet, a *cmdArgs) { fs.StringVar(&a.name, "name", "", "username (required)") }
	cmds["user add"] = command{summary: "add an account (password read from --password-file, '-' for stdin)",
		flags: func(fs *flag.FlagSet, a *cmdArgs) {
			name(fs, a)
			fs.StringVar(&a.access.passwordFile, "password-file", "-", "file whose first line is the password ('-': stdin)")
		}, run: (*Main).userAdd}
	cmds["user rm"] = command{summary: "delete an account (its sessions end)", flags: name, run: (*Main).userRm}
	cmds["user list"] = command{summary: "list accounts (never hashes or secrets)", run: (*Main).userList}
	cmds["user totp-setup"] = command{summary: "print a fresh second-factor secret; with --secret and --code, turn it on",
		flags: func(fs *flag.FlagSet, a *cmdArgs) {
			name(fs, a)
			fs.StringVar(&a.access.secret, "secret", "", "the secret printed by a first totp-setup")
			fs.StringVar(&a.access.code, "code", "", "a current code from the authenticator app for --secret")
		}, run: (*Main).userTOTPSetup}
	return cmds
}

func (m *Main) accountStore(ctx context.Context) (*accounts.Store, error) {
	if m.args.name == "" {
		return nil, errs.Invalidf("name", "required")
	}
	pool, err := m.openAdminPool(ctx)
	if err != nil {
		return nil, err
	}
	return accounts.New(pool), nil
}

func readPassword(path string) (string, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", errs.Invalidf("password-file", "%v", err)
		}
		defer f.Close()
		r = f
	}
	line, err := bufio.NewReader(io.LimitReader(r, password.MaxLen+2)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

func (m *Main) userAdd(ctx context.Context) error {
	if err := password.CheckUsername(m.args.name); err != nil {
		return err
	}
	pw, err := readPassword(m.args.access.passwordFile)
	if err != nil {
		return err
	}
	h, err := password.Hash(pw)
	if err != nil {
		return err
	}
	st, err := m.accountStore(ctx)
	if err != nil {
		return err
	}
	u, err := st.CreateAccount(cliActor(ctx), m.args.name, h, time.Now().UnixMilli())
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "added account %s\n", u.Username)
	return err
}

func (m *Main) userRm(ctx context.Context) error {
	st, err := m.accountStore(ctx)
	if err != nil {
		return err
	}
	if err := st.DeleteAccount(cliActor(ctx), m.args.name); err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "deleted account %s\n", m.args.name)
	return err
}

func (m *Main) userList(ctx context.Context) error {
	pool, err := m.openAdminPool(ctx)
	if err != nil {
		return err
	}
	us, err := accounts.New(pool).ListAccounts(ctx)
	if err != nil {
		return err
	}
	type view struct {
		Username      string `json:"username"`
		TOTP          bool   `json:"totp"`
		LockedUntilMs int64  `json:"lockedUntilMs,omitempty"`
		CreatedAtMs   int64  `json:"createdAtMs"`
	}
	out := make([]view, 0, len(us))
	for _, u := range us {
		v := view{Username: u.Username, TOTP: u.TOTPSecret != "", CreatedAtMs: u.CreatedAtMs}
		if u.Lock.LockedUntil > time.Now().UnixMilli() {
			v.LockedUntilMs = u.Lock.LockedUntil
		}
		out = append(out, v)
	}
	return m.outputValue(out)
}

func (m *Main) userTOTPSetup(ctx context.Context) error {
	st, err := m.accountStore(ctx)
	if err != nil {
		return err
	}
	a := m.args.access
	if a.secret == "" {
		if _, err := st.GetAccount(ctx, m.args.name); err != nil {
			return err
		}
		secret, err := totp.NewSecret(rand.Reader)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(m.Stdout, "secret %s\nuri    %s\nadd it to an authenticator app, then run: ql3-control user totp-setup --name %s --secret %s --code <code>\n",
			secret, totp.URI("ql3-control", m.args.name, secret), m.args.name, secret)
		return err
	}
	key, err := totp.DecodeSecret(a.secret)
	if err != nil {
		return err
	}
	if _, ok := totp.Verify(key, a.code, time.Now(), 0); !ok {
		return errs.Invalidf("code", "does not match the secret at this machine's time: check the app's clock")
	}
	if err := st.SetTOTP(cliActor(ctx), m.args.name, a.secret); err != nil {
		return err
	}
	_, err = fmt.Fprintf(m.Stdout, "second factor on for %s\n", m.args.name)
	return err
}
