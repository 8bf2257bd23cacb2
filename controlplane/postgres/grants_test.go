package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
)

const (
	admin   = postgres.RoleAdmin
	runtime = postgres.RoleRuntime
	ingress = postgres.RoleWorkerIngress
)

// wantPrivileges is DESIGN.md §6 and issue 4 written out independently of
// the implementation's matrix: table → role → allowed operations
// (S=SELECT, I=INSERT, U=UPDATE, D=DELETE). Missing means nothing.
var wantPrivileges = map[string]map[string]string{
	"schema_migrations":   {admin: "S", runtime: "S", ingress: "S"},
	"projects":            {admin: "SIU", runtime: "S"},
	"tasks":               {admin: "SIU", runtime: "S"},
	"task_revisions":      {admin: "SI", runtime: "S"},
	"execution_revisions": {admin: "SI", runtime: "S"},
	"triggers":            {admin: "SIU", runtime: "S"},
	"trigger_revisions":   {admin: "SI", runtime: "S"},
	"trigger_schedules":   {admin: "SIU", runtime: "SU"},
	"runs":                {admin: "S", runtime: "SIUD", ingress: "S"},
	"attempts":            {admin: "S", runtime: "SIUD", ingress: "S"},
	"run_events":          {admin: "S", runtime: "SID"},
	"workers":             {admin: "SIU", runtime: "S", ingress: "S"},
	"worker_credentials":  {admin: "SIU", ingress: "S"},
	"worker_sessions":     {admin: "S", runtime: "S", ingress: "SIU"},
	"run_leases":          {admin: "S", runtime: "SIUD", ingress: "S"},
	"run_log_chunks":      {admin: "S", runtime: "SID"},
	"run_log_streams":     {admin: "S", runtime: "SIUD"},
	"audit_log":           {admin: "SI", runtime: "SID", ingress: "I"},
	// Migration 0002 (publication, admin API): admin's job only.
	"publication_mutations": {admin: "SI"},
	"api_tokens":            {admin: "SIU"},
	// Migration 0012 (run-event feed): the runtime role claims and
	// advances consumers; nobody deletes one.
	"run_event_consumers": {admin: "S", runtime: "SIU"},
	// Migration 0013 (env store): the admin role writes entries and the
	// wrapped key; the runtime role reads them and pins an attempt's copy.
	"env_entries":  {admin: "SIUD", runtime: "S"},
	"env_keys":     {admin: "SID", runtime: "S"},
	"attempt_envs": {runtime: "SID"},
	// Migration 0014 (scripts folders): the admin role writes them, the
	// runtime role reads a leased tree and deletes unnamed blobs.
	"script_blobs":      {admin: "SI", runtime: "SD"},
	"script_entries":    {admin: "SIUD", runtime: "S"},
	"script_trees":      {admin: "SI", runtime: "S"},
	"script_tree_files": {admin: "SI", runtime: "S"},
	// Migration 0015 (notifications): admin keeps channels and rules and
	// queues tests; runtime derives and delivers; ingress sees nothing.
	"notify_keys":     {admin: "SI", runtime: "SI"},
	"notify_channels": {admin: "SIUD", runtime: "S"},
	"notify_rules":    {admin: "SIUD", runtime: "S"},
	"notify_outbox":   {admin: "SI", runtime: "SIU"},
	"notify_attempts": {admin: "S", runtime: "SI"},
	"notify_coalesce": {admin: "S", runtime: "SIU"},
	// Migration 0016 (QingLong's Open API, ADR 0057): admin's job only.
	"open_apps":   {admin: "SID"},
	"open_tokens": {admin: "SID"},
	"open_ids":    {admin: "SI"},
	// Migration 0017 (accounts, ADR 0060): admin's job only; a sign-in
	// line is never rewritten.
	"accounts": {admin: "SIUD"},
	"signins":  {admin: "SID"},
	// Migration 0018 (task labels and saved views, ADR 0057): admin's job only.
	"task_labels": {admin: "SID"},
	"task_views":  {admin: "SID"},
	// Migration 0019 (subscriptions, ADR 0061): admin's job only.
	"subscriptions":      {admin: "SIUD"},
	"subscription_tasks": {admin: "SIUD"},
	// Migration 0022 (the claim's queue, ADR 0064): kept by triggers on
	// runs and drained by the claim, both the runtime role's.
	"run_queue": {runtime: "SID"},
	// Migration 0020 (the cluster's dependencies, ADR 0062): admin's job;
	// a Run's end is recorded by a SECURITY DEFINER trigger.
	"dependencies":        {admin: "SIUD"},
	"dependency_settings": {admin: "SIU"},
	"dependency_installs": {admin: "SIUD"},
	// Migration 0021 (the import ledger, ADR 0063): admin's job only; a
	// ledger row is never rewritten.
	"import_ledger": {admin: "SI"},
	"import_rows":   {admin: "SI"},
}

