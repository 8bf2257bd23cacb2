package postgres

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/migrations"
)

// advisoryLockKey serialises migrators (and grant installs) per database.
// Transaction-scoped locks are used so a pooled connection can never leak a
// held lock; every step re-reads the history under the lock.
const advisoryLockKey int64 = 0x716c335f6d6967 // "ql3_mig"

// MigrateOptions configures Migrate.
type MigrateOptions struct {
	// Migrations to apply; nil means the embedded migrations.Postgres().
	Migrations []migrations.Migration
	// Logger receives one line per applied migration; nil discards.
	Logger *slog.Logger
}

// MigrateResult reports what Migrate did.
type MigrateResult struct {
	Applied []int // versions applied by this call, in order
	Version int   // the database's version afterwards
}

// Record is one row of ql3.schema_migrations.
type Record struct {
	Version     int
	Name        string
	Checksum    string
	AppliedAtMs int64
}

const bootstrapSQL = `CREATE TABLE IF NOT EXISTS ql3.schema_migrations (
	version       integer PRIMARY KEY CHECK (version >= 1),
	name          text    NOT NULL,
	checksum      text    NOT NULL CHECK (checksum ~ '^[0-9a-f]{64}$'),
	applied_at_ms bigint  NOT NULL
)`

// Migrate brings the database db is connected to up to the newest migration:
//
//  1. creates the four roles when missing (NOLOGIN; see EnableLogin),
//     schema ql3 and the bookkeeping table ql3.schema_migrations;
//  2. refuses (controlplane.SchemaError, nothing applied) a database whose recorded
//     history differs from the binary's (controlplane.ErrChecksumMismatch) or that is newer
//     (controlplane.ErrSchemaTooNew);
//  3. applies each pending migration in its own transaction as ql3_migrator,
//     recording version, name, checksum and the database time;
//  4. installs the exact GRANTs (InstallGrants).
//
// Every step holds a transaction-scoped advisory lock, so concurrent
// migrators (several replicas starting at once) serialise and the later ones
// find nothing to do. Applying twice is a no-op apart from re-asserting the
// grants. The connecting user must be a superuser, or a member of
// ql3_migrator with CREATE on the database (and CREATEROLE while roles are
// missing).
func Migrate(ctx context.Context, db DB, opts MigrateOptions) (MigrateResult, error) {
	known := opts.Migrations
	if known == nil {
		known = migrations.Postgres()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for i, m := range known {
		if m.Version != i+1 {
			return MigrateResult{}, fmt.Errorf("postgres: migration list must be versions 1..N, found %d at position %d", m.Version, i+1)
		}
	}
	if err := bootstrap(ctx, db, known); err != nil {
		return MigrateResult{}, err
	}
	var res MigrateResult
	for _, m := range known {
		applied, err := applyOne(ctx, db, known, m)
		if err != nil {
			return res, err
		}
		if applied {
			res.Applied = append(res.Applied, m.Version)
			log.Info("postgres migration applied", "version", m.Version, "name", m.Name)
		}
	}
	if err := InstallGrants(ctx, db); err != nil {
		return res, err
	}
	res.Version = len(known)
	return res, nil
}

func bootstrap(ctx context.Context, db DB, known []migrations.Migration) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return errorf(err, "postgres: begin bootstrap")
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", advisoryLockKey); err != nil {
		return errorf(err, "postgres: migration lock")
	}
	if err := ensureRoles(ctx, tx); err != nil {
		return err
	}
	// Created by the connecting user (who needs CREATE on the database), owned
	// by ql3_migrator.
	if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS ql3 AUTHORIZATION "+RoleMigrator); err != nil {
		return errorf(err, "postgres: create schema ql3")
	}
	if err := setLocalMigratorRole(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, bootstrapSQL); err != nil {
		return errorf(err, "postgres: create ql3.schema_migrations")
	}
	recs, err := readHistory(ctx, tx)
	if err != nil {
		return err
	}
	if err := verifyHistory(recs, known); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return errorf(err, "postgres: commit bootstrap")
	}
	return nil
}

