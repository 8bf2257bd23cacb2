package app

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// TestHelpExitsZeroWithDescriptions (#27): --help and -h exit 0 and every
// flag has a description (not just its variable's name) with its default
// where it has one; a bad flag is still exit 2.
func TestHelpExitsZeroWithDescriptions(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var out bytes.Buffer
		if code := Main("test", []string{arg}, func(string) string { return "" }, &out); code != ExitOK {
			t.Fatalf("%s: exit %d, want 0\n%s", arg, code, out.String())
		}
		help := out.String()
		for _, want := range []string{
			"Usage: ql3-worker", "Exit status",
			"--ingress-url value\n        the control plane's worker ingress",
			"--state-dir value", "default /var/lib/ql3-worker; env QL3_STATE_DIR",
			"--drain-grace-ms value", "default 60000; env QL3_DRAIN_GRACE_MS",
			"--capacity value", "default router 1, node 8",
			"--cadence-ms value", "default router 2000, node 500",
			"--inbox-max value", "default 64",
			"--request-timeout-ms value", "default 15000",
			"--version\n",
		} {
			if !strings.Contains(help, want) {
				t.Errorf("%s help lacks %q:\n%s", arg, want, help)
			}
		}
	}
	var out bytes.Buffer
	if code := Main("test", []string{"--no-such-flag"}, func(string) string { return "" }, &out); code != ExitUsage {
		t.Fatalf("a bad flag: exit %d, want %d", code, ExitUsage)
	}
}

// TestEveryFlagIsDescribed: each setting's flag says what it does; a new
// setting without an entry in settingHelp fails here.
func TestEveryFlagIsDescribed(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c := DefaultConfig()
	c.RegisterFlags(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if strings.HasPrefix(f.Usage, "(") || !strings.Contains(f.Usage, "env QL3_") {
			t.Errorf("--%s has no description: %q", f.Name, f.Usage)
		}
	})
	if n < 20 {
		t.Fatalf("only %d flags registered", n)
	}
}