// mustDeny are the denials issue 4 names explicitly; they guard the table
// above against a well-meant edit.
var mustDeny = []struct{ role, table, ops string }{
	{runtime, "trigger_schedules", "ID"},
	{runtime, "worker_credentials", "SIUD"},
	{ingress, "runs", "IUD"},
	{ingress, "attempts", "IUD"},
	{ingress, "run_leases", "IUD"},
	{ingress, "run_log_streams", "SIUD"},
	{ingress, "run_log_chunks", "SIUD"},
	{admin, "worker_sessions", "IUD"},
	{admin, "run_leases", "IUD"},
	{admin, "runs", "IUD"},
	{admin, "run_events", "IUD"},
	{admin, "attempts", "IUD"},
	{admin, "audit_log", "UD"},
	{runtime, "run_events", "U"},
	{runtime, "audit_log", "U"},
	{ingress, "run_event_consumers", "SIUD"},
	{ingress, "env_entries", "SIUD"},
	{ingress, "env_keys", "SIUD"},
	{ingress, "attempt_envs", "SIUD"},
	{admin, "attempt_envs", "SIUD"},
	{runtime, "env_entries", "IUD"},
	{runtime, "env_keys", "IUD"},
	{ingress, "notify_channels", "SIUD"},
	{ingress, "notify_keys", "SIUD"},
	{runtime, "notify_channels", "IUD"},
	{runtime, "notify_attempts", "UD"},
	{admin, "notify_attempts", "IUD"},
}

var opNames = map[byte]string{'S': "SELECT", 'I': "INSERT", 'U': "UPDATE", 'D': "DELETE"}

// fixture ids; every table gets one seeded row (two where an INSERT needs a
// row without a dependent, e.g. a trigger without a schedule).
type fixture map[string]string

func newFixture() fixture {
	f := fixture{}
	for _, k := range []string{"P", "T", "E", "G", "G2", "R1", "R2", "A1", "A2", "W1", "W2", "C1", "S1", "L1", "AU", "EN", "NC", "NR"} {
		f[k] = uuid.Must(uuid.NewV7()).String()
	}
	return f
}

