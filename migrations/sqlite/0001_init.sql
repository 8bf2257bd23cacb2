-- ql3-edge schema, version 1 (SQLite).
-- Times are epoch milliseconds; ids are UUIDv7 text. Every table is STRICT so
-- a wrong type is an error, not a silent coercion. Status names are checked
-- here as well as in core/run, so a bug cannot store a status the state
-- machine does not know.

CREATE TABLE projects (
    id            TEXT    NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL UNIQUE,
    status        TEXT    NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    created_at_ms INTEGER NOT NULL
) STRICT;

INSERT INTO projects (id, name, status, created_at_ms) VALUES ('default', 'default', 'active', 0);

CREATE TABLE tasks (
    id               TEXT    NOT NULL PRIMARY KEY,
    project_id       TEXT    NOT NULL REFERENCES projects (id),
    name             TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
    enabled          INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    current_revision INTEGER NOT NULL CHECK (current_revision >= 1),
    created_at_ms    INTEGER NOT NULL,
    updated_at_ms    INTEGER NOT NULL,
    deleted_at_ms    INTEGER -- NULL while live; deleted tasks keep their history
) STRICT;

CREATE UNIQUE INDEX tasks_live_name ON tasks (project_id, name) WHERE deleted_at_ms IS NULL;
CREATE INDEX tasks_keyset ON tasks (created_at_ms, id);

-- Immutable snapshots of a task's spec. The retry/concurrency columns repeat
-- fields of spec_json so admission can pin them with one INSERT ... SELECT.
CREATE TABLE task_revisions (
    task_id         TEXT    NOT NULL REFERENCES tasks (id),
    revision        INTEGER NOT NULL CHECK (revision >= 1),
    spec_kind       TEXT    NOT NULL,
    spec_json       TEXT    NOT NULL, -- canonical JSON (core/spec)
    spec_digest     TEXT    NOT NULL CHECK (spec_digest LIKE 'sha256:%'),
    executor        TEXT    NOT NULL DEFAULT 'local' CHECK (executor = 'local'),
    timeout_ms      INTEGER NOT NULL CHECK (timeout_ms > 0),
    max_attempts    INTEGER NOT NULL CHECK (max_attempts BETWEEN 1 AND 16),
    backoff_base_ms INTEGER NOT NULL CHECK (backoff_base_ms >= 0),
    backoff_max_ms  INTEGER NOT NULL CHECK (backoff_max_ms >= backoff_base_ms),
    retry_on_lost   INTEGER NOT NULL CHECK (retry_on_lost IN (0, 1)),
    concurrency     TEXT    NOT NULL CHECK (concurrency IN ('allow', 'forbid', 'replace')),
    created_at_ms   INTEGER NOT NULL,
    PRIMARY KEY (task_id, revision)
) STRICT;

CREATE TRIGGER task_revisions_no_update BEFORE UPDATE ON task_revisions
BEGIN SELECT RAISE(ABORT, 'task_revisions are immutable'); END;
CREATE TRIGGER task_revisions_no_delete BEFORE DELETE ON task_revisions
BEGIN SELECT RAISE(ABORT, 'task_revisions are immutable'); END;

CREATE TABLE triggers (
    id               TEXT    NOT NULL PRIMARY KEY,
    task_id          TEXT    NOT NULL REFERENCES tasks (id),
    current_revision INTEGER NOT NULL CHECK (current_revision >= 1),
    created_at_ms    INTEGER NOT NULL,
    updated_at_ms    INTEGER NOT NULL,
    deleted_at_ms    INTEGER
) STRICT;

CREATE INDEX triggers_task ON triggers (task_id, created_at_ms, id);

