package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func testEnv(env map[string]string) (Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }, Version: "v-test"}, &out, &errOut
}

func TestParseArgsInterspersed(t *testing.T) {
	cases := []struct {
		args     []string
		wantPos  []string
		wantJSON bool
		wantName string
	}{
		{[]string{"hello", "--json"}, []string{"hello"}, true, ""},
		{[]string{"--json", "hello"}, []string{"hello"}, true, ""},
		{[]string{"--name", "x", "--", "echo", "--json", "hi"}, []string{"echo", "--json", "hi"}, false, "x"},
		{[]string{"a", "--name=y", "b", "--", "-c"}, []string{"a", "b", "-c"}, false, "y"},
		{nil, nil, false, ""},
	}
	for _, tc := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		j := fs.Bool("json", false, "")
		n := fs.String("name", "", "")
		pos, err := parseArgs(fs, tc.args)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if fmt.Sprint(pos) != fmt.Sprint(tc.wantPos) || *j != tc.wantJSON || *n != tc.wantName {
			t.Errorf("%v: pos %q json %v name %q", tc.args, pos, *j, *n)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseArgs(fs, []string{"--nope"}); ExitCode(err) != ExitUsage {
		t.Errorf("unknown flag: %v (exit %d)", err, ExitCode(err))
	}
}

func TestExitCodes(t *testing.T) {
	cases := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{usagef("x"), ExitUsage},
		{errs.NotFoundf("x"), ExitNotFound},
		{errs.Conflictf("x"), ExitConflict},
		{errs.Invalidf("f", "x"), ExitError},
		{errs.TooLargef("f", "x"), ExitError},
		{errs.E(errs.Unauthorized, "", "x"), ExitUnauthorized},
		{errs.E(errs.Forbidden, "", "x"), ExitUnauthorized},
		{errs.E(errs.Unavailable, "", "x"), ExitUnavailable},
		{&unreachableError{base: "http://x", err: errors.New("refused")}, ExitUnavailable},
		{&runFailedError{id: "r", status: "failed"}, ExitRunFailed},
		{&skippedError{id: "r", reason: "concurrency_forbid"}, ExitRunSkipped},
		{fmt.Errorf("wrapped: %w", errs.NotFoundf("x")), ExitNotFound},
		{errors.New("plain"), ExitError},
	}
	for _, tc := range cases {
		if got := ExitCode(tc.err); got != tc.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestRunUsageAndVersion(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{nil, ExitUsage, "", "Commands:"},
		{[]string{"--help"}, ExitOK, "Exit codes:", ""},
		{[]string{"version"}, ExitOK, "ql3-edge v-test", ""},
		{[]string{"--version"}, ExitOK, "ql3-edge v-test", ""},
		{[]string{"version", "x"}, ExitUsage, "", "no arguments"},
		{[]string{"bogus"}, ExitUsage, "", `unknown command "bogus"`},
		{[]string{"task"}, ExitUsage, "", "task add"},
		{[]string{"task", "help"}, ExitOK, "task add", ""},
		{[]string{"run", "nope"}, ExitUsage, "", "unknown run subcommand"},
		{[]string{"task", "show"}, ExitUsage, "", "TASK"},
		{[]string{"task", "show", "--help"}, ExitOK, "", "Usage: ql3-edge task show"},
		{[]string{"logs", "--attempt", "-1", "r"}, ExitUsage, "", "--attempt"},
		{[]string{"serve", "--listen"}, ExitUsage, "", "flag needs an argument"},
		{[]string{"task", "add", "--name", "x", "--shell", "a", "--", "b"}, ExitUsage, "", "either --shell"},
		{[]string{"task", "add", "--name", "x", "--zone", "UTC", "--", "b"}, ExitUsage, "", "need --cron"},
		{[]string{"task", "add", "--name", "x", "--env", "NOEQUALS", "--", "b"}, ExitUsage, "", "KEY=VALUE"},
	} {
		env, out, errOut := testEnv(nil)
		code := Run(t.Context(), tc.args, env)
		if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errOut.String(), tc.stderr) {
			t.Errorf("%v: exit %d (want %d)\nstdout %q\nstderr %q", tc.args, code, tc.code, out, errOut)
		}
	}
}

