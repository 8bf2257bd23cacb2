// Package postgres is the control plane's PostgreSQL adapter foundation: the
// migration runner, the least-privilege roles and their exact GRANTs, pgx pool
// helpers and the translation of driver errors into core/errs codes.
//
// Every ql3 object lives in schema ql3 and every statement names it
// explicitly (ql3.runs, never runs): pools made by NewPool run with an empty
// search_path, so an unqualified name fails loudly instead of resolving to
// whatever a session happens to have on its path.
package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Schema is the PostgreSQL schema that holds every ql3 table.
const Schema = "ql3"

// The four roles of DESIGN.md §6. They are cluster-wide PostgreSQL roles;
// Migrate creates them (NOLOGIN) when missing and grants each exactly what its
// job needs in the migrated database.
const (
	RoleMigrator      = "ql3_migrator"       // owns the schema, runs migrations
	RoleAdmin         = "ql3_admin"          // publishes, creates/resets schedules, manages workers
	RoleRuntime       = "ql3_runtime"        // scheduler, dispatcher, sweeper: runs/attempts/events/leases
	RoleWorkerIngress = "ql3_worker_ingress" // authenticates workers, writes sessions and audit lines
)

// Roles returns the four role names, owner first.
func Roles() []string {
	return []string{RoleMigrator, RoleAdmin, RoleRuntime, RoleWorkerIngress}
}

// DB is what the helpers in this package need from a connection: *pgx.Conn,
// *pgxpool.Pool and pgx.Tx all satisfy it.
type DB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// DBNowMs is dbNowMs for the adapter's subpackages.
const DBNowMs = dbNowMs

// dbNowMs is the database clock in epoch milliseconds. PostgreSQL is the
// time authority of the control plane, so bookkeeping times come from here
// and never from the node.
const dbNowMs = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`