CREATE TABLE trigger_revisions (
    trigger_id     TEXT    NOT NULL REFERENCES triggers (id),
    revision       INTEGER NOT NULL CHECK (revision >= 1),
    expression     TEXT    NOT NULL CHECK (length(expression) BETWEEN 1 AND 256),
    time_zone      TEXT    NOT NULL CHECK (length(time_zone) BETWEEN 1 AND 64),
    misfire_policy TEXT    NOT NULL CHECK (misfire_policy IN ('skip', 'fire_once')),
    grace_ms       INTEGER NOT NULL CHECK (grace_ms BETWEEN 1 AND 300000),
    enabled        INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    created_at_ms  INTEGER NOT NULL, -- activation time of this revision
    PRIMARY KEY (trigger_id, revision)
) STRICT;

CREATE TRIGGER trigger_revisions_no_update BEFORE UPDATE ON trigger_revisions
BEGIN SELECT RAISE(ABORT, 'trigger_revisions are immutable'); END;

-- Exactly one schedule row per live trigger: the durable cursor. A publish
-- (new trigger revision, task enable) resets it: initialized = 0,
-- next_fire_at_ms = 0, state_version + 1. active caches "trigger enabled and
-- task enabled and both live" so the due scan is one index range.
CREATE TABLE trigger_schedules (
    trigger_id           TEXT    NOT NULL PRIMARY KEY REFERENCES triggers (id),
    trigger_revision     INTEGER NOT NULL CHECK (trigger_revision >= 1),
    active               INTEGER NOT NULL CHECK (active IN (0, 1)),
    initialized          INTEGER NOT NULL CHECK (initialized IN (0, 1)),
    next_fire_at_ms      INTEGER NOT NULL CHECK (next_fire_at_ms >= 0),
    last_scheduled_at_ms INTEGER NOT NULL DEFAULT 0,
    state_version        INTEGER NOT NULL CHECK (state_version >= 1),
    missed_total         INTEGER NOT NULL DEFAULT 0 CHECK (missed_total >= 0),
    last_missed_at_ms    INTEGER NOT NULL DEFAULT 0,
    last_error           TEXT    NOT NULL DEFAULT '' CHECK (length(last_error) <= 512), -- why a schedule was parked
    updated_at_ms        INTEGER NOT NULL,
    CHECK (initialized = 1 OR next_fire_at_ms = 0),
    FOREIGN KEY (trigger_id, trigger_revision) REFERENCES trigger_revisions (trigger_id, revision)
) STRICT;

CREATE INDEX trigger_schedules_due ON trigger_schedules (active, next_fire_at_ms);

CREATE TABLE runs (
    id                     TEXT    NOT NULL PRIMARY KEY,
    project_id             TEXT    NOT NULL REFERENCES projects (id),
    task_id                TEXT    NOT NULL REFERENCES tasks (id),
    task_revision          INTEGER NOT NULL,
    origin                 TEXT    NOT NULL CHECK (origin IN ('schedule', 'manual')),
    trigger_id             TEXT REFERENCES triggers (id),
    trigger_revision       INTEGER,
    rerun_of               TEXT REFERENCES runs (id),
    idempotency_key        TEXT    NOT NULL UNIQUE,
    scheduled_for_ms       INTEGER NOT NULL,
    status                 TEXT    NOT NULL CHECK (status IN ('created', 'queued', 'dispatching', 'running',
                                   'retry_wait', 'lost', 'succeeded', 'failed', 'cancelled', 'timed_out')),
    version                INTEGER NOT NULL CHECK (version >= 1),
    event_seq              INTEGER NOT NULL CHECK (event_seq >= 0), -- seq of the newest run_events row
    attempt_count          INTEGER NOT NULL CHECK (attempt_count BETWEEN 0 AND 16),
    max_attempts           INTEGER NOT NULL CHECK (max_attempts BETWEEN 1 AND 16),
    backoff_base_ms        INTEGER NOT NULL,
    backoff_max_ms         INTEGER NOT NULL,
    retry_on_lost          INTEGER NOT NULL CHECK (retry_on_lost IN (0, 1)),
    concurrency            TEXT    NOT NULL CHECK (concurrency IN ('allow', 'forbid', 'replace')),
    not_before_ms          INTEGER NOT NULL,
    cancel_requested_at_ms INTEGER NOT NULL DEFAULT 0,
    reason                 TEXT    NOT NULL DEFAULT '',
    error_class            TEXT    NOT NULL DEFAULT '' CHECK (error_class IN ('', 'validation', 'dispatch',
                                   'executor_start', 'process_exit', 'cancelled_by_user', 'timeout',
                                   'worker_lost', 'internal')),
    exit_code              INTEGER,
    created_at_ms          INTEGER NOT NULL,
    updated_at_ms          INTEGER NOT NULL,
    finished_at_ms         INTEGER NOT NULL DEFAULT 0,
    CHECK ((origin = 'schedule') = (trigger_id IS NOT NULL)),
    FOREIGN KEY (task_id, task_revision) REFERENCES task_revisions (task_id, revision)
) STRICT;

