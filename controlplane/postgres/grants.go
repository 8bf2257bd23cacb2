package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/ql3/ql3/controlplane"
)

// tableGrant is one row of the privilege matrix: role → comma-separated
// table privileges.
type tableGrant struct {
	Table  string
	Grants map[string]string
}

// tableGrants is the exact privilege matrix of DESIGN.md §6: table → role →
// privileges. Anything not listed is revoked. ql3_migrator owns every table
// and needs no grant. Every table in schema ql3 must appear here: InstallGrants
// refuses a schema with a table it has no row for, so a migration cannot add
// a table that silently gets no (or default) privileges.
//
// Rules the matrix encodes:
//   - ql3_admin publishes (projects, tasks, revisions, triggers), creates and
//     resets schedule rows, manages workers and credentials; it only reads
//     runs, attempts, events, sessions and leases.
//   - ql3_runtime reads what admission and dispatch need, SELECT/UPDATE on
//     schedules (never INSERT: rows are born with their trigger), writes runs,
//     attempts, events, leases and log chunks; it cannot read credentials.
//   - ql3_worker_ingress reads credentials and the fences it checks, writes
//     sessions and audit lines, and cannot mutate runs, attempts or leases.
//   - immutable tables (revisions, events, audit) are never UPDATEd by
//     anyone but the owner; revisions are never DELETEd. Finished Runs (with
//     their attempts, events, leases and logs) and audit rows are DELETEd
//     only by the runtime role's retention sweep (migration 0007, ADR 0016),
//     oldest first and only past the configured age.
var tableGrants = []tableGrant{
	{"schema_migrations", map[string]string{RoleAdmin: "SELECT", RoleRuntime: "SELECT", RoleWorkerIngress: "SELECT"}},
	{"projects", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE", RoleRuntime: "SELECT"}},
	{"tasks", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE", RoleRuntime: "SELECT"}},
	{"task_revisions", map[string]string{RoleAdmin: "SELECT, INSERT", RoleRuntime: "SELECT"}},
	{"execution_revisions", map[string]string{RoleAdmin: "SELECT, INSERT", RoleRuntime: "SELECT"}},
	{"triggers", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE", RoleRuntime: "SELECT"}},
	{"trigger_revisions", map[string]string{RoleAdmin: "SELECT, INSERT", RoleRuntime: "SELECT"}},
	{"trigger_schedules", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE", RoleRuntime: "SELECT, UPDATE"}},
	{"runs", map[string]string{RoleAdmin: "SELECT", RoleRuntime: "SELECT, INSERT, UPDATE, DELETE", RoleWorkerIngress: "SELECT"}},
	{"attempts", map[string]string{RoleAdmin: "SELECT", RoleRuntime: "SELECT, INSERT, UPDATE, DELETE", RoleWorkerIngress: "SELECT"}},
	{"run_events", map[string]string{RoleAdmin: "SELECT", RoleRuntime: "SELECT, INSERT, DELETE"}},
	{"workers", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE", RoleRuntime: "SELECT", RoleWorkerIngress: "SELECT"}},
	{"worker_credentials", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE", RoleWorkerIngress: "SELECT"}},
	{"worker_sessions", map[string]string{RoleAdmin: "SELECT", RoleRuntime: "SELECT", RoleWorkerIngress: "SELECT, INSERT, UPDATE"}},
	{"run_leases", map[string]string{RoleAdmin: "SELECT", RoleRuntime: "SELECT, INSERT, UPDATE, DELETE", RoleWorkerIngress: "SELECT"}},
	// 0022: the queue of claimable Runs, kept by triggers on runs (whose
	// writer is the runtime role) and drained by the runtime role's claim.
	{"run_queue", map[string]string{RoleRuntime: "SELECT, INSERT, DELETE"}},
	{"run_log_chunks", map[string]string{RoleAdmin: "SELECT", RoleRuntime: "SELECT, INSERT, DELETE"}},
	// 0006: per-stream log state, written by the runtime role with its
	// chunks (DELETE for log retention, with the chunks).
	{"run_log_streams", map[string]string{RoleAdmin: "SELECT", RoleRuntime: "SELECT, INSERT, UPDATE, DELETE"}},
	{"audit_log", map[string]string{RoleAdmin: "SELECT, INSERT", RoleRuntime: "SELECT, INSERT, DELETE", RoleWorkerIngress: "INSERT"}},
	// 0002: publication idempotency and admin API tokens are ql3_admin's alone.
	{"publication_mutations", map[string]string{RoleAdmin: "SELECT, INSERT"}},
	{"api_tokens", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE"}},
	// 0012: the run-event feed's consumers, claimed and advanced by the
	// runtime role (the admin role may look).
	{"run_event_consumers", map[string]string{RoleAdmin: "SELECT", RoleRuntime: "SELECT, INSERT, UPDATE"}},
	// 0013: the env store (ADR 0051). The admin role writes entries and the
	// wrapped data key; the runtime role reads them to pin an attempt's
	// entries at its claim (attempt_envs) and to open them for the offer.
	{"env_entries", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE, DELETE", RoleRuntime: "SELECT"}},
	{"env_keys", map[string]string{RoleAdmin: "SELECT, INSERT, DELETE", RoleRuntime: "SELECT"}},
	{"attempt_envs", map[string]string{RoleRuntime: "SELECT, INSERT, DELETE"}},
	// 0014: the scripts folders (ADR 0052). The admin role writes them;
	// the runtime role serves a leased worker its tree and deletes blobs
	// nothing names any more (retention).
	{"script_blobs", map[string]string{RoleAdmin: "SELECT, INSERT", RoleRuntime: "SELECT, DELETE"}},
	{"script_entries", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE, DELETE", RoleRuntime: "SELECT"}},
	{"script_trees", map[string]string{RoleAdmin: "SELECT, INSERT", RoleRuntime: "SELECT"}},
	{"script_tree_files", map[string]string{RoleAdmin: "SELECT, INSERT", RoleRuntime: "SELECT"}},
	// 0015: notifications. The admin role keeps channels and rules and
	// queues a channel's "send test"; the runtime role derives the outbox,
	// delivers it and logs attempts; the ingress role reads none of it.
	{"notify_keys", map[string]string{RoleAdmin: "SELECT, INSERT", RoleRuntime: "SELECT, INSERT"}},
	{"notify_channels", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE, DELETE", RoleRuntime: "SELECT"}},
	{"notify_rules", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE, DELETE", RoleRuntime: "SELECT"}},
	{"notify_outbox", map[string]string{RoleAdmin: "SELECT, INSERT", RoleRuntime: "SELECT, INSERT, UPDATE"}},
	{"notify_attempts", map[string]string{RoleAdmin: "SELECT", RoleRuntime: "SELECT, INSERT"}},
	{"notify_coalesce", map[string]string{RoleAdmin: "SELECT", RoleRuntime: "SELECT, INSERT, UPDATE"}},
	// 0016: QingLong's Open API (ADR 0057): apps, their tokens and the
	// numeric ids, the admin role's alone.
	{"open_apps", map[string]string{RoleAdmin: "SELECT, INSERT, DELETE"}},
	{"open_tokens", map[string]string{RoleAdmin: "SELECT, INSERT, DELETE"}},
	{"open_ids", map[string]string{RoleAdmin: "SELECT, INSERT"}},
	// 0017: accounts and their sign-in log (ADR 0060), the admin role's alone.
	{"accounts", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE, DELETE"}},
	{"signins", map[string]string{RoleAdmin: "SELECT, INSERT, DELETE"}},
	// 0018: task labels and saved views (ADR 0057), the admin role's alone.
	{"task_labels", map[string]string{RoleAdmin: "SELECT, INSERT, DELETE"}},
	{"task_views", map[string]string{RoleAdmin: "SELECT, INSERT, DELETE"}},
	// 0019: subscriptions (ADR 0061): kept and pulled by the control plane
	// on the admin role, which also publishes their tasks and trees.
	{"subscriptions", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE, DELETE"}},
	{"subscription_tasks", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE, DELETE"}},
	// 0020: the cluster's dependencies (ADR 0062), the admin role's; the
	// end of a Run is recorded by a SECURITY DEFINER trigger, so the
	// runtime role needs nothing here.
	{"dependencies", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE, DELETE"}},
	{"dependency_settings", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE"}},
	{"dependency_installs", map[string]string{RoleAdmin: "SELECT, INSERT, UPDATE, DELETE"}},
	// 0021: the import ledger (ADR 0063), the admin role's alone.
	{"import_ledger", map[string]string{RoleAdmin: "SELECT, INSERT"}},
	{"import_rows", map[string]string{RoleAdmin: "SELECT, INSERT"}},
}

// grantees are the roles whose privileges InstallGrants owns completely.
var grantees = []string{RoleAdmin, RoleRuntime, RoleWorkerIngress}

func quoteIdent(s string) string { return pgx.Identifier{s}.Sanitize() }

// quoteLiteral quotes s as an SQL string literal (standard_conforming_strings
// is on in every supported server version).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// grantStatements is the idempotent statement list that makes the schema's
// privileges exactly tableGrants: revoke everything from PUBLIC and the
// grantees, then grant the matrix. It runs as ql3_migrator (the owner) in one
// transaction, so no session ever observes a half-installed state.
func grantStatements() []string {
	all := "PUBLIC, " + strings.Join(grantees, ", ")
	stmts := []string{
		"REVOKE ALL ON SCHEMA ql3 FROM " + all,
		"GRANT USAGE ON SCHEMA ql3 TO " + strings.Join(grantees, ", "),
		"REVOKE ALL ON ALL TABLES IN SCHEMA ql3 FROM " + all,
		"REVOKE ALL ON ALL SEQUENCES IN SCHEMA ql3 FROM " + all,
		"REVOKE ALL ON ALL ROUTINES IN SCHEMA ql3 FROM " + all,
		// Functions are executable by PUBLIC by default; a future migration's
		// function must not be, even before the grant step runs.
		"ALTER DEFAULT PRIVILEGES FOR ROLE ql3_migrator IN SCHEMA ql3 REVOKE EXECUTE ON ROUTINES FROM PUBLIC",
	}
	for _, tg := range tableGrants {
		for _, role := range grantees {
			if privs, ok := tg.Grants[role]; ok {
				stmts = append(stmts, fmt.Sprintf("GRANT %s ON TABLE ql3.%s TO %s", privs, quoteIdent(tg.Table), role))
			}
		}
	}
	return stmts
}

// InstallGrants makes the privileges in the current database exactly the
// matrix above. It is idempotent and Migrate calls it after every run; it
// needs the connecting user to be a superuser or a member of ql3_migrator.
// The database-level ACL (CONNECT for the four roles, nothing for PUBLIC) is
// installed too when the connecting user owns the database or is a superuser;
// otherwise that part is left to the DBA.
func InstallGrants(ctx context.Context, db DB) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return errorf(err, "postgres: begin grants")
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", advisoryLockKey); err != nil {
		return errorf(err, "postgres: migration lock")
	}
	if err := installDatabaseACL(ctx, tx); err != nil {
		return err
	}
	if err := setLocalMigratorRole(ctx, tx); err != nil {
		return err
	}
	if err := checkGrantCoverage(ctx, tx); err != nil {
		return err
	}
	for _, stmt := range grantStatements() {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return errorf(err, "postgres: %s", stmt)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return errorf(err, "postgres: commit grants")
	}
	return nil
}

func installDatabaseACL(ctx context.Context, tx pgx.Tx) error {
	var dbName string
	var canAlter bool
	err := tx.QueryRow(ctx, `
		SELECT d.datname, r.rolsuper OR pg_has_role(session_user, d.datdba, 'MEMBER')
		FROM pg_catalog.pg_database d, pg_catalog.pg_roles r
		WHERE d.datname = current_database() AND r.rolname = session_user`).Scan(&dbName, &canAlter)
	if err != nil {
		return errorf(err, "postgres: inspect database owner")
	}
	if !canAlter {
		return nil
	}
	for _, stmt := range []string{
		"REVOKE ALL ON DATABASE " + quoteIdent(dbName) + " FROM PUBLIC",
		"GRANT CONNECT ON DATABASE " + quoteIdent(dbName) + " TO " + strings.Join(Roles(), ", "),
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return errorf(err, "postgres: %s", stmt)
		}
	}
	return nil
}

// checkGrantCoverage refuses a schema whose tables and the matrix disagree.
func checkGrantCoverage(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'ql3' AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1`)
	if err != nil {
		return errorf(err, "postgres: list tables")
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return errorf(err, "postgres: list tables")
	}
	var known []string
	for _, tg := range tableGrants {
		known = append(known, tg.Table)
	}
	for _, t := range tables {
		if !slices.Contains(known, t) {
			return fmt.Errorf("postgres: table ql3.%s has no entry in the grant matrix", t)
		}
	}
	return nil
}

// ensureRoles creates the four roles that do not exist yet, NOLOGIN. Roles
// are cluster-wide, so two databases migrating at once may race on creation;
// the loser's duplicate is ignored. Existing roles are taken as they are:
// whether they can log in, and with which password, is the operator's call
// (see EnableLogin).
func ensureRoles(ctx context.Context, tx pgx.Tx) error {
	for _, role := range Roles() {
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1)", role).Scan(&exists); err != nil {
			return errorf(err, "postgres: look up role %s", role)
		}
		if exists {
			continue
		}
		stmt := fmt.Sprintf(`DO $$ BEGIN
			CREATE ROLE %s NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
			EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
			END $$`, quoteIdent(role))
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return &controlplane.SchemaError{Kind: controlplane.ErrRoleSetup, Detail: fmt.Sprintf("cannot create role %s (needs CREATEROLE, or create it beforehand): %v", role, err)}
		}
	}
	return nil
}

// setLocalMigratorRole makes the rest of the transaction run as the owner, so
// every object a migration creates is owned by ql3_migrator whoever connected.
func setLocalMigratorRole(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+RoleMigrator); err != nil {
		return &controlplane.SchemaError{Kind: controlplane.ErrRoleSetup, Detail: fmt.Sprintf("connecting user must be a superuser or a member of %s: %v", RoleMigrator, err)}
	}
	if _, err := tx.Exec(ctx, "SELECT pg_catalog.set_config('search_path', '', true)"); err != nil {
		return errorf(err, "postgres: set search_path")
	}
	return nil
}

// EnableLogins lets every ql3 role (Roles) log in, with password when it
// is not empty (sent to the server as a literal: use a TLS or local
// connection). Migrate never does this itself; deployments, benchmarks and
// the test harness decide.
func EnableLogins(ctx context.Context, db DB, password string) error {
	for _, role := range Roles() {
		if err := EnableLogin(ctx, db, role, password); err != nil {
			return err
		}
	}
	return nil
}

// EnableLogin lets one ql3 role log in (see EnableLogins).
func EnableLogin(ctx context.Context, db DB, role, password string) error {
	if !slices.Contains(Roles(), role) {
		return fmt.Errorf("postgres: %q is not a ql3 role", role)
	}
	stmt := "ALTER ROLE " + quoteIdent(role) + " LOGIN"
	if password != "" {
		stmt += " PASSWORD " + quoteLiteral(password)
	}
	if _, err := db.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("postgres: enable login for %s: %w", role, Translate(err))
	}
	return nil
}