// sql expands {K} to the fixture id K, {N} to a fresh UUIDv7 and {D} to a
// 32-byte digest literal.
func (f fixture) sql(s string) string {
	n := uuid.Must(uuid.NewV7()).String()
	pairs := []string{"{N}", "'" + n + "'", "{D}", `'\xabababababababababababababababababababababababababababababababab'::bytea`}
	for k, v := range f {
		pairs = append(pairs, "{"+k+"}", "'"+v+"'")
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

const seedSQL = `
INSERT INTO ql3.projects (project_id, name, status, created_at_ms, updated_at_ms) VALUES ({P}, 'p1', 'active', 1, 1);
INSERT INTO ql3.tasks (task_id, project_id, name, head_revision, created_at_ms, updated_at_ms) VALUES ({T}, {P}, 't1', 1, 1, 1);
INSERT INTO ql3.task_revisions (task_id, revision, project_id, spec, spec_digest, created_at_ms)
	VALUES ({T}, 1, {P}, '{}', {D}, 1), ({T}, 2, {P}, '{}', {D}, 1);
INSERT INTO ql3.execution_revisions (execution_revision_id, project_id, task_id, task_revision, executor, spec_kind, canonical_spec, digest, created_at_ms)
	VALUES ({E}, {P}, {T}, 1, 'remote_worker', 'qinglong/command@v1', '{}', {D}, 1);
INSERT INTO ql3.triggers (trigger_id, project_id, task_id, name, head_revision, created_at_ms, updated_at_ms)
	VALUES ({G}, {P}, {T}, 'g1', 1, 1, 1), ({G2}, {P}, {T}, 'g2', 1, 1, 1);
INSERT INTO ql3.trigger_revisions (trigger_id, revision, project_id, task_id, task_revision, execution_revision_id, execution_digest,
	expression, time_zone, misfire_policy, misfire_grace_ms, enabled, activated_at_ms, created_at_ms)
	VALUES ({G}, 1, {P}, {T}, 1, {E}, {D}, '* * * * *', 'UTC', 'skip', 30000, true, 1, 1),
	       ({G2}, 1, {P}, {T}, 1, {E}, {D}, '@hourly', 'UTC', 'fire_once', 30000, true, 1, 1);
INSERT INTO ql3.trigger_schedules (trigger_id, project_id, trigger_revision, updated_at_ms) VALUES ({G}, {P}, 1, 1);
INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest, origin, trigger_id, trigger_revision,
	idempotency_key, scheduled_for_ms, status, retry_max_attempts, retry_backoff_base_ms, retry_backoff_max_ms, retry_on_lost, timeout_ms,
	not_before_ms, created_at_ms, updated_at_ms)
	VALUES ({R1}, {P}, {T}, 1, {E}, {D}, 'cron', {G}, 1, 'k1', 60000, 'queued', 3, 0, 0, true, 60000, 0, 1, 1),
	       ({R2}, {P}, {T}, 1, {E}, {D}, 'cron', {G}, 1, 'k2', 120000, 'queued', 3, 0, 0, true, 60000, 0, 1, 1);
INSERT INTO ql3.workers (worker_id, name, status, created_at_ms, updated_at_ms) VALUES ({W1}, 'w1', 'active', 1, 1), ({W2}, 'w2', 'active', 1, 1);
INSERT INTO ql3.worker_credentials (credential_id, worker_id, secret_digest, status, created_at_ms) VALUES ({C1}, {W1}, {D}, 'active', 1);
INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, credential_id, capacity, capabilities, capabilities_digest,
	heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms)
	VALUES ({S1}, {W1}, 1, 'online', {C1}, 4, '{}', {D}, 1, 45001, 1, 1);
INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, created_at_ms, updated_at_ms)
	VALUES ({A1}, {R1}, 1, {P}, 'claimed', 'remote_worker', 1, 1), ({A2}, {R2}, 1, {P}, 'claimed', 'remote_worker', 1, 1);
INSERT INTO ql3.run_events (run_id, sequence, project_id, type, payload, created_at_ms) VALUES ({R1}, 1, {P}, 'run.created', '{}', 1);
INSERT INTO ql3.run_leases (lease_id, run_id, attempt_id, attempt, project_id, worker_id, session_id, session_generation, offer_id,
	token_digest, lease_generation, status, leased_at_ms, expires_at_ms, updated_at_ms)
	VALUES ({L1}, {R1}, {A1}, 1, {P}, {W1}, {S1}, 1, 'offer-1', {D}, 1, 'leased', 1, 30001, 1);
INSERT INTO ql3.run_log_chunks (run_id, attempt, stream, offset_bytes, project_id, data, created_at_ms) VALUES ({R1}, 1, 'stdout', 0, {P}, '\x6869', 1);
INSERT INTO ql3.run_log_streams (run_id, attempt, stream, project_id, length_bytes, stored_bytes, created_at_ms, updated_at_ms) VALUES ({R1}, 1, 'stdout', {P}, 2, 2, 1, 1);
INSERT INTO ql3.audit_log (audit_id, at_ms, actor_kind, action, outcome) VALUES ({AU}, 1, 'system', 'test.seed', 'ok');
INSERT INTO ql3.publication_mutations (mutation_id, kind, request_digest, result, created_at_ms) VALUES ('m-1', 'task.create', {D}, '{}', 1);
INSERT INTO ql3.api_tokens (token_id, name, token_digest, status, created_at_ms) VALUES ('00000000000000a1', 'tok1', {D}, 'active', 1);
INSERT INTO ql3.run_event_consumers (consumer, updated_at_ms) VALUES ('seed', 1);
INSERT INTO ql3.env_entries (entry_id, project_id, name, value_ct, value_bytes, enabled, position, created_at_ms, updated_at_ms)
	VALUES ({EN}, {P}, 'A', decode(repeat('ab', 30), 'hex'), 2, true, 0, 1, 1);
INSERT INTO ql3.env_keys (kek_id, wrapped, created_at_ms) VALUES ('00000000000000a1', decode(repeat('ab', 60), 'hex'), 1);
INSERT INTO ql3.attempt_envs (attempt_id, project_id, entries, created_at_ms) VALUES ({A1}, {P}, '[]', 1);
INSERT INTO ql3.script_blobs (project_id, sha256, size, content, created_at_ms) VALUES ({P}, {D}, 0, '', 1);
INSERT INTO ql3.script_entries (project_id, path, parent, kind, sha256, mtime_ms) VALUES ({P}, 'f.js', '', 'file', {D}, 1);
INSERT INTO ql3.script_trees (project_id, digest, files, bytes, created_at_ms) VALUES ({P}, {D}, 1, 0, 1);
INSERT INTO ql3.script_tree_files (project_id, tree_digest, path, sha256, size, executable) VALUES ({P}, {D}, 'f.js', {D}, 0, false);
INSERT INTO ql3.notify_keys (id, kek_id, wrapped, created_at_ms) VALUES (1, 'k1', '\x00', 1);
INSERT INTO ql3.notify_channels (channel_id, project_id, name, kind, sealed, public, enabled, created_at_ms, updated_at_ms)
	VALUES ({NC}, {P}, 'c1', 'webhook', '\x00', '{}', true, 1, 1);
INSERT INTO ql3.notify_rules (rule_id, project_id, name, body, enabled, created_at_ms, updated_at_ms) VALUES ({NR}, {P}, 'r1', '{}', true, 1, 1);
INSERT INTO ql3.notify_outbox (project_id, idempotency_key, channel_id, kind, title, content, status, created_at_ms, next_at_ms, give_up_at_ms)
	VALUES ({P}, 'seed-1', {NC}, 'failed', 't', 'c', 'pending', 1, 1, 1);
INSERT INTO ql3.notify_attempts (outbox_id, n, at_ms, owner) SELECT outbox_id, 1, 1, 'r' FROM ql3.notify_outbox WHERE idempotency_key = 'seed-1';
INSERT INTO ql3.notify_coalesce (rule_id, task_id, window_start_ms, sent, held) VALUES ('r1', 't1', 1, 1, 0);
INSERT INTO ql3.open_apps (app_id, project_id, name, client_id, secret_digest, scopes, created_at_ms)
	VALUES ('00000000-0000-7000-8000-0000000000a1', {P}, 'app1', 'abcdefghijk1', {D}, '{crons}', 1);
INSERT INTO ql3.open_tokens (token_digest, app_id, created_at_ms, expires_at_ms) VALUES ({D}, '00000000-0000-7000-8000-0000000000a1', 1, 2);
INSERT INTO ql3.open_ids (project_id, kind, ref) VALUES ({P}, 'task', 'seed');
INSERT INTO ql3.accounts (username, password_hash, created_at_ms) VALUES ('alice', '$argon2id$x', 1);
INSERT INTO ql3.signins (at_ms, username, outcome, remote) VALUES (1, 'alice', 'ok', '127.0.0.1');
INSERT INTO ql3.task_labels (label, task_id, project_id) VALUES ('l1', {T}, {P});
INSERT INTO ql3.task_views (view_id, project_id, name, created_at_ms) VALUES ('00000000-0000-7000-8000-0000000000b1', {P}, 'v1', 1);
INSERT INTO ql3.tasks (task_id, project_id, name, head_revision, created_at_ms, updated_at_ms) VALUES ('00000000-0000-7000-8000-0000000000c2', {P}, 'sub-t2', 1, 1, 1);
INSERT INTO ql3.task_revisions (task_id, revision, project_id, spec, spec_digest, created_at_ms)
	VALUES ('00000000-0000-7000-8000-0000000000c2', 1, {P}, '{}', {D}, 1);
INSERT INTO ql3.subscriptions (subscription_id, project_id, name, slug, kind, url, auto_add, auto_remove, remove_mode, enabled, created_at_ms, updated_at_ms)
	VALUES ('00000000-0000-7000-8000-0000000000c1', {P}, 's1', 's1', 'git', 'file:///r', true, true, 'disable', true, 1, 1);
INSERT INTO ql3.subscription_tasks (subscription_id, task_id, project_id, path, applied_name, given_name, applied_cron, applied_revision, applied_digest)
	VALUES ('00000000-0000-7000-8000-0000000000c1', {T}, {P}, 'a.js', 'a', 'a', '* * * * *', 1, {D});
INSERT INTO ql3.dependencies (dependency_id, project_id, kind, name, created_at_ms, updated_at_ms)
	VALUES ('00000000-0000-7000-8000-0000000000d1', {P}, 'node', 'axios', 1, 1);
INSERT INTO ql3.dependency_settings (project_id, kind, updated_at_ms) VALUES ({P}, 'node', 1);
INSERT INTO ql3.dependency_installs (dependency_id, project_id, worker_id, task_id, action, run_key, status, started_at_ms)
	VALUES ('00000000-0000-7000-8000-0000000000d1', {P}, {W1}, {T}, 'install', 'dep:seed', 'installing', 1);
INSERT INTO ql3.import_ledger (project_id, plan_digest, zone, source, applied_at_ms) VALUES ({P}, 'sha256:seed', 'Asia/Shanghai', '/ql', 1);
INSERT INTO ql3.import_rows (project_id, plan_digest, kind, source_id, target_id) VALUES ({P}, 'sha256:seed', 'task', 1, {T});
`

// tableOps: a valid INSERT of a new row and an UPDATE of exactly one seeded
// row, per table. DELETE is "DELETE … WHERE false" (needs the DELETE
// privilege and nothing else); SELECT is count(*).
var tableOps = map[string]struct{ insert, update string }{
	"schema_migrations": {
		`INSERT INTO ql3.schema_migrations (version, name, checksum, applied_at_ms) VALUES (999, 'x', repeat('0', 64), 1)`,
		`UPDATE ql3.schema_migrations SET applied_at_ms = 1 WHERE version = 1`},
	"projects": {
		`INSERT INTO ql3.projects (project_id, name, status, created_at_ms, updated_at_ms) VALUES ({N}, 'p2', 'active', 1, 1)`,
		`UPDATE ql3.projects SET updated_at_ms = 2 WHERE project_id = {P}`},
	"tasks": {
		`INSERT INTO ql3.tasks (task_id, project_id, name, head_revision, created_at_ms, updated_at_ms) VALUES ({N}, {P}, 't2', 1, 1, 1)`,
		`UPDATE ql3.tasks SET updated_at_ms = 2 WHERE task_id = {T}`},
	"task_revisions": {
		`INSERT INTO ql3.task_revisions (task_id, revision, project_id, spec, spec_digest, created_at_ms) VALUES ({T}, 3, {P}, '{}', {D}, 1)`,
		`UPDATE ql3.task_revisions SET created_at_ms = 2 WHERE task_id = {T} AND revision = 1`},
	"execution_revisions": {
		`INSERT INTO ql3.execution_revisions (execution_revision_id, project_id, task_id, task_revision, executor, spec_kind, canonical_spec, digest, created_at_ms)
			VALUES ({N}, {P}, {T}, 2, 'remote_worker', 'qinglong/command@v1', '{}', {D}, 1)`,
		`UPDATE ql3.execution_revisions SET created_at_ms = 2 WHERE execution_revision_id = {E}`},
	"triggers": {
		`INSERT INTO ql3.triggers (trigger_id, project_id, task_id, name, head_revision, created_at_ms, updated_at_ms) VALUES ({N}, {P}, {T}, 'g3', 1, 1, 1)`,
		`UPDATE ql3.triggers SET updated_at_ms = 2 WHERE trigger_id = {G}`},
	"trigger_revisions": {
		`INSERT INTO ql3.trigger_revisions (trigger_id, revision, project_id, task_id, task_revision, execution_revision_id, execution_digest,
			expression, time_zone, misfire_policy, misfire_grace_ms, enabled, activated_at_ms, created_at_ms)
			VALUES ({G}, 2, {P}, {T}, 1, {E}, {D}, '*/5 * * * *', 'Europe/Berlin', 'skip', 0, false, 1, 1)`,
		`UPDATE ql3.trigger_revisions SET created_at_ms = 2 WHERE trigger_id = {G} AND revision = 1`},
	"trigger_schedules": {
		`INSERT INTO ql3.trigger_schedules (trigger_id, project_id, trigger_revision, updated_at_ms) VALUES ({G2}, {P}, 1, 1)`,
		`UPDATE ql3.trigger_schedules SET updated_at_ms = 2 WHERE trigger_id = {G}`},
	"runs": {
		`INSERT INTO ql3.runs (run_id, project_id, task_id, task_revision, execution_revision_id, execution_digest, origin, idempotency_key,
			scheduled_for_ms, status, retry_max_attempts, retry_backoff_base_ms, retry_backoff_max_ms, retry_on_lost, timeout_ms,
			not_before_ms, created_at_ms, updated_at_ms)
			VALUES ({N}, {P}, {T}, 1, {E}, {D}, 'manual', 'manual-1', 1, 'queued', 1, 0, 0, false, 60000, 0, 1, 1)`,
		`UPDATE ql3.runs SET updated_at_ms = 2 WHERE run_id = {R1}`},
	"attempts": {
		`INSERT INTO ql3.attempts (attempt_id, run_id, attempt, project_id, status, executor, created_at_ms, updated_at_ms)
			VALUES ({N}, {R1}, 2, {P}, 'claimed', 'remote_worker', 1, 1)`,
		`UPDATE ql3.attempts SET updated_at_ms = 2 WHERE attempt_id = {A1}`},
	"run_events": {
		`INSERT INTO ql3.run_events (run_id, sequence, project_id, type, payload, created_at_ms) VALUES ({R1}, 2, {P}, 'run.queued', '{}', 1)`,
		`UPDATE ql3.run_events SET created_at_ms = 2 WHERE run_id = {R1} AND sequence = 1`},
	"workers": {
		`INSERT INTO ql3.workers (worker_id, name, status, created_at_ms, updated_at_ms) VALUES ({N}, 'w3', 'active', 1, 1)`,
		`UPDATE ql3.workers SET updated_at_ms = 2 WHERE worker_id = {W1}`},
	"worker_credentials": {
		`INSERT INTO ql3.worker_credentials (credential_id, worker_id, secret_digest, status, created_at_ms) VALUES ({N}, {W1}, {D}, 'active', 1)`,
		`UPDATE ql3.worker_credentials SET expires_at_ms = 99 WHERE credential_id = {C1}`},
	"worker_sessions": {
		`INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, capacity, capabilities, capabilities_digest,
			heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms)
			VALUES ({N}, {W2}, 1, 'online', 1, '{}', {D}, 1, 45001, 1, 1)`,
		`UPDATE ql3.worker_sessions SET updated_at_ms = 2 WHERE session_id = {S1}`},
	"run_leases": {
		`INSERT INTO ql3.run_leases (lease_id, run_id, attempt_id, attempt, project_id, worker_id, session_id, session_generation, offer_id,
			token_digest, lease_generation, status, leased_at_ms, expires_at_ms, updated_at_ms)
			VALUES ({N}, {R2}, {A2}, 1, {P}, {W1}, {S1}, 1, 'offer-2', {D}, 1, 'leased', 1, 30001, 1)`,
		`UPDATE ql3.run_leases SET updated_at_ms = 2 WHERE lease_id = {L1}`},
	"run_log_chunks": {
		`INSERT INTO ql3.run_log_chunks (run_id, attempt, stream, offset_bytes, project_id, data, created_at_ms) VALUES ({R1}, 1, 'stdout', 2, {P}, '\x6869', 1)`,
		`UPDATE ql3.run_log_chunks SET created_at_ms = 2 WHERE run_id = {R1} AND attempt = 1 AND stream = 'stdout' AND offset_bytes = 0`},
	"run_log_streams": {
		`INSERT INTO ql3.run_log_streams (run_id, attempt, stream, project_id, created_at_ms, updated_at_ms) VALUES ({R1}, 1, 'stderr', {P}, 1, 1)`,
		`UPDATE ql3.run_log_streams SET updated_at_ms = 2 WHERE run_id = {R1} AND attempt = 1 AND stream = 'stdout'`},
	"audit_log": {
		`INSERT INTO ql3.audit_log (audit_id, at_ms, actor_kind, action, outcome) VALUES ({N}, 1, 'worker', 'session.open', 'ok')`,
		`UPDATE ql3.audit_log SET at_ms = 2 WHERE audit_id = {AU}`},
	"publication_mutations": {
		`INSERT INTO ql3.publication_mutations (mutation_id, kind, request_digest, result, created_at_ms) VALUES ('m-2', 'task.create', {D}, '{}', 1)`,
		`UPDATE ql3.publication_mutations SET created_at_ms = 2 WHERE mutation_id = 'm-1'`},
	"api_tokens": {
		`INSERT INTO ql3.api_tokens (token_id, name, token_digest, status, created_at_ms)
			VALUES ('00000000000000b2', 'tok2', '\xcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd'::bytea, 'active', 1)`,
		`UPDATE ql3.api_tokens SET name = 'renamed' WHERE token_id = '00000000000000a1'`},
	"run_event_consumers": {
		`INSERT INTO ql3.run_event_consumers (consumer, updated_at_ms) VALUES ('notify', 1)`,
		`UPDATE ql3.run_event_consumers SET updated_at_ms = 2 WHERE consumer = 'seed'`},
	"env_entries": {
		`INSERT INTO ql3.env_entries (entry_id, project_id, name, value_ct, value_bytes, enabled, position, created_at_ms, updated_at_ms)
			VALUES ({N}, {P}, 'B', decode(repeat('ab', 30), 'hex'), 2, true, 0, 1, 1)`,
		`UPDATE ql3.env_entries SET updated_at_ms = 2 WHERE entry_id = {EN}`},
	"env_keys": {
		`INSERT INTO ql3.env_keys (kek_id, wrapped, created_at_ms) VALUES ('00000000000000b2', decode(repeat('ab', 60), 'hex'), 1)`,
		`UPDATE ql3.env_keys SET created_at_ms = 2 WHERE kek_id = '00000000000000a1'`},
	"attempt_envs": {
		`INSERT INTO ql3.attempt_envs (attempt_id, project_id, entries, created_at_ms) VALUES ({A2}, {P}, '[]', 1)`,
		`UPDATE ql3.attempt_envs SET created_at_ms = 2 WHERE attempt_id = {A1}`},
	"script_blobs": {
		`INSERT INTO ql3.script_blobs (project_id, sha256, size, content, created_at_ms) VALUES ({P}, sha256('x'), 1, 'x', 1)`,
		`UPDATE ql3.script_blobs SET created_at_ms = 2 WHERE project_id = {P}`},
	"script_entries": {
		`INSERT INTO ql3.script_entries (project_id, path, parent, kind, mtime_ms) VALUES ({P}, 'd', '', 'dir', 1)`,
		`UPDATE ql3.script_entries SET mtime_ms = 2 WHERE project_id = {P}`},
	"script_trees": {
		`INSERT INTO ql3.script_trees (project_id, digest, files, bytes, created_at_ms) VALUES ({P}, sha256('t'), 0, 0, 1)`,
		`UPDATE ql3.script_trees SET created_at_ms = 2 WHERE project_id = {P}`},
	"script_tree_files": {
		`INSERT INTO ql3.script_tree_files (project_id, tree_digest, path, sha256, size, executable) VALUES ({P}, {D}, 'g.js', {D}, 0, false)`,
		`UPDATE ql3.script_tree_files SET executable = true WHERE project_id = {P}`},
	"notify_keys": {
		`INSERT INTO ql3.notify_keys (id, kek_id, wrapped, created_at_ms) VALUES (1, 'k2', '\x00', 1) ON CONFLICT (id) DO NOTHING`,
		`UPDATE ql3.notify_keys SET created_at_ms = 2 WHERE id = 1`},
	"notify_channels": {
		`INSERT INTO ql3.notify_channels (channel_id, project_id, name, kind, sealed, public, enabled, created_at_ms, updated_at_ms)
			VALUES ({N}, {P}, 'c2', 'webhook', '\x00', '{}', true, 1, 1)`,
		`UPDATE ql3.notify_channels SET updated_at_ms = 2 WHERE channel_id = {NC}`},
	"notify_rules": {
		`INSERT INTO ql3.notify_rules (rule_id, project_id, name, body, enabled, created_at_ms, updated_at_ms) VALUES ({N}, {P}, 'r2', '{}', true, 1, 1)`,
		`UPDATE ql3.notify_rules SET updated_at_ms = 2 WHERE rule_id = {NR}`},
	"notify_outbox": {
		`INSERT INTO ql3.notify_outbox (project_id, idempotency_key, channel_id, kind, title, content, status, created_at_ms, next_at_ms, give_up_at_ms)
			VALUES ({P}, 'k-2', {NC}, 'failed', 't', 'c', 'pending', 1, 1, 1)`,
		`UPDATE ql3.notify_outbox SET next_at_ms = 2 WHERE idempotency_key = 'seed-1'`},
	"notify_attempts": {
		`INSERT INTO ql3.notify_attempts (outbox_id, n, at_ms, owner) SELECT outbox_id, 2, 1, 'r' FROM ql3.notify_outbox WHERE idempotency_key = 'seed-1'`,
		`UPDATE ql3.notify_attempts SET at_ms = 2 WHERE n = 1`},
	"notify_coalesce": {
		`INSERT INTO ql3.notify_coalesce (rule_id, task_id, window_start_ms, sent, held) VALUES ('r2', 't1', 1, 1, 0)`,
		`UPDATE ql3.notify_coalesce SET sent = 2 WHERE rule_id = 'r1'`},
	"open_apps": {
		`INSERT INTO ql3.open_apps (app_id, project_id, name, client_id, secret_digest, scopes, created_at_ms)
			VALUES ({N}, {P}, 'app2', 'abcdefghijk2', {D}, '{envs}', 1)`,
		`UPDATE ql3.open_apps SET name = 'renamed' WHERE name = 'app1'`},
	"open_tokens": {
		`INSERT INTO ql3.open_tokens (token_digest, app_id, created_at_ms, expires_at_ms)
			VALUES ('\xcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd'::bytea, '00000000-0000-7000-8000-0000000000a1', 1, 2)`,
		`UPDATE ql3.open_tokens SET expires_at_ms = 3 WHERE created_at_ms = 1`},
	"open_ids": {
		`INSERT INTO ql3.open_ids (project_id, kind, ref) VALUES ({P}, 'env', 'seed')`,
		`UPDATE ql3.open_ids SET ref = 'moved' WHERE ref = 'seed'`},
	"accounts": {
		`INSERT INTO ql3.accounts (username, password_hash, created_at_ms) VALUES ('bob', '$argon2id$y', 1)`,
		`UPDATE ql3.accounts SET failures = 1 WHERE username = 'alice'`},
	"signins": {
		`INSERT INTO ql3.signins (at_ms, username, outcome, remote) VALUES (2, 'bob', 'bad_password', '127.0.0.1')`,
		`UPDATE ql3.signins SET at_ms = 3 WHERE username = 'alice'`},
	"task_labels": {
		`INSERT INTO ql3.task_labels (label, task_id, project_id) VALUES ('l2', {T}, {P})`,
		`UPDATE ql3.task_labels SET label = 'l3' WHERE label = 'l1'`},
	"task_views": {
		`INSERT INTO ql3.task_views (view_id, project_id, name, created_at_ms) VALUES ({N}, {P}, 'v2', 1)`,
		`UPDATE ql3.task_views SET name = 'v3' WHERE name = 'v1'`},
	"subscriptions": {
		`INSERT INTO ql3.subscriptions (subscription_id, project_id, name, slug, kind, url, auto_add, auto_remove, remove_mode, enabled, created_at_ms, updated_at_ms)
			VALUES ({N}, {P}, 's2', 's2', 'file', 'file:///f.js', false, false, 'delete', false, 1, 1)`,
		`UPDATE ql3.subscriptions SET last_pull_at_ms = 2 WHERE name = 's1'`},
	"subscription_tasks": {
		`INSERT INTO ql3.subscription_tasks (subscription_id, task_id, project_id, path, applied_name, given_name, applied_cron, applied_revision, applied_digest)
			VALUES ('00000000-0000-7000-8000-0000000000c1', '00000000-0000-7000-8000-0000000000c2', {P}, 'b.js', 'b', 'b', '@daily', 1, {D})`,
		`UPDATE ql3.subscription_tasks SET applied_revision = 2 WHERE path = 'a.js'`},
	"run_queue": {
		`INSERT INTO ql3.run_queue (priority, created_at_ms, run_id, execution_revision_id, execution_digest, not_before_ms)
			VALUES (0, 1, {N}, {E}, {D}, 0)`,
		`UPDATE ql3.run_queue SET created_at_ms = 2 WHERE run_id = {R2}`},
	"dependencies": {
		`INSERT INTO ql3.dependencies (dependency_id, project_id, kind, name, created_at_ms, updated_at_ms) VALUES ({N}, {P}, 'python', 'requests', 1, 1)`,
		`UPDATE ql3.dependencies SET version = '1' WHERE name = 'axios'`},
	"dependency_settings": {
		`INSERT INTO ql3.dependency_settings (project_id, kind, updated_at_ms) VALUES ({P}, 'python', 1)`,
		`UPDATE ql3.dependency_settings SET proxy = 'http://p' WHERE kind = 'node'`},
	"dependency_installs": {
		`INSERT INTO ql3.dependency_installs (dependency_id, project_id, worker_id, task_id, action, run_key, status, started_at_ms)
			VALUES ('00000000-0000-7000-8000-0000000000d1', {P}, {W2}, {T}, 'install', 'dep:seed2', 'installing', 1)`,
		`UPDATE ql3.dependency_installs SET version = '1' WHERE run_key = 'dep:seed'`},
	"import_ledger": {
		`INSERT INTO ql3.import_ledger (project_id, plan_digest, zone, source, applied_at_ms) VALUES ({P}, {N}, 'UTC', '/ql', 1)`,
		`UPDATE ql3.import_ledger SET zone = 'UTC' WHERE plan_digest = 'sha256:seed'`},
	"import_rows": {
		`INSERT INTO ql3.import_rows (project_id, plan_digest, kind, source_id, target_id) VALUES ({P}, 'sha256:seed', 'env', 2, 'x')`,
		`UPDATE ql3.import_rows SET target_id = 'y' WHERE source_id = 1`},
}

func TestGrantMatrixIsConsistent(t *testing.T) {
	for _, d := range mustDeny {
		for i := range len(d.ops) {
			if strings.IndexByte(wantPrivileges[d.table][d.role], d.ops[i]) >= 0 {
				t.Errorf("%s must not %s %s", d.role, opNames[d.ops[i]], d.table)
			}
		}
	}
	for table := range wantPrivileges {
		if _, ok := tableOps[table]; !ok {
			t.Errorf("no operations written for %s", table)
		}
	}
}

// TestGrantMatrix performs every operation as every role on every table
// over real LOGIN connections: allowed ones succeed (an UPDATE touches its
// one row), forbidden ones fail with SQLSTATE 42501. Each runs in its own
// transaction, rolled back.
func TestGrantMatrix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewDB(t)
	fx := newFixture()
	if _, err := db.Conn(t).Exec(ctx, "BEGIN;"+fx.sql(seedSQL)+"COMMIT;"); err != nil {
		t.Fatalf("seed: %v", err)
	}
	pools := map[string]*pgxpool.Pool{}
	for _, role := range postgres.Roles() {
		pools[role] = db.Pool(t, role)
	}
	tables := tableNames(ctx, t, db.Conn(t))
	if want := sortedKeys(wantPrivileges); !slices.Equal(tables, want) {
		t.Fatalf("tables in schema ql3 = %v\nexpected matrix covers %v", tables, want)
	}
	for _, role := range postgres.Roles() {
		for _, table := range tables {
			for _, op := range []byte("SIUD") {
				allowed := role == postgres.RoleMigrator || strings.IndexByte(wantPrivileges[table][role], op) >= 0
				name := fmt.Sprintf("%s/%s/%s", role, table, opNames[op])
				err, rows := runOp(ctx, pools[role], fx, table, op)
				switch {
				case allowed && err != nil:
					t.Errorf("%s: want allowed, got %v", name, err)
				case allowed && op == 'U' && rows != 1:
					t.Errorf("%s: updated %d rows, want 1", name, rows)
				case !allowed && postgres.SQLState(err) != postgres.SQLStateInsufficientPriv:
					t.Errorf("%s: want SQLSTATE 42501, got %v", name, err)
				}
			}
		}
	}
}

func runOp(ctx context.Context, pool *pgxpool.Pool, fx fixture, table string, op byte) (error, int64) {
	var stmt string
	switch op {
	case 'S':
		stmt = "SELECT count(*) FROM ql3." + table
	case 'I':
		stmt = fx.sql(tableOps[table].insert)
	case 'U':
		stmt = fx.sql(tableOps[table].update)
	case 'D':
		stmt = "DELETE FROM ql3." + table + " WHERE false"
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err, 0
	}
	defer func() { _ = tx.Rollback(ctx) }()
	tag, err := tx.Exec(ctx, stmt)
	return err, tag.RowsAffected()
}

// TestGrantsAreExact reads the ACLs back: exactly the matrix is granted
// (no TRUNCATE, REFERENCES or TRIGGER, nothing to PUBLIC, no column grants),
// the schema is usable only by the ql3 roles, and the database-level ACL
// keeps out a role that is not a ql3 role.
func TestGrantsAreExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewDB(t)
	conn := db.Conn(t)
	// Clones do not inherit database ACLs; install them on this one.
	if err := postgres.InstallGrants(ctx, conn); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `
		SELECT c.relname, coalesce(r.rolname, 'PUBLIC'), a.privilege_type
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'ql3'
		CROSS JOIN LATERAL aclexplode(c.relacl) a
		LEFT JOIN pg_roles r ON r.oid = a.grantee
		WHERE c.relkind = 'r' AND a.grantee <> c.relowner`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var table, role, priv string
		err := r.Scan(&table, &role, &priv)
		return table + " " + role + " " + priv, err
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for table, byRole := range wantPrivileges {
		for role, ops := range byRole {
			for i := range len(ops) {
				want = append(want, table+" "+role+" "+opNames[ops[i]])
			}
		}
	}
	for _, extra := range difference(got, want) {
		t.Errorf("granted but not in the matrix: %s", extra)
	}
	for _, missing := range difference(want, got) {
		t.Errorf("in the matrix but not granted: %s", missing)
	}
	var colGrants int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'ql3' AND a.attacl IS NOT NULL`).Scan(&colGrants); err != nil || colGrants != 0 {
		t.Errorf("column-level grants = %d, %v; want none", colGrants, err)
	}
	var publicUsage bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace n, aclexplode(n.nspacl) a
		WHERE n.nspname = 'ql3' AND a.grantee = 0)`).Scan(&publicUsage); err != nil || publicUsage {
		t.Errorf("PUBLIC has privileges on schema ql3 = %v, %v", publicUsage, err)
	}

	outsider := "outsider_" + strings.TrimPrefix(db.Name, "t_")
	outsider = outsider[:min(len(outsider), 63)]
	if _, err := conn.Exec(ctx, "CREATE ROLE "+pgx.Identifier{outsider}.Sanitize()+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	_, err = pgx.Connect(ctx, db.Cluster.DSN(db.Name, outsider))
	if postgres.SQLState(err) != postgres.SQLStateInsufficientPriv {
		t.Errorf("a non-ql3 role connecting: %v, want SQLSTATE 42501", err)
	}
	for _, role := range postgres.Roles() {
		c, err := pgx.Connect(ctx, db.Cluster.DSN(db.Name, role))
		if err != nil {
			t.Errorf("%s cannot connect: %v", role, err)
			continue
		}
		_ = c.Close(ctx)
	}
	// Installing again changes nothing.
	if err := postgres.InstallGrants(ctx, conn); err != nil {
		t.Fatalf("second install: %v", err)
	}
}

func tableNames(ctx context.Context, t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = 'ql3' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// difference returns the elements of a that are not in b.
func difference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}
