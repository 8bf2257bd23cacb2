// Package spec defines the qinglong/command@v1 task spec: what to run (an
// argv or a shell script), with which environment, for how long, how often
// to retry, how runs of the same task may overlap, and where it may run.
//
// Decode is the only way external bytes become a Command: strict JSON
// (unknown or mis-cased fields, duplicate keys, trailing data and bad UTF-8
// are rejected), defaults applied, every field validated against the hard
// limits below; errors are errs.Error values naming the field path
// ("retry.maxAttempts", "environment.FOO", "argv.args[3]") and the limit.
// Object keys that differ only in case are duplicates (canonjson), so two
// environment variables "PATH" and "Path" cannot appear in one spec.
//
// A Command's identity is its canonical JSON (canonjson) and the SHA-256 of
// that under DigestDomain. Defaults are written into the canonical form, so
// a spec that spells out a default and one that omits it have one digest.
//
// The worker links this package: it must not import cron or semver.
package spec

import (
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
)

// KindCommandV1 is the only spec kind so far.
const KindCommandV1 = "qinglong/command@v1"

// DigestDomain separates spec digests from every other digest.
const DigestDomain = "ql3/spec/" + KindCommandV1

// Hard limits (design §8).
const (
	MaxCanonicalBytes = 64 << 10  // canonical JSON of one spec
	MaxInputBytes     = 128 << 10 // received JSON: room for indentation, the canonical form is checked too
	MaxDepth          = 12
	MaxEntries        = 256      // members of one object, elements of one array
	MaxStringBytes    = 16 << 10 // any one string, shell.command included
	MaxEnvEntries     = 256
	MaxEnvBytes       = 64 << 10 // sum of len(name)+len(value)
	MaxPathBytes      = 4096     // PATH_MAX: argv.file, workingDirectory
	ReservedEnvPrefix = "QL3_"   // ql3 sets these for the process itself

	MinTimeoutMs     = 1
	MaxTimeoutMs     = 365 * 24 * 3600 * 1000
	DefaultTimeoutMs = 24 * 3600 * 1000

	MinAttempts  = 1
	MaxAttempts  = 16
	MaxBackoffMs = 24 * 3600 * 1000

	// limits (ADR 0041): where the host offers cgroups, an attempt's
	// process count and memory are bounded; 0 takes the host's default.
	MinMaxProcesses = 8
	MaxMaxProcesses = 1 << 20
	MinMemoryBytes  = 4 << 20
	MaxMemoryBytes  = 1 << 40
)

// Shells a Shell spec may name.
const (
	ShellSh      = "/bin/sh"
	ShellBash    = "/bin/bash"
	DefaultShell = ShellSh
)

// ConcurrencyPolicy says what happens when a run is due while another run
// of the same task is still active.
type ConcurrencyPolicy string

const (
	ConcurrencyAllow   ConcurrencyPolicy = "allow"   // run both
	ConcurrencyForbid  ConcurrencyPolicy = "forbid"  // skip the new run
	ConcurrencyReplace ConcurrencyPolicy = "replace" // cancel the active run, start the new one

	DefaultConcurrency = ConcurrencyForbid
)

// Command is a qinglong/command@v1 spec. Exactly one of Argv, Shell and
// Script is set.
type Command struct {
	Kind             string                  `json:"kind"`
	Argv             *Argv                   `json:"argv,omitempty"`
	Shell            *Shell                  `json:"shell,omitempty"`
	Script           *Script                 `json:"script,omitempty"` // a file of the scripts folder (script.go)
	Environment      map[string]string       `json:"environment,omitempty"`
	Env              *EnvScope               `json:"env,omitempty"` // which env store entries the process sees (env.go)
	WorkingDirectory string                  `json:"workingDirectory,omitempty"`
	TimeoutMs        int64                   `json:"timeoutMs"`
	Retry            RetryPolicy             `json:"retry"`
	Concurrency      ConcurrencyPolicy       `json:"concurrency"`
	Placement        *placement.Requirements `json:"placement,omitempty"`
	Limits           *Limits                 `json:"limits,omitempty"`
	// RandomDelayMs is QingLong's RandomDelay: a scheduled occurrence
	// starts after a delay in [0, RandomDelayMs) that is a function of the
	// occurrence (core/scriptpath.RandomDelayMs); 0 starts at once.
	RandomDelayMs int64 `json:"randomDelayMs,omitempty"`
}

