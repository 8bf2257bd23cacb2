package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/migrations"
)

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
    version       INTEGER NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL,
    checksum      TEXT    NOT NULL,
    applied_at_ms INTEGER NOT NULL
) STRICT`

// migrate applies the pending migrations in order, each in its own
// transaction together with its schema_migrations row. Before applying
// anything it verifies every recorded migration: a version this binary does
// not embed (a newer schema) or a checksum that differs (an edited
// migration) is refused, and nothing is changed.
func migrate(ctx context.Context, db *sql.DB, ms []migrations.Migration, nowMs int64) error {
	if _, err := db.ExecContext(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for _, m := range ms {
		if err := applyOne(ctx, db, ms, m, nowMs); err != nil {
			return err
		}
	}
	return nil
}

// applyOne checks the recorded history and applies m if it is missing, all
// inside one BEGIN IMMEDIATE transaction so two processes opening the same
// file concurrently cannot both apply it.
func applyOne(ctx context.Context, db *sql.DB, ms []migrations.Migration, m migrations.Migration, nowMs int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %04d: begin: %w", m.Version, err)
	}
	defer tx.Rollback()
	applied, err := verifyHistory(ctx, tx, ms)
	if err != nil {
		return err
	}
	if applied[m.Version] {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, name, checksum, applied_at_ms) VALUES (?, ?, ?, ?)`,
		m.Version, m.Name, m.Checksum, nowMs); err != nil {
		return fmt.Errorf("migration %04d_%s: record: %w", m.Version, m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %04d_%s: commit: %w", m.Version, m.Name, err)
	}
	return nil
}

// verifyHistory reads schema_migrations and compares it with the embedded
// list, returning the set of applied versions.
func verifyHistory(ctx context.Context, tx *sql.Tx, ms []migrations.Migration) (map[int]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version, name, checksum FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	defer rows.Close()
	applied := map[int]bool{}
	for rows.Next() {
		var (
			version        int
			name, checksum string
		)
		if err := rows.Scan(&version, &name, &checksum); err != nil {
			return nil, fmt.Errorf("read schema_migrations: %w", err)
		}
		if version < 1 || version > len(ms) {
			return nil, errs.E(errs.Unavailable, "schema", "database schema version %d (%s) is newer than this binary knows (%d); upgrade ql3-edge",
				version, name, len(ms))
		}
		if want := ms[version-1]; want.Checksum != checksum {
			return nil, errs.E(errs.Unavailable, "schema", "migration %04d_%s was applied with checksum %s but this binary embeds %s; the database or the binary was altered",
				version, name, checksum, want.Checksum)
		}
		applied[version] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	return applied, nil
}
