-- ql3-edge schema, version 5 (SQLite): notifications (ADR 0046).
--
-- Channels keep their whole settings sealed with the env store's data key
-- (AES-256-GCM, the channel id as additional data): credentials, webhook
-- URLs and custom headers never sit in this file in plaintext. public is
-- the display view without any credential.
CREATE TABLE notify_channels (
    id            TEXT    NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 128),
    kind          TEXT    NOT NULL CHECK (length(kind) BETWEEN 1 AND 32),
    sealed        BLOB    NOT NULL,
    public        TEXT    NOT NULL, -- JSON, no credential
    enabled       INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
) STRICT;

CREATE TABLE notify_rules (
    id            TEXT    NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 128),
    body          TEXT    NOT NULL, -- JSON: kinds, taskIds, labels, channels, quiet, coalesce
    enabled       INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
) STRICT;

-- The outbox: one row per notification per channel, written in the same
-- transaction that advances the feed consumer's cursor past its event.
--   pending   due at next_at_ms
--   held      quiet hours: released into one digest at next_at_ms
--   delivered the channel accepted it
--   failed    given up (last_error says why)
--   dropped   quiet hours in drop mode, or coalesced into a summary
--   digested  a held row that went out inside a digest (digest_id)
CREATE TABLE notify_outbox (
    id              INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    idempotency_key TEXT    NOT NULL UNIQUE CHECK (length(idempotency_key) BETWEEN 1 AND 256),
    rule_id         TEXT    NOT NULL DEFAULT '',
    channel_id      TEXT    NOT NULL,
    run_id          TEXT    NOT NULL DEFAULT '',
    task_id         TEXT    NOT NULL DEFAULT '',
    kind            TEXT    NOT NULL,
    title           TEXT    NOT NULL CHECK (length(CAST(title AS BLOB)) <= 256),
    content         TEXT    NOT NULL CHECK (length(CAST(content AS BLOB)) <= 16384),
    status          TEXT    NOT NULL CHECK (status IN ('pending', 'held', 'delivered', 'failed', 'dropped', 'digested')),
    created_at_ms   INTEGER NOT NULL,
    next_at_ms      INTEGER NOT NULL,
    give_up_at_ms   INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_status     INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT    NOT NULL DEFAULT '' CHECK (length(last_error) <= 512),
    finished_at_ms  INTEGER NOT NULL DEFAULT 0,
    digest_id       INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX notify_outbox_due ON notify_outbox (next_at_ms, id) WHERE status IN ('pending', 'held');
CREATE INDEX notify_outbox_run ON notify_outbox (run_id) WHERE run_id <> '';

-- Every delivery attempt: the delivery log.
CREATE TABLE notify_attempts (
    outbox_id   INTEGER NOT NULL REFERENCES notify_outbox (id) ON DELETE CASCADE,
    n           INTEGER NOT NULL CHECK (n >= 1),
    at_ms       INTEGER NOT NULL,
    status_code INTEGER NOT NULL DEFAULT 0,
    error       TEXT    NOT NULL DEFAULT '' CHECK (length(error) <= 512),
    latency_ms  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (outbox_id, n)
) STRICT;

-- Coalescing windows per (rule, task), advanced with the cursor.
CREATE TABLE notify_coalesce (
    rule_id         TEXT    NOT NULL,
    task_id         TEXT    NOT NULL,
    window_start_ms INTEGER NOT NULL,
    sent            INTEGER NOT NULL,
    held            INTEGER NOT NULL,
    PRIMARY KEY (rule_id, task_id)
) STRICT;
