package controlplane

import (
	"errors"
	"fmt"

	"github.com/ql3/ql3/core/errs"
)

// The kinds of SchemaError, for errors.Is.
var (
	// ErrChecksumMismatch: a recorded migration's checksum (or name) differs
	// from the binary's, or the recorded history has a gap. The database was
	// migrated by a different build; refuse rather than guess.
	ErrChecksumMismatch = errors.New("recorded migration history differs from this binary's")
	// ErrSchemaTooNew: the database records a version this binary does not know.
	ErrSchemaTooNew = errors.New("database schema is newer than this binary")
	// ErrSchemaBehind: migrations are pending (Readiness only; Migrate applies them).
	ErrSchemaBehind = errors.New("database schema has pending migrations")
	// ErrRoleSetup: the ql3 roles could not be created or assumed.
	ErrRoleSetup = errors.New("ql3 roles cannot be set up")
)

// SchemaError says why a database's schema is not usable by this binary.
// It unwraps to its Kind and to a coded errs.Unavailable, so readiness probes
// and the HTTP layer need no PostgreSQL knowledge.
type SchemaError struct {
	Kind            error
	Version         int // the migration concerned, 0 when not about one
	DatabaseVersion int // highest recorded version
	BinaryVersion   int // highest embedded version
	Detail          string
}

func (e *SchemaError) Error() string {
	s := "postgres: " + e.Kind.Error()
	if e.Version > 0 {
		s += fmt.Sprintf(" (migration %d)", e.Version)
	}
	if e.DatabaseVersion > 0 || e.BinaryVersion > 0 {
		s += fmt.Sprintf(" [database v%d, binary v%d]", e.DatabaseVersion, e.BinaryVersion)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap exposes the kind and a coded unavailable error.
func (e *SchemaError) Unwrap() []error {
	return []error{e.Kind, errs.E(errs.Unavailable, "", "schema not ready: %s", e.Kind.Error())}
}
