package edge

import (
	"context"

	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/edge/envcrypt"
)

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
// the name).
type EnvPatch struct {
	Name    *string
	Value   *string
	Remarks *string
	Enabled *bool
	Pinned  *bool
	Labels  *[]string
}

// EnvFilter selects entries for ListEnvs, in QingLong order (pinned desc,
// position desc, created asc, id asc). Query matches a substring of the
// name or the remarks, case-insensitively; it never looks at values.
type EnvFilter struct {
	Query  string
	Limit  int    // 0 → DefaultPageSize; max MaxPageSize
	Cursor string // NextCursor of the previous page
}

// EnvPage is one page of ListEnvs. Entries carry no Value.
type EnvPage struct {
	Entries    []env.Entry
	Total      int // entries matching the filter
	NextCursor string
}

// AuditEntry is one line of the audit log. Never a value.
type AuditEntry struct {
	Seq    int64
	AtMs   int64
	Action string // env.reveal, env.export, env.create, env.update, env.delete, env.rotate_key …
	Target string // an entry id, a name, a count
	Actor  string // token, session, loopback-no-auth
	Detail string
}

// Audit actions of the env store.
const (
	AuditEnvCreate    = "env.create"
	AuditEnvUpdate    = "env.update"
	AuditEnvDelete    = "env.delete"
	AuditEnvReveal    = "env.reveal"
	AuditEnvExport    = "env.export"
	AuditEnvRotateKey = "env.rotate_key"
)

// EnvStore is the shared env store (ADR 0038). Values are plaintext only
// in memory: the store seals them with the data key before they reach the
// database. Reads that return values (RevealEnv, ExportEnvs with values)
// write their audit line in the same transaction as their read.
//
// Limits (core/env): at most env.MaxEntries entries; names, values,
// remarks and labels as env.Entry.Validate; the enabled entries' joined
// variables within env.CheckSizes. A refused change stores nothing.
type EnvStore interface {
	// UnlockEnv opens the store's data key with kek (creating and wrapping
	// a data key on first use). Every other method is errs.Unavailable
	// until it succeeded.
	UnlockEnv(ctx context.Context, kek *envcrypt.KEK) error
	// HasEnvKey reports whether a data key exists (then the key file that
	// wrapped it is needed; a fresh key file would not open it).
	HasEnvKey(ctx context.Context) (bool, error)
	// RotateEnvKey re-wraps the data key under next without downtime:
	// the new wrapping is committed, then install writes the key file, then
	// the old wrappings are removed. A crash between the steps leaves a
	// database both key files open.
	RotateEnvKey(ctx context.Context, next *envcrypt.KEK, install func() error, actor string) error

	CreateEnvs(ctx context.Context, in []EnvInput, actor string) ([]env.Entry, error)
	UpdateEnv(ctx context.Context, id string, p EnvPatch, actor string) (env.Entry, error)
	DeleteEnvs(ctx context.Context, ids []string, actor string) (deleted int, err error)
	// MoveEnv places id directly before the entry before in list order
	// ("" → last), keeping its pinned state (env.MoveBefore).
	MoveEnv(ctx context.Context, id, before string) (env.Entry, error)
	// GetEnv returns an entry without its value.
	GetEnv(ctx context.Context, id string) (env.Entry, error)
	ListEnvs(ctx context.Context, f EnvFilter) (EnvPage, error)
	// RevealEnv returns one entry with its value and audits the read.
	RevealEnv(ctx context.Context, id, actor string) (env.Entry, error)
	// ExportEnvs returns every entry in list order; with values it audits.
	ExportEnvs(ctx context.Context, withValues bool, actor string) ([]env.Entry, error)
	// EnabledEnvs returns the enabled entries with their values: what a
	// Run's process gets and what its output is masked with.
	EnabledEnvs(ctx context.Context) ([]env.Entry, error)
	// EnvVersion changes whenever the entries may have changed (in this
	// process): a reader may keep what EnabledEnvs returned while it stays.
	EnvVersion() uint64
	// ListAudit returns audit lines with Seq > afterSeq, oldest first.
	ListAudit(ctx context.Context, afterSeq int64, limit int) ([]AuditEntry, error)
}