// Limits bounds one attempt's resources where the executing host offers
// cgroups (ADR 0041): MaxProcesses is the group's pids.max (tasks, threads
// included), MemoryBytes its memory limit (beyond it the attempt ends
// failed, reason oom). A zero field takes the host's default; a host
// without cgroups cannot enforce them and says so at start.
type Limits struct {
	MaxProcesses int   `json:"maxProcesses,omitempty"`
	MemoryBytes  int64 `json:"memoryBytes,omitempty"`
}

// Argv runs File with Args directly, no shell in between.
type Argv struct {
	File string   `json:"file"`
	Args []string `json:"args,omitempty"`
}

// Shell runs Command as a script with Shell -c.
type Shell struct {
	Command string `json:"command"`
	Shell   string `json:"shell,omitempty"`
}

// RetryPolicy governs new Attempts of a Run after a failed one.
type RetryPolicy struct {
	MaxAttempts   int   `json:"maxAttempts"`   // total attempts, first included
	BackoffBaseMs int64 `json:"backoffBaseMs"` // delay after the first failure
	BackoffMaxMs  int64 `json:"backoffMaxMs"`  // cap of the doubling delay
	RetryOnLost   bool  `json:"retryOnLost"`   // also retry when the worker was lost
}

// BackoffMs is the delay before attempt failedAttempt+1 after attempt
// failedAttempt (1-based) failed: BackoffBaseMs·2^(failedAttempt-1), capped
// at BackoffMaxMs, computed without overflow. It is 0 for failedAttempt < 1
// and never negative.
func (r RetryPolicy) BackoffMs(failedAttempt int) int64 {
	base, limit := max(r.BackoffBaseMs, 0), max(r.BackoffMaxMs, 0)
	if failedAttempt < 1 || base == 0 {
		return 0
	}
	shift := failedAttempt - 1
	if shift >= 63 || base > limit>>shift {
		return limit // base<<shift would exceed the cap (or overflow)
	}
	return base << shift
}

// wire mirrors Command with pointers where "omitted" and "zero" differ:
// an omitted field takes its default, an explicit zero is validated (and
// rejected where zero is out of range).
type wire struct {
	Kind             string                  `json:"kind"`
	Argv             *Argv                   `json:"argv"`
	Shell            *wireShell              `json:"shell"`
	Script           *Script                 `json:"script"`
	Environment      map[string]string       `json:"environment"`
	Env              *EnvScope               `json:"env"`
	WorkingDirectory string                  `json:"workingDirectory"`
	TimeoutMs        *int64                  `json:"timeoutMs"`
	Retry            *wireRetry              `json:"retry"`
	Concurrency      *ConcurrencyPolicy      `json:"concurrency"`
	Placement        *placement.Requirements `json:"placement"`
	Limits           *Limits                 `json:"limits"`
	RandomDelayMs    int64                   `json:"randomDelayMs"`
}

type wireShell struct {
	Command string  `json:"command"`
	Shell   *string `json:"shell"`
}

type wireRetry struct {
	MaxAttempts   *int  `json:"maxAttempts"`
	BackoffBaseMs int64 `json:"backoffBaseMs"`
	BackoffMaxMs  int64 `json:"backoffMaxMs"`
	RetryOnLost   bool  `json:"retryOnLost"`
}

var decodeLimits = canonjson.Limits{
	MaxBytes:   MaxInputBytes,
	MaxDepth:   MaxDepth,
	MaxEntries: MaxEntries,
	MaxString:  MaxStringBytes,
}

// Decode strictly decodes a spec, applies the defaults of omitted fields
// and validates the result (including the size of its canonical form).
// Specs as senders encode them take the fast path (fast.go); everything
// else, every refusal included, is decided by the reference decoder.
func Decode(data []byte) (Command, error) {
	if c, err := decodeFast(data); err == nil {
		return c, nil
	}
	return decodeReference(data)
}

// decodeReference is the strict decoder the fast path is held to:
// canonjson.DecodeStrict into wire.
func decodeReference(data []byte) (Command, error) {
	var w wire
	if err := canonjson.DecodeStrict(data, decodeLimits, &w); err != nil {
		return Command{}, err
	}
	c, _, err := w.command()
	return c, err
}

