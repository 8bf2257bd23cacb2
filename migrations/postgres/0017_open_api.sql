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
