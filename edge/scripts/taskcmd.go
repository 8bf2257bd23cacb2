package scripts

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ql3/ql3/core/scriptpath"
)

// HelperSubcommand is the hidden ql3-edge subcommand the `task` helper
// calls.
const HelperSubcommand = "script-task"

// HelperName is the helper's file name on every process's PATH: QingLong's
// task runner.
const HelperName = "task"

// WriteHelper writes the `task` helper into binDir (made 0700; the helper
// 0755, atomically): a two-line shell script that calls argv (the running
// binary and HelperSubcommand) with the scripts folder and the interpreter
// overrides of this start, so `task x.js a b` in a shell task runs the
// script exactly as a script task would.
func WriteHelper(binDir string, argv []string, scriptsDir string, overrides []string) (string, error) {
	if err := os.MkdirAll(binDir, 0o700); err != nil {
		return "", fmt.Errorf("task helper: %w", err)
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# Written by ql3-edge at start: QingLong's `task FILE [ARGS]` for the scripts folder.\nexec")
	words := append(append([]string(nil), argv...), "--scripts-dir", scriptsDir)
	for _, o := range overrides {
		words = append(words, "--interpreter", o)
	}
	words = append(words, "--")
	for _, w := range words {
		b.WriteString(" " + shellQuote(w))
	}
	b.WriteString(" \"$@\"\n")
	path := filepath.Join(binDir, HelperName)
	tmp, err := os.CreateTemp(binDir, ".task-*")
	if err != nil {
		return "", fmt.Errorf("task helper: %w", err)
	}
	_, werr := tmp.WriteString(b.String())
	if werr == nil {
		werr = tmp.Chmod(0o755)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("task helper: %w", werr)
	}
	return path, nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// killGrace is how long a script stopped by `task -m` gets after SIGTERM.
const killGrace = 5 * time.Second

// TaskMain is the helper's body (`ql3-edge script-task --scripts-dir D
// [--interpreter EXT=PROG]… -- TASK-ARGS…`): it reads the task arguments
// as QingLong's runner does (core/scriptpath.ParseTaskArgs), resolves the
// script and its interpreter like a script task (Folder.Command), and
// replaces itself with the interpreter in the script's folder, with
// QL3_SCRIPT set. With -m SECONDS it stays as the parent and stops the
// script when the time is up (exit 124, like timeout(1)). `now` is
// accepted: the helper never delays (a task's randomDelayMs is applied
// before its process starts). conc/desi are refused: ql3 runs one process
// per Run.
func TaskMain(args []string, stderr io.Writer) int {
	var dir string
	var overrides []string
	for len(args) > 0 && args[0] != "--" {
		switch {
		case args[0] == "--scripts-dir" && len(args) > 1:
			dir, args = args[1], args[2:]
		case args[0] == "--interpreter" && len(args) > 1:
			overrides, args = append(overrides, args[1]), args[2:]
		default:
			fmt.Fprintf(stderr, "task: unexpected helper argument %q\n", args[0])
			return 2
		}
	}
	if len(args) > 0 {
		args = args[1:]
	}
	if dir == "" {
		fmt.Fprintln(stderr, "task: the helper needs --scripts-dir")
		return 2
	}
	tc, err := scriptpath.ParseTaskArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "task: %v\n", err)
		return 2
	}
	if err := tc.Supported(); err != nil {
		fmt.Fprintf(stderr, "task: %v\n", err)
		return 2
	}
	interps, err := scriptpath.NewInterpreters(overrides)
	if err != nil {
		fmt.Fprintf(stderr, "task: %v\n", err)
		return 2
	}
	folder, err := Open(dir)
	if err != nil {
		fmt.Fprintf(stderr, "task: %v\n", err)
		return 2
	}
	cmd, err := folder.Command(interps, tc.File, tc.Args, os.Getenv("PATH"))
	if err != nil {
		fmt.Fprintf(stderr, "task: %v\n", err)
		return 127
	}
	env := append(withoutVar(os.Environ(), "QL3_SCRIPT"), "QL3_SCRIPT="+cmd.Script, "QL3_SCRIPTS_DIR="+folder.Root())
	if tc.MaxTimeSec == 0 {
		if err := os.Chdir(cmd.Dir); err != nil {
			fmt.Fprintf(stderr, "task: %v\n", err)
			return 127
		}
		err := syscall.Exec(cmd.Argv[0], cmd.Argv, env)
		fmt.Fprintf(stderr, "task: starting %s: %v\n", cmd.Argv[0], err)
		return 127
	}
	return runWithLimit(cmd, env, time.Duration(tc.MaxTimeSec)*time.Second, stderr)
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") && !strings.HasPrefix(kv, "QL3_SCRIPTS_DIR=") {
			out = append(out, kv)
		}
	}
	return out
}

// runWithLimit runs cmd as a child and stops it after limit (SIGTERM,
// then SIGKILL after killGrace); signals sent to the helper are passed on.
func runWithLimit(cmd Command, env []string, limit time.Duration, stderr io.Writer) int {
	c := exec.Command(cmd.Argv[0], cmd.Argv[1:]...)
	c.Dir, c.Env = cmd.Dir, env
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Start(); err != nil {
		fmt.Fprintf(stderr, "task: starting %s: %v\n", cmd.Argv[0], err)
		return 127
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var kill <-chan time.Time
	timedOut := false
	for {
		select {
		case s := <-sigs:
			_ = c.Process.Signal(s)
		case <-timer.C:
			timedOut = true
			fmt.Fprintf(stderr, "task: -m %d seconds passed: stopping %s\n", int(limit/time.Second), cmd.Script)
			_ = c.Process.Signal(syscall.SIGTERM)
			kill = time.After(killGrace)
		case <-kill:
			_ = c.Process.Kill()
		case err := <-done:
			if timedOut {
				return 124
			}
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ee.ExitCode() >= 0 {
					return ee.ExitCode()
				}
				return 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
			}
			if err != nil {
				return 1
			}
			return 0
		}
	}
}