// command applies the defaults of omitted fields, normalizes and validates
// the result, and returns it with its canonical form.
func (w wire) command() (Command, []byte, error) {
	c := Command{
		Kind:             w.Kind,
		Argv:             w.Argv,
		Script:           w.Script,
		Environment:      w.Environment,
		Env:              w.Env,
		WorkingDirectory: w.WorkingDirectory,
		TimeoutMs:        DefaultTimeoutMs,
		Retry:            RetryPolicy{MaxAttempts: 1},
		Concurrency:      DefaultConcurrency,
		Placement:        w.Placement,
		Limits:           w.Limits,
		RandomDelayMs:    w.RandomDelayMs,
	}
	if w.Shell != nil {
		c.Shell = &Shell{Command: w.Shell.Command, Shell: DefaultShell}
		if w.Shell.Shell != nil {
			c.Shell.Shell = *w.Shell.Shell
		}
	}
	if w.TimeoutMs != nil {
		c.TimeoutMs = *w.TimeoutMs
	}
	if w.Retry != nil {
		c.Retry = RetryPolicy{MaxAttempts: 1, BackoffBaseMs: w.Retry.BackoffBaseMs,
			BackoffMaxMs: w.Retry.BackoffMaxMs, RetryOnLost: w.Retry.RetryOnLost}
		if w.Retry.MaxAttempts != nil {
			c.Retry.MaxAttempts = *w.Retry.MaxAttempts
		}
	}
	if w.Concurrency != nil {
		c.Concurrency = *w.Concurrency
	}
	c = c.normalize()
	canon, err := c.canonicalNormalized() // validates, then bounds the canonical size
	if err != nil {
		return Command{}, nil, err
	}
	return c, canon, nil
}

// WithDefaults returns c with the defaults of zero-valued optional fields
// filled in (timeout, retry.maxAttempts, concurrency, shell), for callers
// that build a Command in Go rather than decoding one.
func (c Command) WithDefaults() Command {
	if c.TimeoutMs == 0 {
		c.TimeoutMs = DefaultTimeoutMs
	}
	if c.Retry.MaxAttempts == 0 {
		c.Retry.MaxAttempts = 1
	}
	if c.Concurrency == "" {
		c.Concurrency = DefaultConcurrency
	}
	if c.Shell != nil && c.Shell.Shell == "" {
		s := *c.Shell
		s.Shell = DefaultShell
		c.Shell = &s
	}
	return c
}

// normalize returns a copy whose collections share nothing with c, with
// empty collections nil and the placement normalized (nil when it imposes
// nothing), so equal specs have equal canonical forms.
func (c Command) normalize() Command {
	if c.Argv != nil {
		a := *c.Argv
		if len(a.Args) == 0 {
			a.Args = nil
		} else {
			a.Args = append([]string(nil), a.Args...)
		}
		c.Argv = &a
	}
	if c.Shell != nil {
		s := *c.Shell
		c.Shell = &s
	}
	if c.Script != nil {
		sc := *c.Script
		if len(sc.Args) == 0 {
			sc.Args = nil
		} else {
			sc.Args = append([]string(nil), sc.Args...)
		}
		c.Script = &sc
	}
	if len(c.Environment) == 0 {
		c.Environment = nil
	} else {
		env := make(map[string]string, len(c.Environment))
		for k, v := range c.Environment {
			env[k] = v
		}
		c.Environment = env
	}
	c.Env = normalizeEnvScope(c.Env)
	if c.Limits != nil {
		if *c.Limits == (Limits{}) {
			c.Limits = nil
		} else {
			l := *c.Limits
			c.Limits = &l
		}
	}
	if c.Placement != nil {
		if c.Placement.IsZero() {
			c.Placement = nil
		} else {
			p := c.Placement.Normalize()
			c.Placement = &p
		}
	}
	return c
}

// Canonical validates c and returns its canonical JSON. Zero-valued
// optional fields are invalid here; use WithDefaults first for a Command
// built in Go.
func (c Command) Canonical() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.normalize().encodeCanonical()
}

// canonicalNormalized is Canonical for a c that normalize returned
// (normalize is idempotent, so it is not repeated).
func (c Command) canonicalNormalized() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.encodeCanonical()
}

// encodeCanonical writes a valid, normalized c canonically and bounds the
// size.
func (c Command) encodeCanonical() ([]byte, error) {
	out := appendCanonical(make([]byte, 0, 512), c)
	if len(out) > MaxCanonicalBytes {
		return nil, errs.TooLargef("", "canonical spec is %d bytes, limit is %d", len(out), MaxCanonicalBytes)
	}
	return out, nil
}

// Digest is the SHA-256 of the canonical form under DigestDomain.
func (c Command) Digest() (canonjson.Digest, error) {
	b, err := c.Canonical()
	if err != nil {
		return canonjson.Digest{}, err
	}
	return canonjson.Sum(DigestDomain, b), nil
}
