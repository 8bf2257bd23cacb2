-- ql3-edge schema, version 8 (SQLite): subscriptions and dependencies
-- (ADR 0054, ADR 0055).
--
-- A subscription pulls a git repository (or one raw file) into
-- scripts/<slug>/ and turns the cron comments of its scripts into tasks.
-- Every pull is a Run of the subscription's system task (task_id, '' until
-- the server has published it): logs, history, cancel and notifications
-- come from the Run, there is no background job of its own.
--
-- credential names an env store entry (its value: an HTTPS token or an SSH
-- private key); the value is never copied here.
CREATE TABLE subscriptions (
    id              TEXT    NOT NULL PRIMARY KEY,
    name            TEXT    NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 128),
    slug            TEXT    NOT NULL UNIQUE CHECK (length(slug) BETWEEN 1 AND 64),
    kind            TEXT    NOT NULL CHECK (kind IN ('git', 'file')),
    url             TEXT    NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
    branch          TEXT    NOT NULL DEFAULT '' CHECK (length(branch) <= 255),
    credential      TEXT    NOT NULL DEFAULT '' CHECK (length(credential) <= 128),
    credential_kind TEXT    NOT NULL DEFAULT '' CHECK (credential_kind IN ('', 'token', 'ssh_key')),
    filter          TEXT    NOT NULL DEFAULT '{}', -- JSON: include, exclude, extensions
    schedule        TEXT    NOT NULL DEFAULT '' CHECK (length(schedule) <= 128),
    auto_add        INTEGER NOT NULL CHECK (auto_add IN (0, 1)),
    auto_remove     INTEGER NOT NULL CHECK (auto_remove IN (0, 1)),
    remove_mode     TEXT    NOT NULL CHECK (remove_mode IN ('disable', 'delete')),
    default_cron    TEXT    NOT NULL DEFAULT '' CHECK (length(default_cron) <= 128),
    proxy           TEXT    NOT NULL DEFAULT '' CHECK (length(proxy) <= 2048),
    time_zone       TEXT    NOT NULL DEFAULT '' CHECK (length(time_zone) <= 64),
    enabled         INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    task_id         TEXT    NOT NULL DEFAULT '',
    last_commit     TEXT    NOT NULL DEFAULT '',
    last_pull_at_ms INTEGER NOT NULL DEFAULT 0,
    created_at_ms   INTEGER NOT NULL,
    updated_at_ms   INTEGER NOT NULL
) STRICT;

-- The tasks a subscription made: what it last wrote (applied_*), so a
-- person's later edit is seen (the task's name differs from given_name,
-- its revision from applied_revision, its trigger from applied_cron) and
-- never overwritten. applied_name is the script's declared name,
-- given_name the task name it got (a suffix when the name was taken).
CREATE TABLE subscription_tasks (
    subscription_id  TEXT    NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    task_id          TEXT    NOT NULL REFERENCES tasks (id),
    path             TEXT    NOT NULL CHECK (length(path) BETWEEN 1 AND 4096),
    applied_name     TEXT    NOT NULL,
    given_name       TEXT    NOT NULL,
    applied_cron     TEXT    NOT NULL,
    applied_revision INTEGER NOT NULL,
    PRIMARY KEY (subscription_id, task_id)
) STRICT, WITHOUT ROWID;

CREATE UNIQUE INDEX subscription_tasks_task ON subscription_tasks (task_id);

-- A package the scripts need. Each install, reinstall or removal is a Run
-- of the dependency's system task (task_id); its state is read from that
-- Run (last_run_id), never kept twice.
CREATE TABLE dependencies (
    id            TEXT    NOT NULL PRIMARY KEY,
    kind          TEXT    NOT NULL CHECK (kind IN ('node', 'python', 'linux')),
    name          TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 214),
    version       TEXT    NOT NULL DEFAULT '' CHECK (length(version) <= 64),
    task_id       TEXT    NOT NULL DEFAULT '',
    last_action   TEXT    NOT NULL DEFAULT '' CHECK (last_action IN ('', 'install', 'reinstall', 'remove')),
    last_run_id   TEXT    NOT NULL DEFAULT '',
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    UNIQUE (kind, name)
) STRICT;

-- Per kind: the registry (npm registry, pip index) and the proxy installs use.
CREATE TABLE dependency_settings (
    kind          TEXT    NOT NULL PRIMARY KEY CHECK (kind IN ('node', 'python', 'linux')),
    registry      TEXT    NOT NULL DEFAULT '' CHECK (length(registry) <= 2048),
    proxy         TEXT    NOT NULL DEFAULT '' CHECK (length(proxy) <= 2048),
    updated_at_ms INTEGER NOT NULL
) STRICT;
