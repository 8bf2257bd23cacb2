package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge/httpapi"
)

// maxBackoffMs is the retry backoff hard limit (24 h, core/spec).
const maxBackoffMs = 24 * 60 * 60 * 1000

// specFlags are the task flags of `task add` and `task edit`. Only flags the
// user set change anything; the server fills defaults and validates.
type specFlags struct {
	fs *flag.FlagSet

	name        string
	specFile    string
	shell       string
	shellPath   string
	script      string
	randomDelay time.Duration
	env         stringList
	unsetEnv    stringList
	workdir     string
	runTimeout  time.Duration
	maxAttempts int
	backoff     time.Duration
	backoffMax  time.Duration
	retryOnLost bool
	concurrency string

	crons   stringList
	noCron  bool
	zone    string
	misfire string
	grace   time.Duration
}

func (f *specFlags) register(fs *flag.FlagSet, edit bool) {
	f.fs = fs
	fs.StringVar(&f.name, "name", "", "task name (unique among live tasks)")
	fs.StringVar(&f.specFile, "spec-file", "", "read the whole qinglong/command@v1 spec from this JSON file ('-' for stdin) instead of the flags below")
	fs.StringVar(&f.shell, "shell", "", "run this script with /bin/sh -c (instead of the argv after --)")
	fs.StringVar(&f.shellPath, "shell-path", "", "interpreter for --shell: /bin/sh (default) or /bin/bash")
	fs.StringVar(&f.script, "script", "", "run this file of the scripts folder with the interpreter its extension names; the words after -- are its arguments")
	fs.DurationVar(&f.randomDelay, "random-delay", 0, "QingLong's RandomDelay: each scheduled run starts after its own delay below this (max 1h; 0: none)")
	fs.Var(&f.env, "env", "environment variable KEY=VALUE (repeatable)")
	if edit {
		fs.Var(&f.unsetEnv, "unset-env", "remove environment variable KEY (repeatable)")
	}
	fs.StringVar(&f.workdir, "workdir", "", "working directory of the command")
	fs.DurationVar(&f.runTimeout, "run-timeout", 0, "kill the command (its whole process group) after this long (default 24h)")
	fs.IntVar(&f.maxAttempts, "max-attempts", 0, "attempts per run including the first, 1..16 (default 1: no retry)")
	fs.DurationVar(&f.backoff, "backoff", 0, "delay before the first retry; doubles per retry")
	fs.DurationVar(&f.backoffMax, "backoff-max", 0, "cap of the retry delay (default with --backoff: 32× --backoff, at most 24h)")
	fs.BoolVar(&f.retryOnLost, "retry-on-lost", false, "retry a run whose process was lost (ql3-edge crashed or was killed)")
	fs.StringVar(&f.concurrency, "concurrency", "", "when a run is due while another runs: forbid (default: skip the new one), allow, replace (cancel the old one)")
	cronHelp := "cron expression, 5 fields or 6 with seconds, or @hourly etc. (repeatable)"
	if edit {
		cronHelp += "; replaces all triggers of the task"
		fs.BoolVar(&f.noCron, "no-cron", false, "remove all triggers (the task then runs only with `run now`)")
	}
	fs.Var(&f.crons, "cron", cronHelp)
	fs.StringVar(&f.zone, "zone", "", "IANA time zone of the cron expressions, e.g. Europe/London (default UTC)")
	fs.StringVar(&f.misfire, "misfire", "", "after downtime beyond the grace: skip (default) or fire_once")
	fs.DurationVar(&f.grace, "grace", 0, "how late an occurrence may still fire (default 30s, max 5m)")
}

func (f *specFlags) set(name string) bool {
	found := false
	f.fs.Visit(func(fl *flag.Flag) {
		if fl.Name == name {
			found = true
		}
	})
	return found
}

// triggerFlagsSet reports whether any trigger-shaping flag was given.
func (f *specFlags) triggerFlagsSet() bool {
	return f.set("zone") || f.set("misfire") || f.set("grace")
}