CREATE INDEX runs_keyset ON runs (created_at_ms, id);
CREATE INDEX runs_task_keyset ON runs (task_id, created_at_ms, id);
CREATE INDEX runs_trigger_keyset ON runs (trigger_id, created_at_ms, id) WHERE trigger_id IS NOT NULL;
CREATE INDEX runs_due ON runs (not_before_ms) WHERE status IN ('queued', 'retry_wait');
CREATE INDEX runs_status_keyset ON runs (status, created_at_ms, id);
-- Partial indexes for the concurrency checks; the queries repeat these
-- exact status lists so SQLite can prove the index applies.
CREATE INDEX runs_unfinished ON runs (task_id)
    WHERE status IN ('queued', 'dispatching', 'running', 'retry_wait');
CREATE INDEX runs_active ON runs (task_id)
    WHERE status IN ('dispatching', 'running');
CREATE INDEX runs_finished ON runs (finished_at_ms) WHERE finished_at_ms > 0;
CREATE INDEX runs_cancel_requested ON runs (cancel_requested_at_ms)
    WHERE cancel_requested_at_ms > 0 AND status IN ('dispatching', 'running');

CREATE TABLE attempts (
    run_id         TEXT    NOT NULL REFERENCES runs (id),
    attempt        INTEGER NOT NULL CHECK (attempt BETWEEN 1 AND 16),
    status         TEXT    NOT NULL CHECK (status IN ('claimed', 'starting', 'running', 'succeeded',
                           'failed', 'cancelled', 'timed_out', 'lost')),
    pid            INTEGER NOT NULL DEFAULT 0,
    pgid           INTEGER NOT NULL DEFAULT 0,
    created_at_ms  INTEGER NOT NULL,
    started_at_ms  INTEGER NOT NULL DEFAULT 0,
    finished_at_ms INTEGER NOT NULL DEFAULT 0,
    exit_code      INTEGER,
    error_class    TEXT    NOT NULL DEFAULT '' CHECK (error_class IN ('', 'validation', 'dispatch',
                           'executor_start', 'process_exit', 'cancelled_by_user', 'timeout',
                           'worker_lost', 'internal')),
    message        TEXT    NOT NULL DEFAULT '' CHECK (length(message) <= 512),
    log_path       TEXT    NOT NULL DEFAULT '',
    log_size       INTEGER NOT NULL DEFAULT 0 CHECK (log_size >= 0),
    log_truncated  INTEGER NOT NULL DEFAULT 0 CHECK (log_truncated IN (0, 1)),
    PRIMARY KEY (run_id, attempt)
) STRICT, WITHOUT ROWID;

CREATE INDEX attempts_in_flight ON attempts (status) WHERE status IN ('starting', 'running');

CREATE TABLE run_events (
    run_id  TEXT    NOT NULL REFERENCES runs (id),
    seq     INTEGER NOT NULL CHECK (seq >= 1),
    type    TEXT    NOT NULL,
    at_ms   INTEGER NOT NULL,
    payload TEXT    NOT NULL DEFAULT '{}',
    PRIMARY KEY (run_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER run_events_no_update BEFORE UPDATE ON run_events
BEGIN SELECT RAISE(ABORT, 'run_events are append-only'); END;
