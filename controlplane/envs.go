package controlplane

import (
	"context"

	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/envseal"
)

// The env store of the cluster (ADR 0038 for the model and the at-rest
// format, ADR 0051 for the cluster): entries per project, values stored
// only as AEAD ciphertext (core/envseal) under one data key wrapped by the
// key file every replica is given (--secret-key-file). The shapes are the
// edge's (edge.EnvStore) with a project.

// EnvInput is one new env entry (CreateEnvs).
type EnvInput struct {
	Name    string
	Value   string
	Remarks string
	Enabled bool
	Pinned  bool
	Labels  []string
}

// EnvPatch changes some fields of an entry (UpdateEnv); nil leaves a field
// as it is. A new Name re-encrypts the value (its ciphertext is bound to
// the entry id and the name).
type EnvPatch struct {
	Name    *string
	Value   *string
	Remarks *string
	Enabled *bool
	Pinned  *bool
	Labels  *[]string
}

// EnvFilter selects a project's entries for ListEnvs, in QingLong order
// (pinned desc, position desc, created asc, id asc). Query matches a
// substring of the name or the remarks, case-insensitively; it never looks
// at values. Page.Limit is 1..MaxListLimit (0 → DefaultListLimit).
type EnvFilter struct {
	Query string
	Page  ListRequest
}

// EnvPage is one page of ListEnvs. Entries carry no Value.
type EnvPage struct {
	Entries    []env.Entry
	Total      int // entries of the project matching the filter
	NextCursor string
}

// Audit actions of the env store (audit_log.action; details never hold a
// value).
const (
	AuditEnvCreate    = "env.create"
	AuditEnvUpdate    = "env.update"
	AuditEnvDelete    = "env.delete"
	AuditEnvMove      = "env.move"
	AuditEnvReveal    = "env.reveal"
	AuditEnvExport    = "env.export"
	AuditEnvRotateKey = "env.rotate_key"
	AuditEnvRetireKey = "env.retire_key"
)

// EnvStore is a project's env entries (admin role). projectID is a
// project's id (callers resolve a name with Publication.GetProject); an
// unknown project is errs.NotFound. Every mutation and every read that
// returns values (RevealEnv, ExportEnvs with values) writes its audit line
// as ActorOf(ctx) in the same transaction. Until the store is unlocked
// (EnvKeys.UnlockEnv) every method is errs.Unavailable naming
// --secret-key-file.
//
// Limits (core/env): at most env.MaxEntries entries per project; fields as
// env.Entry.Validate; a project's enabled entries within env.CheckSizes. A
// refused change stores nothing and is errs.Invalid naming the field and
// the limit.
type EnvStore interface {
	CreateEnvs(ctx context.Context, projectID string, in []EnvInput) ([]env.Entry, error)
	UpdateEnv(ctx context.Context, projectID, id string, p EnvPatch) (env.Entry, error)
	// DeleteEnvs deletes the listed entries of the project (all or none).
	DeleteEnvs(ctx context.Context, projectID string, ids []string) (deleted int, err error)
	// MoveEnv places id directly before the entry before in list order
	// ("" → last), keeping its pinned state (env.MoveBefore).
	MoveEnv(ctx context.Context, projectID, id, before string) (env.Entry, error)
	// GetEnv returns an entry without its value.
	GetEnv(ctx context.Context, projectID, id string) (env.Entry, error)
	ListEnvs(ctx context.Context, projectID string, f EnvFilter) (EnvPage, error)
	// RevealEnv returns one entry with its value and audits the read.
	RevealEnv(ctx context.Context, projectID, id string) (env.Entry, error)
	// ExportEnvs returns every entry of the project in list order; with
	// values it audits the read.
	ExportEnvs(ctx context.Context, projectID string, withValues bool) ([]env.Entry, error)
}

// EnvKeys is the data key of the env store (admin role).
type EnvKeys interface {
	// HasEnvKey reports whether a data key exists (then only a key file
	// that wraps it opens the store).
	HasEnvKey(ctx context.Context) (bool, error)
	// UnlockEnv opens the data key with kek (creating and wrapping a data
	// key on first use, when no entry exists). A kek that wraps no data
	// key of the database is an error naming path and the key ids the
	// database knows.
	UnlockEnv(ctx context.Context, kek envseal.KEK, path string) error
	// AddEnvKey wraps the open data key under next as well: both key files
	// open the store until RetireEnvKeys. Replicas keep serving.
	AddEnvKey(ctx context.Context, next envseal.KEK) error
	// RetireEnvKeys removes every wrapping but keep's (which must exist);
	// it returns how many were removed.
	RetireEnvKeys(ctx context.Context, keep envseal.KEK) (int, error)
}

// EnvOpener opens the pinned entries of an attempt for its offer (the
// dispatcher, runtime role): the data key's Cipher once unlocked.
type EnvOpener interface {
	Open(id, name string, blob []byte) (string, error)
}
