package envstore

import (
	"encoding/base64"
	"encoding/json"
	"slices"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/spec"
)

// Pinning at claim (ADR 0051). When the dispatcher claims an attempt, the
// same statement copies the project's enabled entries — ciphertext only —
// into ql3.attempt_envs (first claim of the attempt wins: ON CONFLICT DO
// NOTHING), and the offer (and every replay of it) is built from that
// copy. An edit after the claim reaches the next attempt, never this one.

// PinnedEntriesSQL aggregates the enabled entries of project_id = <project>
// (alias x, ql3.env_entries) into the jsonb array ql3.attempt_envs.entries
// holds: {i: id, n: name, c: base64(ciphertext), p: pinned, o: position,
// t: created_at_ms} per entry (pinnedEntry). NULL when the project has none.
const PinnedEntriesSQL = `(SELECT jsonb_agg(jsonb_build_object('i', x.entry_id::text, 'n', x.name, 'c', encode(x.value_ct, 'base64'),
		'p', x.pinned, 'o', x.position, 't', x.created_at_ms)) FROM ql3.env_entries x WHERE x.project_id = %s AND x.enabled)`

// pinnedEntry is one element of attempt_envs.entries.
type pinnedEntry struct {
	ID       string `json:"i"`
	Name     string `json:"n"`
	Sealed   string `json:"c"` // base64 (PostgreSQL's, with line breaks)
	Pinned   bool   `json:"p"`
	Position int64  `json:"o"`
	Created  int64  `json:"t"`
}

// OfferEnv opens the entries pinned for an attempt (the text of
// attempt_envs.entries; "" when none were pinned) and returns what the
// offer carries: the variables joined in QingLong order (env.Resolve),
// narrowed to the task's scope (env.use) and without the names the spec's
// inline environment sets when the spec says env.inlineWins — so the worker
// sets them over the inline environment and gets env.Compose's result.
// The result depends only on the pinned text and the spec: a replay is
// byte-identical.
func OfferEnv(pinned string, open controlplane.EnvOpener, cmd spec.Command) ([]protocol.EnvVar, error) {
	if pinned == "" {
		return nil, nil
	}
	if open == nil {
		return nil, errs.E(errs.Unavailable, "", "the attempt has env entries but the env store is locked: start ql3-control with %s", KeyFlag)
	}
	var raw []pinnedEntry
	if err := json.Unmarshal([]byte(pinned), &raw); err != nil {
		return nil, errs.E(errs.Internal, "", "pinned env entries do not decode: %v", err)
	}
	entries := make([]env.Entry, len(raw))
	for i, r := range raw {
		e := &entries[i]
		*e = env.Entry{ID: r.ID, Name: r.Name, Enabled: true, Pinned: r.Pinned, Position: r.Position, CreatedAtMs: r.Created}
		blob, err := base64.StdEncoding.DecodeString(r.Sealed) // PostgreSQL's base64 has line breaks; Go skips them
		if err != nil {
			return nil, errs.E(errs.Internal, "", "pinned env entry %s: ciphertext does not decode", e.ID)
		}
		if e.Value, err = open.Open(e.ID, e.Name, blob); err != nil {
			return nil, errs.E(errs.Internal, "", "%v", err)
		}
	}
	vars, err := env.Resolve(entries)
	if err != nil {
		return nil, err
	}
	if _, err := env.Compose(vars, cmd.Env, cmd.Environment); err != nil { // the 1 MiB a process may get
		return nil, err
	}
	out := make([]protocol.EnvVar, 0, len(vars))
	for _, v := range vars { // sorted by name
		if !cmd.Env.All() && !slices.Contains(cmd.Env.Use, v.Name) {
			continue
		}
		if _, clash := cmd.Environment[v.Name]; clash && cmd.Env.Wins() {
			continue // the inline value stays: the worker sets it from the spec
		}
		out = append(out, protocol.EnvVar{Name: v.Name, Value: v.Value})
	}
	return out, nil
}
