-- ql3-edge schema, version 6 (SQLite): QingLong-compatible Open API apps
-- and their bearer tokens (ADR 0048), scoped native API tokens, accounts
-- with an optional TOTP factor, and the sign-in log (ADR 0049). Secrets
-- are stored only as SHA-256 digests (app secrets, tokens) or argon2id
-- hashes (passwords).

CREATE TABLE open_apps (
    id            INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    name          TEXT    NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 128),
    scopes        TEXT    NOT NULL, -- JSON array of envs, crons, scripts, logs, system
    client_id     TEXT    NOT NULL UNIQUE CHECK (length(client_id) BETWEEN 8 AND 64),
    secret_digest BLOB    NOT NULL CHECK (length(secret_digest) = 32),
    created_at_ms INTEGER NOT NULL
) STRICT;

-- Bearer tokens issued by GET /open/auth/token; QingLong keeps at most
-- five live tokens per app, so does this table.
CREATE TABLE open_tokens (
    digest        BLOB    NOT NULL PRIMARY KEY CHECK (length(digest) = 32),
    app_id        INTEGER NOT NULL REFERENCES open_apps (id) ON DELETE CASCADE,
    created_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL
) STRICT;

CREATE INDEX open_tokens_app ON open_tokens (app_id, expires_at_ms);

-- Stable numeric ids for QingLong tools: a task or an env entry gets its
-- number the first time the Open API shows it, and keeps it.
CREATE TABLE open_ids (
    num  INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    kind TEXT    NOT NULL CHECK (kind IN ('task', 'env')),
    ref  TEXT    NOT NULL,
    UNIQUE (kind, ref)
) STRICT;

CREATE TABLE api_tokens (
    id            TEXT    NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    digest        BLOB    NOT NULL UNIQUE CHECK (length(digest) = 32),
    scopes        TEXT    NOT NULL, -- JSON array of read-only, runs, envs, scripts, admin
    created_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL DEFAULT 0, -- 0: never
    revoked_at_ms INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE users (
    username          TEXT    NOT NULL PRIMARY KEY CHECK (length(username) BETWEEN 1 AND 64),
    password_hash     TEXT    NOT NULL CHECK (length(password_hash) <= 256),
    totp_secret       TEXT    NOT NULL DEFAULT '',
    totp_last_counter INTEGER NOT NULL DEFAULT 0,
    failures          INTEGER NOT NULL DEFAULT 0,
    locked_until_ms   INTEGER NOT NULL DEFAULT 0,
    created_at_ms     INTEGER NOT NULL,
    updated_at_ms     INTEGER NOT NULL
) STRICT;

CREATE TABLE signin_log (
    seq      INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    at_ms    INTEGER NOT NULL,
    username TEXT    NOT NULL CHECK (length(username) <= 64),
    outcome  TEXT    NOT NULL CHECK (length(outcome) BETWEEN 1 AND 32),
    remote   TEXT    NOT NULL DEFAULT '' CHECK (length(remote) <= 64)
) STRICT;
