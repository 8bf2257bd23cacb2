package agent

import (
	"io"
	"sync"

	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/mask"
	"github.com/ql3/ql3/core/protocol"
)

// Env store values on the worker (ADR 0051). The offer carries the values
// the attempt's process gets; they live in this process's memory only:
//
//   - the journal keeps the offer without them (journalOffer): a restart
//     never spawns a journaled attempt again, and a pull whose answer was
//     lost is resent and answered by the authority's byte-identical
//     replay, values included;
//   - the output is masked before it reaches the spool file (maskedOutput):
//     every value and each "&"-part of at least 4 bytes becomes "***",
//     also across writes; the count goes to the completion (maskedCount).

// journalOffer is the offer body the journal keeps: body itself when the
// offer has no env, else the offer re-encoded without it.
func journalOffer(o protocol.Offer, body []byte) ([]byte, error) {
	if len(o.Env) == 0 {
		return append([]byte(nil), body...), nil
	}
	o.Env = nil
	return o.Encode()
}

// processEnv is the environment the attempt's process gets from its spec
// and the env store: the spec's inline environment with the offer's
// variables over it (the authority left out the names where the spec says
// its inline values win), within env.MaxProcessBytes (env.Compose).
func processEnv(o protocol.Offer) (map[string]string, error) {
	if len(o.Env) == 0 {
		return o.Spec.Environment, nil
	}
	vars := make([]env.Variable, len(o.Env))
	for i, v := range o.Env {
		vars[i] = env.Variable{Name: v.Name, Value: v.Value}
	}
	return env.Compose(vars, nil, o.Spec.Environment)
}

// maskedOutput sits between the executor and the spool.
type maskedOutput struct {
	mu sync.Mutex
	w  *mask.Writer
}

// newMaskedOutput masks the offer's values on the way to dst; nil when the
// offer has none (the output goes to dst as it is).
func newMaskedOutput(dst io.Writer, o protocol.Offer) *maskedOutput {
	if len(o.Env) == 0 {
		return nil
	}
	return &maskedOutput{w: mask.NewWriter(dst, mask.New(o.EnvSecrets()))}
}

func (m *maskedOutput) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.w.Write(p)
}

// finish writes the held-back tail and returns the count of masked
// occurrences; call it once the process's output has ended.
func (m *maskedOutput) finish() int64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_ = m.w.Flush() // a spool error is the spool's to report
	return int64(m.w.Count())
}
