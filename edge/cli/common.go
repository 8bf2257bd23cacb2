package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge/app"
)

// clientFlags are the flags every client command takes.
type clientFlags struct {
	config    string
	addr      string
	dataDir   string
	tokenFile string
	json      bool
	insecure  bool
	timeout   time.Duration
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "JSON config file (default $QL3_CONFIG)")
	fs.StringVar(&c.addr, "addr", "", "server address host:port or URL (default $QL3_ADDR, then 127.0.0.1:5700)")
	fs.StringVar(&c.dataDir, "data-dir", "", "data directory holding admin.token (default $QL3_DATA_DIR, then ./data)")
	fs.StringVar(&c.tokenFile, "token-file", "", "file with the admin token (default $QL3_TOKEN_FILE, then <data dir>/admin.token); $QL3_TOKEN wins over files")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of text")
	fs.BoolVar(&c.insecure, "insecure", false, "send the admin token over plain http:// to a non-loopback server (default $QL3_INSECURE; refused otherwise)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "request timeout (not applied to log follows)")
}

// subcommand is one "ql3-edge <group> <name>" entry point.
type subcommand func(ctx context.Context, env Env, args []string) error

// dispatch runs the subcommand args[0] of group, printing usage for help and
// refusing a missing or unknown name (usage error, exit 2).
func dispatch(ctx context.Context, env Env, group, usage string, args []string, subs map[string]subcommand) error {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return usagef("%s needs a subcommand", group)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(env.Stdout, usage)
		return nil
	}
	if sub, ok := subs[args[0]]; ok {
		return sub(ctx, env, args[1:])
	}
	fmt.Fprint(env.Stderr, usage)
	return usagef("unknown %s subcommand %q", group, args[0])
}

// connect is the start of every client subcommand: parse args, require
// exactly n positional arguments (what names them in the usage error), and
// return them with an API client and a context bounded by --timeout.
func (c *clientFlags) connect(ctx context.Context, env Env, fs *flag.FlagSet, args []string, n int, what string) ([]string, *Client, context.Context, context.CancelFunc, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := exactArgs(pos, n, what); err != nil {
		return nil, nil, nil, nil, err
	}
	cl, err := c.client(env)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	ctx, cancel := withTimeout(ctx, c.timeout)
	return pos, cl, ctx, cancel, nil
}

// client resolves config file, environment and flags into an API client.
func (c *clientFlags) client(env Env) (*Client, error) {
	cfg := app.DefaultConfig()
	path := c.config
	if path == "" {
		path = env.Getenv("QL3_CONFIG")
	}
	if path != "" {
		if err := cfg.LoadConfigFile(path); err != nil {
			return nil, err
		}
	}
	if err := cfg.ApplyEnv(env.Getenv); err != nil {
		return nil, err
	}
	if c.addr != "" {
		cfg.Addr = c.addr
	}
	if c.dataDir != "" {
		cfg.DataDir = c.dataDir
	}
	if c.tokenFile != "" {
		cfg.TokenFile = c.tokenFile
	}
	token := strings.TrimSpace(env.Getenv("QL3_TOKEN"))
	if token == "" {
		t, err := app.ReadTokenFile(cfg.TokenFilePath())
		switch {
		case err == nil:
			token = t
		case errors.Is(err, fs.ErrNotExist) && c.tokenFile == "" && env.Getenv("QL3_TOKEN_FILE") == "":
			// No token: reads on loopback still work; mutations get a 401
			// with a hint.
		default:
			return nil, err
		}
	}
	insecure := c.insecure
	if v := env.Getenv("QL3_INSECURE"); v != "" && !insecure {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, errs.Invalidf("QL3_INSECURE", "expected true or false, got %q", v)
		}
		insecure = b
	}
	return NewClient(cfg.Addr, token, insecure)
}

// parseArgs parses flags anywhere among the positional arguments (so
// `task show hello --json` works); everything after "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		consumed := args[:len(args)-len(rest)]
		if len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ", ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// fmtTime renders epoch ms in the local zone; 0 is "-".
func fmtTime(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).Local().Format("2006-01-02 15:04:05.000 MST")
}

func exactArgs(pos []string, n int, what string) error {
	if len(pos) != n {
		return usagef("expected %s, got %d argument(s)", what, len(pos))
	}
	return nil
}

func fmtExit(code *int) string {
	if code == nil {
		return "-"
	}
	return fmt.Sprint(*code)
}

// endPage flushes a list table and, when the page was full, prints how to
// ask for the next one.
func endPage(env Env, tw *tabwriter.Writer, nextCursor string) error {
	if err := tw.Flush(); err != nil {
		return err
	}
	if nextCursor != "" {
		fmt.Fprintf(env.Stdout, "more: --cursor %s\n", nextCursor)
	}
	return nil
}

// fetch connects (want positional arguments, named by usage), sends the
// request built from them and decodes the answer into a T. With --json it
// prints the answer itself and done is true; otherwise the caller prints
// its text. The one shape of the read-and-print commands.
func fetch[T any](ctx context.Context, e Env, fs *flag.FlagSet, cf *clientFlags, args []string, want int, usage string,
	build func(pos []string) request) (out T, done bool, err error) {
	pos, c, ctx, cancel, err := cf.connect(ctx, e, fs, args, want, usage)
	if err != nil {
		return out, false, err
	}
	defer cancel()
	if err := c.do(ctx, build(pos), &out); err != nil {
		return out, false, err
	}
	if cf.json {
		return out, true, printJSON(e.Stdout, out)
	}
	return out, false, nil
}
