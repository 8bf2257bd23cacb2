-- ql3 control-plane schema, version 17: QingLong's Open API on the control
-- plane, scoped to a project (issue 26, ADR 0057).
--
-- An app belongs to one project: its tokens see that project's crons, env
-- entries and scripts only. The client secret and every token are stored
-- as their SHA-256 only (no plaintext column to leak). Numeric ids are
-- QingLong's: a task or an env entry gets a stable number the first time
-- the Open API shows it, never reused (an identity column).
CREATE TABLE ql3.open_apps (
    app_id        uuid   PRIMARY KEY,
    project_id    uuid   NOT NULL REFERENCES ql3.projects (project_id),
    name          text   NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
    client_id     text   NOT NULL UNIQUE CHECK (client_id ~ '^[A-Za-z0-9_-]{12}$'),
    secret_digest bytea  NOT NULL CHECK (octet_length(secret_digest) = 32),
    scopes        text[] NOT NULL CHECK (cardinality(scopes) BETWEEN 1 AND 8
                               AND scopes <@ ARRAY['envs', 'crons', 'scripts', 'logs', 'system']),
    created_at_ms bigint NOT NULL CHECK (created_at_ms >= 0),
    UNIQUE (project_id, name)
);

CREATE TABLE ql3.open_tokens (
    token_digest  bytea  PRIMARY KEY CHECK (octet_length(token_digest) = 32),
    seq           bigint GENERATED ALWAYS AS IDENTITY,
    app_id        uuid   NOT NULL REFERENCES ql3.open_apps (app_id) ON DELETE CASCADE,
    created_at_ms bigint NOT NULL CHECK (created_at_ms >= 0),
    expires_at_ms bigint NOT NULL CHECK (expires_at_ms > created_at_ms)
);

CREATE INDEX open_tokens_app_idx ON ql3.open_tokens (app_id, seq);

CREATE TABLE ql3.open_ids (
    num        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id uuid   NOT NULL REFERENCES ql3.projects (project_id),
    kind       text   NOT NULL CHECK (kind IN ('task', 'env')),
    ref        text   NOT NULL CHECK (octet_length(ref) BETWEEN 1 AND 64),
    UNIQUE (project_id, kind, ref)
);

-- Findable at scale (issue 26, ADR 0057): what a task search looks in —
-- name, command and labels one per line, ASCII letters folded (core/find
-- writes the same on every publish). A search is a substring test
-- (strpos) over the project's live tasks: a two-character Chinese search
-- has no trigram for pg_trgm to use, and one project's 10,000 search texts
-- are one scan of the covering index below.
ALTER TABLE ql3.tasks ADD COLUMN search_text text NOT NULL DEFAULT ''
    CHECK (octet_length(search_text) <= 65536);

UPDATE ql3.tasks t SET search_text = translate(
        t.name || E'\n' || coalesce(c.spec #>> '{shell,command}',
            concat_ws(' ', c.spec #>> '{argv,file}',
                (SELECT string_agg(a, ' ') FROM jsonb_array_elements_text(coalesce(c.spec #> '{argv,args}', '[]')) AS a)), ''),
        'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')
    FROM (SELECT e.task_id, e.canonical_spec::jsonb AS spec FROM ql3.execution_revisions e
          JOIN ql3.tasks h ON h.task_id = e.task_id AND e.task_revision = h.head_revision) c
    WHERE c.task_id = t.task_id;

CREATE INDEX tasks_find_idx ON ql3.tasks (project_id, task_id) INCLUDE (search_text, enabled)
    WHERE deleted_at_ms IS NULL;

-- Run pages at scale (ADR 0057): the newest runs of every project and of
-- one status walk an index in the page's order and stop after a page
-- (runs of one project and of one task have theirs since 0001 and 0007).
CREATE INDEX runs_created_idx ON ql3.runs (created_at_ms DESC, run_id DESC);
CREATE INDEX runs_status_created_idx ON ql3.runs (status, created_at_ms DESC, run_id DESC);

-- The overview's window (runs finished in the last 24 h, by status; the
-- failures among them) read from the index alone where the visibility map
-- allows: without it each of a day's runs costs a heap visit.
CREATE INDEX runs_finished_status_idx ON ql3.runs (finished_at_ms, status, project_id)
    WHERE finished_at_ms IS NOT NULL;
