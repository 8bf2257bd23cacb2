-- ql3 control-plane schema, version 15: notifications (issue 23, ADR 0053).
--
-- Per project: channels (whole settings sealed with the notify data key,
-- AES-256-GCM bound to the channel id; public is the view without any
-- credential), rules, and the outbox derived from the run-event feed under
-- the consumer 'notify' (its rows and the cursor move commit together).
-- A row is delivered by one replica at a time: it claims the row with a
-- fenced lease in database time (claim_owner/token/version/expires), and an
-- attempt's outcome is recorded only under that claim.

-- The notify data key, wrapped by the key file's KEK (one row).
CREATE TABLE ql3.notify_keys (
    id       smallint PRIMARY KEY CHECK (id = 1),
    kek_id   text     NOT NULL CHECK (octet_length(kek_id) BETWEEN 1 AND 64),
    wrapped  bytea    NOT NULL CHECK (octet_length(wrapped) <= 256),
    created_at_ms bigint NOT NULL CHECK (created_at_ms >= 0)
);

CREATE TABLE ql3.notify_channels (
    channel_id    uuid    PRIMARY KEY,
    project_id    uuid    NOT NULL REFERENCES ql3.projects (project_id),
    name          text    NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
    kind          text    NOT NULL CHECK (octet_length(kind) BETWEEN 1 AND 32),
    sealed        bytea   NOT NULL CHECK (octet_length(sealed) <= 65536),
    public        jsonb   NOT NULL CHECK (jsonb_typeof(public) = 'object'),
    enabled       boolean NOT NULL,
    created_at_ms bigint  NOT NULL CHECK (created_at_ms >= 0),
    updated_at_ms bigint  NOT NULL CHECK (updated_at_ms >= created_at_ms),
    UNIQUE (project_id, name)
);

CREATE TABLE ql3.notify_rules (
    rule_id       uuid    PRIMARY KEY,
    project_id    uuid    NOT NULL REFERENCES ql3.projects (project_id),
    name          text    NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
    body          jsonb   NOT NULL CHECK (jsonb_typeof(body) = 'object' AND octet_length(body::text) <= 65536),
    enabled       boolean NOT NULL,
    created_at_ms bigint  NOT NULL CHECK (created_at_ms >= 0),
    updated_at_ms bigint  NOT NULL CHECK (updated_at_ms >= created_at_ms),
    UNIQUE (project_id, name)
);

-- The outbox (statuses as on the edge, ADR 0046).
CREATE TABLE ql3.notify_outbox (
    outbox_id           bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id          uuid    NOT NULL REFERENCES ql3.projects (project_id),
    idempotency_key     text    NOT NULL UNIQUE CHECK (octet_length(idempotency_key) BETWEEN 1 AND 256),
    rule_id             text    NOT NULL DEFAULT '' CHECK (octet_length(rule_id) <= 64),
    channel_id          uuid    NOT NULL,
    run_id              text    NOT NULL DEFAULT '' CHECK (octet_length(run_id) <= 64),
    task_id             text    NOT NULL DEFAULT '' CHECK (octet_length(task_id) <= 64),
    kind                text    NOT NULL CHECK (octet_length(kind) BETWEEN 1 AND 32),
    title               text    NOT NULL CHECK (octet_length(title) <= 256),
    content             text    NOT NULL CHECK (octet_length(content) <= 16384),
    status              text    NOT NULL CHECK (status IN ('pending', 'held', 'delivered', 'failed', 'dropped', 'digested')),
    created_at_ms       bigint  NOT NULL CHECK (created_at_ms >= 0),
    next_at_ms          bigint  NOT NULL,
    give_up_at_ms       bigint  NOT NULL,
    attempts            integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_status         integer NOT NULL DEFAULT 0,
    last_error          text    NOT NULL DEFAULT '' CHECK (octet_length(last_error) <= 512),
    finished_at_ms      bigint  NOT NULL DEFAULT 0,
    digest_id           bigint  NOT NULL DEFAULT 0,
    claim_owner         text    CHECK (octet_length(claim_owner) BETWEEN 1 AND 128),
    claim_token         uuid,
    claim_version       bigint  NOT NULL DEFAULT 0 CHECK (claim_version >= 0),
    claim_expires_at_ms bigint,
    CHECK ((claim_owner IS NULL) = (claim_token IS NULL) AND (claim_token IS NULL) = (claim_expires_at_ms IS NULL))
);

CREATE INDEX notify_outbox_due_idx ON ql3.notify_outbox (next_at_ms, outbox_id) WHERE status IN ('pending', 'held');
CREATE INDEX notify_outbox_project_idx ON ql3.notify_outbox (project_id, outbox_id DESC);

-- Every delivery attempt (the delivery log), with the replica that made it.
CREATE TABLE ql3.notify_attempts (
    outbox_id   bigint  NOT NULL REFERENCES ql3.notify_outbox (outbox_id) ON DELETE CASCADE,
    n           integer NOT NULL CHECK (n >= 1),
    at_ms       bigint  NOT NULL,
    status_code integer NOT NULL DEFAULT 0,
    error       text    NOT NULL DEFAULT '' CHECK (octet_length(error) <= 512),
    latency_ms  bigint  NOT NULL DEFAULT 0,
    owner       text    NOT NULL CHECK (octet_length(owner) BETWEEN 1 AND 128),
    PRIMARY KEY (outbox_id, n)
);

-- Coalescing windows per (rule, task), moved with the cursor.
CREATE TABLE ql3.notify_coalesce (
    rule_id         text   NOT NULL CHECK (octet_length(rule_id) <= 64),
    task_id         text   NOT NULL CHECK (octet_length(task_id) <= 64),
    window_start_ms bigint NOT NULL,
    sent            integer NOT NULL,
    held            integer NOT NULL,
    PRIMARY KEY (rule_id, task_id)
);