// applyOne applies m unless it is already recorded. It re-verifies the whole
// history under the lock, because another migrator may have run meanwhile.
func applyOne(ctx context.Context, db DB, known []migrations.Migration, m migrations.Migration) (bool, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return false, errorf(err, "postgres: begin migration %d", m.Version)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", advisoryLockKey); err != nil {
		return false, errorf(err, "postgres: migration lock")
	}
	if err := setLocalMigratorRole(ctx, tx); err != nil {
		return false, err
	}
	recs, err := readHistory(ctx, tx)
	if err != nil {
		return false, err
	}
	if err := verifyHistory(recs, known); err != nil {
		return false, err
	}
	if len(recs) >= m.Version {
		return false, nil
	}
	if len(recs) != m.Version-1 {
		return false, fmt.Errorf("postgres: migration %d applied out of order (database at v%d)", m.Version, len(recs))
	}
	// No arguments: pgx uses the simple protocol, which runs the file's
	// statements in order within this transaction.
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return false, errorf(err, "postgres: migration %04d_%s", m.Version, m.Name)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO ql3.schema_migrations (version, name, checksum, applied_at_ms)
		VALUES ($1, $2, $3, `+dbNowMs+`)`, m.Version, m.Name, m.Checksum); err != nil {
		return false, errorf(err, "postgres: record migration %d", m.Version)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, errorf(err, "postgres: commit migration %d", m.Version)
	}
	return true, nil
}

func readHistory(ctx context.Context, q DB) ([]Record, error) {
	rows, err := q.Query(ctx, "SELECT version, name, checksum, applied_at_ms FROM ql3.schema_migrations ORDER BY version")
	if err != nil {
		return nil, errorf(err, "postgres: read ql3.schema_migrations")
	}
	recs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Record, error) {
		var rec Record
		err := r.Scan(&rec.Version, &rec.Name, &rec.Checksum, &rec.AppliedAtMs)
		return rec, err
	})
	if err != nil {
		return nil, errorf(err, "postgres: read ql3.schema_migrations")
	}
	return recs, nil
}

// verifyHistory checks that recs is a prefix of known, byte for byte.
func verifyHistory(recs []Record, known []migrations.Migration) error {
	dbVersion := 0
	if len(recs) > 0 {
		dbVersion = recs[len(recs)-1].Version
	}
	if dbVersion > len(known) {
		return &controlplane.SchemaError{Kind: controlplane.ErrSchemaTooNew, Version: dbVersion, DatabaseVersion: dbVersion, BinaryVersion: len(known)}
	}
	for i, r := range recs {
		if r.Version != i+1 {
			return &controlplane.SchemaError{Kind: controlplane.ErrChecksumMismatch, Version: i + 1, DatabaseVersion: dbVersion, BinaryVersion: len(known),
				Detail: "recorded history has a gap"}
		}
		m := known[i]
		if r.Checksum != m.Checksum || r.Name != m.Name {
			return &controlplane.SchemaError{Kind: controlplane.ErrChecksumMismatch, Version: r.Version, DatabaseVersion: dbVersion, BinaryVersion: len(known),
				Detail: fmt.Sprintf("recorded %s %.12s…, binary has %s %.12s…", r.Name, r.Checksum, m.Name, m.Checksum)}
		}
	}
	return nil
}

// SchemaStatus describes the database's schema relative to the binary.
type SchemaStatus struct {
	DatabaseVersion int
	BinaryVersion   int
	Records         []Record
}

// Readiness reports whether the database db is connected to has exactly the
// binary's embedded schema; nil means ready. It only reads (any ql3 role may
// call it) and returns a *controlplane.SchemaError saying why not: controlplane.ErrSchemaBehind when
// migrations are pending or the schema does not exist, controlplane.ErrChecksumMismatch,
// controlplane.ErrSchemaTooNew.
func Readiness(ctx context.Context, db DB) error {
	_, err := CheckSchema(ctx, db, migrations.Postgres())
	return err
}

// CheckSchema is Readiness against an explicit migration list, returning the
// recorded history as well.
func CheckSchema(ctx context.Context, db DB, known []migrations.Migration) (SchemaStatus, error) {
	st := SchemaStatus{BinaryVersion: len(known)}
	var exists bool
	if err := db.QueryRow(ctx, "SELECT pg_catalog.to_regclass('ql3.schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return st, errorf(err, "postgres: readiness")
	}
	if !exists {
		return st, &controlplane.SchemaError{Kind: controlplane.ErrSchemaBehind, BinaryVersion: len(known), Detail: "ql3.schema_migrations does not exist (never migrated)"}
	}
	recs, err := readHistory(ctx, db)
	if err != nil {
		return st, err
	}
	st.Records = recs
	if len(recs) > 0 {
		st.DatabaseVersion = recs[len(recs)-1].Version
	}
	if err := verifyHistory(recs, known); err != nil {
		return st, err
	}
	if len(recs) < len(known) {
		return st, &controlplane.SchemaError{Kind: controlplane.ErrSchemaBehind, DatabaseVersion: st.DatabaseVersion, BinaryVersion: len(known),
			Detail: fmt.Sprintf("%d migration(s) pending", len(known)-len(recs))}
	}
	return st, nil
}