func TestSpecDocFromFlags(t *testing.T) {
	env, _, _ := testEnv(nil)
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var sf specFlags
	sf.register(fs, true)
	argv, err := parseArgs(fs, []string{"--env", "A=1", "--env", "B=x=y", "--run-timeout", "90s", "--max-attempts", "3",
		"--backoff", "2s", "--retry-on-lost", "--concurrency", "replace", "--workdir", "/tmp", "--", "python3", "job.py"})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := sf.specDoc(env, nil, argv)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"argv":{"args":["job.py"],"file":"python3"},"concurrency":"replace","environment":{"A":"1","B":"x=y"},"kind":"qinglong/command@v1","retry":{"backoffBaseMs":2000,"backoffMaxMs":64000,"maxAttempts":3,"retryOnLost":true},"timeoutMs":90000,"workingDirectory":"/tmp"}`
	if norm, _ := json.Marshal(got); string(norm) != want {
		t.Errorf("spec\n got %s\nwant %s", norm, want)
	}

	// Editing: --shell replaces argv, --unset-env removes, other fields stay.
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	sf = specFlags{}
	sf.register(fs, true)
	if _, err := parseArgs(fs, []string{"--shell", "echo $HOME", "--shell-path", "/bin/bash", "--unset-env", "A"}); err != nil {
		t.Fatal(err)
	}
	doc, err = sf.specDoc(env, got, nil)
	if err != nil {
		t.Fatal(err)
	}
	var edited map[string]any
	if err := json.Unmarshal(doc, &edited); err != nil {
		t.Fatal(err)
	}
	if edited["argv"] != nil || fmt.Sprint(edited["shell"]) != "map[command:echo $HOME shell:/bin/bash]" ||
		fmt.Sprint(edited["environment"]) != "map[B:x=y]" || edited["concurrency"] != "replace" {
		t.Errorf("edited spec %v", edited)
	}
}

func TestSpecFileFromStdin(t *testing.T) {
	env, _, _ := testEnv(nil)
	env.Stdin = strings.NewReader(`{"kind":"qinglong/command@v1","argv":{"file":"true"}}`)
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var sf specFlags
	sf.register(fs, false)
	if _, err := parseArgs(fs, []string{"--spec-file", "-"}); err != nil {
		t.Fatal(err)
	}
	doc, err := sf.specDoc(env, nil, nil)
	if err != nil || !strings.Contains(string(doc), `"file":"true"`) {
		t.Fatalf("%s %v", doc, err)
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	sf = specFlags{}
	sf.register(fs, false)
	if _, err := parseArgs(fs, []string{"--spec-file", "-", "--workdir", "/x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sf.specDoc(env, nil, nil); ExitCode(err) != ExitUsage {
		t.Errorf("--spec-file with spec flags: %v", err)
	}
}

func TestBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:5700":         "http://127.0.0.1:5700",
		"http://localhost:5700/": "http://localhost:5700",
		"https://edge.lan":       "https://edge.lan",
	} {
		if got, err := baseURL(in); err != nil || got != want {
			t.Errorf("baseURL(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "ftp://x", "http://"} {
		if _, err := baseURL(bad); err == nil {
			t.Errorf("baseURL(%q) accepted", bad)
		}
	}
}

func FuzzParseArgs(f *testing.F) {
	f.Add("hello --json")
	f.Add("--name x -- echo --json")
	f.Add("-- --")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Bool("json", false, "")
		fs.String("name", "", "")
		pos, err := parseArgs(fs, args)
		if err != nil {
			return
		}
		// Positional arguments are a subsequence of the input.
		i := 0
		for _, p := range pos {
			for i < len(args) && args[i] != p {
				i++
			}
			if i == len(args) {
				t.Fatalf("positional %q not in %q", p, args)
			}
			i++
		}
	})
}

// TestEveryHelpExitsZero (#27): --help on every command and subcommand
// exits 0 and describes the flags, with defaults where they have one.
func TestEveryHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"serve", "--help"}, {"version", "--help"}, {"logs", "--help"},
		{"task", "--help"}, {"task", "add", "--help"}, {"task", "list", "--help"}, {"task", "show", "--help"},
		{"task", "edit", "--help"}, {"task", "enable", "--help"}, {"task", "disable", "--help"}, {"task", "rm", "--help"},
		{"run", "--help"}, {"run", "now", "--help"}, {"run", "list", "--help"}, {"run", "show", "--help"}, {"run", "cancel", "--help"},
	} {
		env, out, errOut := testEnv(nil)
		if code := Run(t.Context(), args, env); code != ExitOK {
			t.Errorf("%v: exit %d\n%s", args, code, errOut)
			continue
		}
		help := out.String() + errOut.String()
		if !strings.Contains(help, "Usage") && !strings.Contains(help, "usage") {
			t.Errorf("%v: no usage:\n%s", args, help)
		}
		if len(args) == 3 && args[1] != "--help" && !strings.Contains(help, "-addr string\n    \tserver address") {
			t.Errorf("%v: the flags are not described:\n%s", args, help)
		}
	}
	env, _, errOut := testEnv(nil)
	Run(t.Context(), []string{"task", "add", "--help"}, env)
	if !strings.Contains(errOut.String(), "(default 24h)") || !strings.Contains(errOut.String(), "(default 30s)") {
		t.Errorf("task add --help lacks the defaults:\n%s", errOut)
	}
}
