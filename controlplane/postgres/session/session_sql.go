package session

import "github.com/ql3/ql3/controlplane/postgres"

// SQL of the worker session store (ingress role). Kept together so
// TestSessionSQLTypesReusedParams can read it: a bind parameter used more
// than once is cast explicitly, to the same type, every time ($2::uuid),
// so no server version has to infer one type from two contexts (seed
// ADR-0235: PostgreSQL 18 refused an untyped reuse with 42P08). Every
// statement reads the database clock once (the "now" CTE) after the
// advisory locks its transaction took.

// sessionNow is the one clock reading of a statement.
const sessionNow = `now AS MATERIALIZED (SELECT ` + postgres.DBNowMs + ` AS ms)`

// sqlSessionLive finds the worker's session that is not offline.
const sqlSessionLive = `SELECT session_id FROM ql3.worker_sessions WHERE worker_id = $1::uuid AND status <> 'offline'`

// sqlSessionReplace closes the worker's live session (replaced by a new
// generation in the same transaction).
const sqlSessionReplace = `
WITH ` + sessionNow + `
UPDATE ql3.worker_sessions s
SET status = 'offline', capacity = 0, closed_at_ms = now.ms, version = s.version + 1,
    updated_at_ms = greatest(s.updated_at_ms, now.ms)
FROM now
WHERE s.session_id = $1::uuid AND s.status <> 'offline'
RETURNING s.generation`

// sqlSessionOpen inserts generation max+1 of the worker, online, with the
// authenticated credential observed now, and its audit line.
const sqlSessionOpen = `
WITH ` + sessionNow + `,
ins AS (
    INSERT INTO ql3.worker_sessions (session_id, worker_id, generation, status, credential_id, credential_observed_at_ms,
        capacity, capabilities, capabilities_digest, heartbeat_at_ms, lease_expires_at_ms, opened_at_ms, updated_at_ms)
    SELECT $1::uuid, $2::uuid,
           (SELECT coalesce(max(generation), 0) + 1 FROM ql3.worker_sessions WHERE worker_id = $2::uuid),
           'online', $3::uuid, now.ms, $4::integer, $5::jsonb, $6::bytea, now.ms, now.ms + $7::bigint, now.ms, now.ms
    FROM now
    RETURNING generation, lease_expires_at_ms),
aud AS (
    INSERT INTO ql3.audit_log (audit_id, at_ms, actor_kind, actor_id, action, subject_kind, subject_id, outcome, remote_addr, details)
    SELECT $8::uuid, now.ms, 'worker', $2::uuid::text, 'session.open', 'session', $1::uuid::text, 'ok', nullif($9::text, ''),
           jsonb_strip_nulls(jsonb_build_object('generation', ins.generation, 'capacity', $4::integer,
               'credentialId', $3::uuid::text, 'agentVersion', $10::text, 'replacedGeneration', $11::bigint))
    FROM ins, now)
SELECT generation, lease_expires_at_ms FROM ins`

// sqlSessionHeartbeat renews a live session of the worker at the expected
// generation and capabilities, records the credential the request
// authenticated with, and writes an audit line when that credential
// differs from the one recorded before (a rotation observed).
const sqlSessionHeartbeat = `
WITH ` + sessionNow + `,
prev AS (SELECT credential_id FROM ql3.worker_sessions WHERE session_id = $1::uuid),
upd AS (
    UPDATE ql3.worker_sessions s
    SET heartbeat_at_ms = now.ms, lease_expires_at_ms = now.ms + $5::bigint,
        credential_id = $4::uuid, credential_observed_at_ms = now.ms,
        version = s.version + 1, updated_at_ms = greatest(s.updated_at_ms, now.ms)
    FROM now
    WHERE s.session_id = $1::uuid AND s.worker_id = $2::uuid AND s.generation = $3::bigint
      AND s.status <> 'offline' AND s.lease_expires_at_ms > now.ms AND s.capabilities_digest = $6::bytea
    RETURNING s.status, s.lease_expires_at_ms, s.credential_id),
aud AS (
    INSERT INTO ql3.audit_log (audit_id, at_ms, actor_kind, actor_id, action, subject_kind, subject_id, outcome, remote_addr, details)
    SELECT $7::uuid, now.ms, 'worker', $2::uuid::text, 'session.credential_observed', 'session', $1::uuid::text, 'ok',
           nullif($8::text, ''),
           jsonb_strip_nulls(jsonb_build_object('credentialId', $4::uuid::text, 'previousCredentialId', prev.credential_id::text))
    FROM upd, now, prev
    WHERE prev.credential_id IS DISTINCT FROM upd.credential_id)
SELECT status, lease_expires_at_ms FROM upd`

// sqlSessionRead reads a session for a decision (transition, or why a
// heartbeat matched nothing), with the clock and whether a newer
// generation of the same worker exists. FOR UPDATE only in transitions.
const sqlSessionRead = `
WITH ` + sessionNow + `
SELECT s.worker_id::text, s.generation, s.status, s.lease_expires_at_ms, s.capabilities_digest, now.ms,
       EXISTS (SELECT 1 FROM ql3.worker_sessions n WHERE n.worker_id = s.worker_id AND n.generation > s.generation)
FROM ql3.worker_sessions s, now
WHERE s.session_id = $1::uuid`

const sqlSessionReadForUpdate = sqlSessionRead + ` FOR UPDATE OF s`

// sqlSessionTransition moves the session (already read and locked in this
// transaction) to draining or offline, with its audit line.
const sqlSessionTransition = `
WITH ` + sessionNow + `,
upd AS (
    UPDATE ql3.worker_sessions s
    SET status = $3::text,
        capacity = 0,
        closed_at_ms = CASE WHEN $3::text = 'offline' THEN now.ms END,
        version = s.version + 1, updated_at_ms = greatest(s.updated_at_ms, now.ms)
    FROM now
    WHERE s.session_id = $1::uuid AND s.generation = $2::bigint AND s.status <> 'offline'
    RETURNING s.status, s.lease_expires_at_ms, s.worker_id),
aud AS (
    INSERT INTO ql3.audit_log (audit_id, at_ms, actor_kind, actor_id, action, subject_kind, subject_id, outcome, remote_addr, details)
    SELECT $4::uuid, now.ms, 'worker', upd.worker_id::text, 'session.transition', 'session', $1::uuid::text, 'ok',
           nullif($5::text, ''), jsonb_build_object('to', $3::text, 'generation', $2::bigint)
    FROM upd, now)
SELECT status, lease_expires_at_ms FROM upd`

// sessionStatements lists every statement for the typing test.
var sessionStatements = map[string]string{
	"live": sqlSessionLive, "replace": sqlSessionReplace, "open": sqlSessionOpen, "heartbeat": sqlSessionHeartbeat,
	"read": sqlSessionRead, "readForUpdate": sqlSessionReadForUpdate, "transition": sqlSessionTransition,
	"authenticate": sqlAuthenticate, "auditDenied": sqlAuditDenied,
}
