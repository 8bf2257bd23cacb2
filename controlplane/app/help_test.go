package app

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestGroupHelp (#27): "pki --help" prints the pki commands (not the
// global list) and is no error; a group alone is a usage error with the
// group's commands; the global help names the exit statuses.
func TestGroupHelp(t *testing.T) {
	help := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		m := &Main{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }}
		err := m.ParseFlags(args)
		return out.String(), errOut.String(), err
	}
	for _, args := range [][]string{{"pki", "--help"}, {"pki", "-h"}, {"pki", "help"}} {
		out, _, err := help(args...)
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out, "pki issue-worker") || strings.Contains(out, "  serve ") ||
			strings.Contains(out, "task list") {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
	_, errOut, err := help("run")
	if !errors.Is(err, ErrUsage) || !strings.Contains(errOut, "run now") || strings.Contains(errOut, "pki init") {
		t.Errorf("run alone: %v\n%s", err, errOut)
	}
	_, errOut, err = help("pki", "bogus")
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), `"pki bogus"`) || !strings.Contains(errOut, "pki init") {
		t.Errorf("pki bogus: %v\n%s", err, errOut)
	}
	out, _, err := help("--help")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out, "  serve ") || !strings.Contains(out, "8 run now") || !strings.Contains(out, "--json") {
		t.Errorf("--help: %v\n%s", err, out)
	}
	out, _, err = help("worker", "list", "--help")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out, "--json") || !strings.Contains(out, "--server string") {
		t.Errorf("worker list --help: %v\n%s", err, out)
	}
}