// specDoc builds the spec JSON: base (nil for add) patched with the flags
// that were set and argv (the words after --).
func (f *specFlags) specDoc(env Env, base map[string]any, argv []string) (json.RawMessage, error) {
	if f.specFile != "" {
		if f.set("shell") || f.set("shell-path") || len(argv) > 0 || f.set("env") || f.set("workdir") ||
			f.set("run-timeout") || f.set("max-attempts") || f.set("backoff") || f.set("backoff-max") ||
			f.set("retry-on-lost") || f.set("concurrency") || f.set("script") || f.set("random-delay") {
			return nil, usagef("--spec-file cannot be combined with spec flags or a command after --")
		}
		var data []byte
		var err error
		if f.specFile == "-" {
			data, err = readAllLimited(env.Stdin, httpapi.DefaultMaxBodyBytes)
		} else {
			data, err = os.ReadFile(f.specFile)
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f.specFile, err)
		}
		if !json.Valid(data) {
			return nil, usagef("%s is not valid JSON", f.specFile)
		}
		return json.RawMessage(data), nil
	}
	m := base
	if m == nil {
		m = map[string]any{"kind": spec.KindCommandV1}
	}
	switch {
	case f.script != "" && f.shell != "":
		return nil, usagef("give either --script or --shell, not both")
	case f.script != "":
		sc := map[string]any{"file": f.script}
		if len(argv) > 0 {
			sc["args"] = argv
		}
		delete(m, "argv")
		delete(m, "shell")
		m["script"] = sc
	case f.shell != "" && len(argv) > 0:
		return nil, usagef("give either --shell or a command after --, not both")
	case f.shell != "":
		sh := map[string]any{"command": f.shell}
		if f.shellPath != "" {
			sh["shell"] = f.shellPath
		}
		delete(m, "argv")
		delete(m, "script")
		m["shell"] = sh
	case len(argv) > 0:
		if f.set("shell-path") {
			return nil, usagef("--shell-path needs --shell")
		}
		a := map[string]any{"file": argv[0]}
		if len(argv) > 1 {
			a["args"] = argv[1:]
		}
		delete(m, "shell")
		delete(m, "script")
		m["argv"] = a
	case f.set("shell-path"):
		sh, ok := m["shell"].(map[string]any)
		if !ok {
			return nil, usagef("--shell-path needs --shell")
		}
		sh["shell"] = f.shellPath
	}
	if base == nil && m["shell"] == nil && m["argv"] == nil && m["script"] == nil {
		return nil, usagef("give the command after --, e.g. `-- echo hi`, or use --shell 'echo $HOME' or --script dir/sign.js")
	}
	if f.set("random-delay") {
		if f.randomDelay == 0 {
			delete(m, "randomDelayMs")
		} else {
			m["randomDelayMs"] = f.randomDelay.Milliseconds()
		}
	}
	if len(f.env) > 0 || len(f.unsetEnv) > 0 {
		envm, _ := m["environment"].(map[string]any)
		if envm == nil {
			envm = map[string]any{}
		}
		for _, kv := range f.env {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, usagef("--env wants KEY=VALUE, got %q", kv)
			}
			envm[k] = v
		}
		for _, k := range f.unsetEnv {
			delete(envm, k)
		}
		if len(envm) == 0 {
			delete(m, "environment")
		} else {
			m["environment"] = envm
		}
	}
	if f.set("workdir") {
		if f.workdir == "" {
			delete(m, "workingDirectory")
		} else {
			m["workingDirectory"] = f.workdir
		}
	}
	if f.set("run-timeout") {
		m["timeoutMs"] = f.runTimeout.Milliseconds()
	}
	if f.set("max-attempts") || f.set("backoff") || f.set("backoff-max") || f.set("retry-on-lost") {
		retry, _ := m["retry"].(map[string]any)
		if retry == nil {
			retry = map[string]any{}
		}
		if f.set("max-attempts") {
			retry["maxAttempts"] = f.maxAttempts
		}
		if f.set("backoff") {
			retry["backoffBaseMs"] = f.backoff.Milliseconds()
			if !f.set("backoff-max") {
				retry["backoffMaxMs"] = min(32*f.backoff.Milliseconds(), maxBackoffMs)
			}
		}
		if f.set("backoff-max") {
			retry["backoffMaxMs"] = f.backoffMax.Milliseconds()
		}
		if f.set("retry-on-lost") {
			retry["retryOnLost"] = f.retryOnLost
		}
		m["retry"] = retry
	}
	if f.set("concurrency") {
		m["concurrency"] = f.concurrency
	}
	return json.Marshal(m)
}

// triggerRequest builds a trigger from expr and the trigger flags, on top of
// base (the current trigger when editing).
func (f *specFlags) triggerRequest(expr string, base *httpapi.Trigger) httpapi.TriggerRequest {
	tr := httpapi.TriggerRequest{Expression: expr}
	if base != nil {
		tr.TimeZone, tr.Misfire, tr.GraceMs = base.TimeZone, base.Misfire, base.GraceMs
		enabled := base.Enabled
		tr.Enabled = &enabled
	}
	if f.set("zone") {
		tr.TimeZone = f.zone
	}
	if f.set("misfire") {
		tr.Misfire = f.misfire
	}
	if f.set("grace") {
		tr.GraceMs = f.grace.Milliseconds()
		if tr.GraceMs == 0 && f.grace > 0 {
			tr.GraceMs = 1
		}
	}
	return tr
}

// specMap turns a spec into a generic map for patching.
func specMap(c spec.Command) (map[string]any, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}
