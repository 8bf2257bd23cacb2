package app

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestBooleanFlagsTakeNoValue: a boolean flag is bare (--no-scheduler), may
// be last, and still accepts an explicit =true/=false.
func TestBooleanFlagsTakeNoValue(t *testing.T) {
	cases := []struct {
		args            []string
		noSched, reqTLS bool
		dsn             string
	}{
		{[]string{"serve", "--no-scheduler", "--dsn", "X"}, true, false, "X"},
		{[]string{"serve", "--dsn", "X", "--require-tls"}, false, true, "X"},
		{[]string{"serve", "--require-tls=false", "--no-scheduler=true"}, true, false, ""},
		{[]string{"serve", "-no-scheduler"}, true, false, ""},
	}
	for _, tc := range cases {
		m, err := parse(t, nil, tc.args...)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if c := m.Config; c.NoScheduler != tc.noSched || c.RequireTLS != tc.reqTLS || c.DSN != tc.dsn {
			t.Errorf("%v: noScheduler=%v requireTLS=%v dsn=%q", tc.args, c.NoScheduler, c.RequireTLS, c.DSN)
		}
	}
}

func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}
	if err := m.ParseFlags(append(args, "-h")); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("%v -h: %v", args, err)
	}
	return out.String()
}

// TestCommandHelpListsOnlyItsFlags: each command's help names its own flags
// (with -- and their defaults), not every shared flag of every command.
func TestCommandHelpListsOnlyItsFlags(t *testing.T) {
	cases := []struct {
		args          []string
		want, notWant []string
	}{
		{[]string{"serve"},
			[]string{"--listen", `default "` + DefaultListen + `"`, "--no-scheduler\n", "--dsn string", "--max-conns int", "default 8", "QL3_LISTEN", "--config"},
			[]string{"--server", "--token-file", "--ca-file", "--migrator-dsn", "--name", "\n  -listen"}},
		{[]string{"migrate"},
			[]string{"--migrator-dsn", "--dsn"},
			[]string{"--listen", "--server", "--scheduler-budget", "--no-scheduler"}},
		{[]string{"token", "create"},
			[]string{"--name string", "--ttl duration", "--dsn", "--admin-dsn"},
			[]string{"--listen", "--server", "--scheduler-budget", "--require-tls"}},
		{[]string{"project", "list"},
			[]string{"--server", `default "` + DefaultServer + `"`, "--token-file", "--ca-file"},
			[]string{"--listen", "--dsn", "--scheduler-budget", "--require-tls", "--name"}},
		{[]string{"trigger", "create"},
			[]string{"--expression string", "--disabled\n", "--server"},
			[]string{"--listen", "--dsn"}},
	}
	for _, tc := range cases {
		help := helpOf(t, tc.args...)
		for _, w := range tc.want {
			if !strings.Contains(help, w) {
				t.Errorf("%v help lacks %q:\n%s", tc.args, w, help)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(help, w) {
				t.Errorf("%v help has %q:\n%s", tc.args, w, help)
			}
		}
	}
}

// TestServeHelpShowsTheSchedulerDefaults: the cluster's misfire grace, the
// claim lease and the budget are printed with their defaults (issue 16).
func TestServeHelpShowsTheSchedulerDefaults(t *testing.T) {
	help := helpOf(t, "serve")
	for _, flagName := range []string{"default-grace-ms", "scheduler-lease-ms", "scheduler-budget"} {
		i := strings.Index(help, "--"+flagName+" int\n")
		if i < 0 {
			t.Fatalf("serve help lacks --%s:\n%s", flagName, help)
		}
		line, _, _ := strings.Cut(help[i+len(flagName)+7:], "\n")
		want := map[string]string{"default-grace-ms": "default 30000;", "scheduler-lease-ms": "default 30000;",
			"scheduler-budget": "default 16;"}[flagName]
		if !strings.Contains(line, want) {
			t.Errorf("--%s: %q lacks %q", flagName, line, want)
		}
	}
	if !strings.Contains(help, "misfire policy applies") {
		t.Errorf("--default-grace-ms does not say what the grace is:\n%s", help)
	}
}

// TestFlagOfAnotherCommandRefused: a serve-only flag is an error on a
// client command, naming the flag with its double dash.
func TestFlagOfAnotherCommandRefused(t *testing.T) {
	_, err := parse(t, nil, "project", "list", "--listen", ":1")
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--listen") {
		t.Fatalf("got %v", err)
	}
}
