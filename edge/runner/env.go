package runner

import (
	"context"
	"io"
	"sync"

	qlenv "github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/mask"
	"github.com/ql3/ql3/edge"
)

// EnvSource is what the runner reads of the env store (ADR 0038): the
// enabled entries with their values, at the start of each attempt.
type EnvSource interface {
	EnabledEnvs(ctx context.Context) ([]qlenv.Entry, error)
	EnvVersion() uint64
}

// envSnapshot is the enabled entries as of one EnvVersion, joined, with
// their masker: built once and shared by every start until the store
// changes, so a store of 1,000 entries costs a start nothing extra.
type envSnapshot struct {
	version uint64
	vars    []qlenv.Variable
	matcher *mask.Matcher
}

type envCache struct {
	mu   sync.Mutex
	snap *envSnapshot
}

func (r *Runner) envSnapshot(ctx context.Context) (*envSnapshot, error) {
	r.envs.mu.Lock()
	defer r.envs.mu.Unlock()
	v := r.cfg.Envs.EnvVersion() // read before the entries: a write in between only costs a re-read
	if r.envs.snap != nil && r.envs.snap.version == v {
		return r.envs.snap, nil
	}
	entries, err := r.cfg.Envs.EnabledEnvs(ctx)
	if err != nil {
		return nil, err
	}
	vars, err := qlenv.Resolve(entries)
	if err != nil {
		return nil, err
	}
	r.envs.snap = &envSnapshot{version: v, vars: vars, matcher: mask.New(qlenv.Secrets(entries))}
	return r.envs.snap, nil
}

var _ EnvSource = edge.EnvStore(nil)

// attemptEnv is what one attempt gets from the env store: its process
// environment and the masker of its output, both fixed at its start (an
// edit of the store applies to the next start, never to a running
// process).
type attemptEnv struct {
	vars    map[string]string
	matcher *mask.Matcher
	extra   map[string]string // QL3_* variables of the AttemptEnv hook (notifyenv.go)
}

// resolveEnv reads the store and composes the attempt's environment from
// the enabled entries, the task's env scope and its inline environment
// (core/qlenv.Compose). Without a store the inline environment is used as
// is, with nothing to mask.
func (r *Runner) resolveEnv(ctx context.Context, c edge.Claim) (attemptEnv, error) {
	cmd := c.Revision.Spec
	if r.cfg.Envs == nil {
		return attemptEnv{vars: cmd.Environment, extra: r.attemptExtraEnv(c)}, nil
	}
	snap, err := r.envSnapshot(ctx)
	if err != nil {
		return attemptEnv{}, err
	}
	composed, err := qlenv.Compose(snap.vars, cmd.Env, cmd.Environment)
	if err != nil {
		return attemptEnv{}, err
	}
	return attemptEnv{vars: composed, matcher: snap.matcher, extra: r.attemptExtraEnv(c)}, nil
}

// envErrorClass says how an attempt whose environment could not be built
// ends: a limit is the task's (validation), anything else ql3's.
func envErrorClass(err error) string {
	if errs.Code(err) == errs.Invalid {
		return "validation"
	}
	return "internal"
}

// maskedOutput sits between the executor and the attempt's log: every
// env value (and each &-part) is replaced by *** before a byte reaches
// the log file, also across writes (core/mask).
type maskedOutput struct {
	mu sync.Mutex
	w  *mask.Writer
}

func newMaskedOutput(dst io.Writer, m *mask.Matcher) *maskedOutput {
	return &maskedOutput{w: mask.NewWriter(dst, m)}
}

func (o *maskedOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.w.Write(p)
}

// finish writes the held-back tail and returns how many occurrences were
// masked. Call it once the process's output has ended.
func (o *maskedOutput) finish() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	_ = o.w.Flush() // a sink error is the log writer's to report
	return o.w.Count()
}
