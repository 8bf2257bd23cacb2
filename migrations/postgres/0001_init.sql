-- ql3 control-plane schema, version 1.
--
-- Conventions (ADR 0005): every object lives in schema ql3 and is always
-- written schema-qualified; times are bigint epoch milliseconds observed from
-- the database clock; ids are application-generated UUIDv7; digests are raw
-- SHA-256 (bytea, 32 bytes); state names are CHECKed so a row can never hold a
-- state the domain does not know. The runner creates schema ql3 and
-- ql3.schema_migrations, runs this file as ql3_migrator inside one
-- transaction, and installs the GRANTs afterwards.

-- Projects: the tenancy boundary. Archived projects schedule nothing.
CREATE TABLE ql3.projects (
    project_id     uuid   PRIMARY KEY,
    name           text   NOT NULL UNIQUE CHECK (char_length(name) BETWEEN 1 AND 128),
    status         text   NOT NULL CHECK (status IN ('active', 'archived')),
    version        bigint NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at_ms  bigint NOT NULL CHECK (created_at_ms >= 0),
    updated_at_ms  bigint NOT NULL CHECK (updated_at_ms >= created_at_ms),
    archived_at_ms bigint,
    CHECK ((status = 'archived') = (archived_at_ms IS NOT NULL))
);

-- Tasks: what to run. head_revision names the latest task revision; the
-- deferred foreign key below lets publication insert the task and its first
-- revision in one transaction.
CREATE TABLE ql3.tasks (
    task_id       uuid    PRIMARY KEY,
    project_id    uuid    NOT NULL REFERENCES ql3.projects (project_id),
    name          text    NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
    enabled       boolean NOT NULL DEFAULT true,
    head_revision bigint  NOT NULL CHECK (head_revision >= 1),
    created_at_ms bigint  NOT NULL CHECK (created_at_ms >= 0),
    updated_at_ms bigint  NOT NULL CHECK (updated_at_ms >= created_at_ms),
    UNIQUE (project_id, name),
    UNIQUE (project_id, task_id)
);

-- Task revisions are immutable: the validated spec as published.
CREATE TABLE ql3.task_revisions (
    task_id       uuid   NOT NULL,
    revision      bigint NOT NULL CHECK (revision >= 1),
    project_id    uuid   NOT NULL,
    spec          jsonb  NOT NULL CHECK (jsonb_typeof(spec) = 'object' AND octet_length(spec::text) <= 131072),
    spec_digest   bytea  NOT NULL CHECK (octet_length(spec_digest) = 32),
    created_at_ms bigint NOT NULL CHECK (created_at_ms >= 0),
    PRIMARY KEY (task_id, revision),
    FOREIGN KEY (project_id, task_id) REFERENCES ql3.tasks (project_id, task_id)
);

ALTER TABLE ql3.tasks
    ADD CONSTRAINT tasks_head_revision_fkey FOREIGN KEY (task_id, head_revision)
    REFERENCES ql3.task_revisions (task_id, revision) DEFERRABLE INITIALLY DEFERRED;

-- Execution revisions: the compiled, immutable snapshot a Run pins. The
-- canonical spec is kept as the exact bytes the digest covers (text, not jsonb,
-- which would re-serialise); placement is the normalised copy pinned inside it.
CREATE TABLE ql3.execution_revisions (
    execution_revision_id uuid   PRIMARY KEY,
    project_id            uuid   NOT NULL,
    task_id               uuid   NOT NULL,
    task_revision         bigint NOT NULL,
    executor              text   NOT NULL CHECK (executor = 'remote_worker'),
    spec_kind             text   NOT NULL CHECK (char_length(spec_kind) BETWEEN 1 AND 64),
    canonical_spec        text   NOT NULL CHECK (octet_length(canonical_spec) BETWEEN 2 AND 65536),
    placement             jsonb  CHECK (placement IS NULL OR jsonb_typeof(placement) = 'object'),
    digest                bytea  NOT NULL CHECK (octet_length(digest) = 32),
    created_at_ms         bigint NOT NULL CHECK (created_at_ms >= 0),
    UNIQUE (task_id, task_revision),
    -- Lets pins reference id, task revision and digest together, so a pinned
    -- digest can never disagree with the revision it names.
    UNIQUE (execution_revision_id, task_id, task_revision, digest),
    FOREIGN KEY (task_id, task_revision) REFERENCES ql3.task_revisions (task_id, revision)
);

-- Triggers: a cron trigger bound to one task for its whole life.
CREATE TABLE ql3.triggers (
    trigger_id    uuid   PRIMARY KEY,
    project_id    uuid   NOT NULL,
    task_id       uuid   NOT NULL,
    name          text   NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
    head_revision bigint NOT NULL CHECK (head_revision >= 1),
    created_at_ms bigint NOT NULL CHECK (created_at_ms >= 0),
    updated_at_ms bigint NOT NULL CHECK (updated_at_ms >= created_at_ms),
    UNIQUE (project_id, name),
    UNIQUE (trigger_id, project_id, task_id),
    FOREIGN KEY (project_id, task_id) REFERENCES ql3.tasks (project_id, task_id)
);

-- Trigger revisions are immutable; each pins a task revision and its
-- execution revision digest.
CREATE TABLE ql3.trigger_revisions (
    trigger_id            uuid    NOT NULL,
    revision              bigint  NOT NULL CHECK (revision >= 1),
    project_id            uuid    NOT NULL,
    task_id               uuid    NOT NULL,
    task_revision         bigint  NOT NULL,
    execution_revision_id uuid    NOT NULL,
    execution_digest      bytea   NOT NULL CHECK (octet_length(execution_digest) = 32),
    expression            text    NOT NULL CHECK (octet_length(expression) BETWEEN 1 AND 256),
    time_zone             text    NOT NULL CHECK (octet_length(time_zone) BETWEEN 1 AND 64),
    misfire_policy        text    NOT NULL CHECK (misfire_policy IN ('skip', 'fire_once')),
    misfire_grace_ms      bigint  NOT NULL CHECK (misfire_grace_ms BETWEEN 0 AND 300000),
    enabled               boolean NOT NULL,
    activated_at_ms       bigint  NOT NULL CHECK (activated_at_ms >= 0),
    created_at_ms         bigint  NOT NULL CHECK (created_at_ms >= 0),
    PRIMARY KEY (trigger_id, revision),
    FOREIGN KEY (trigger_id, project_id, task_id) REFERENCES ql3.triggers (trigger_id, project_id, task_id),
    FOREIGN KEY (execution_revision_id, task_id, task_revision, execution_digest)
        REFERENCES ql3.execution_revisions (execution_revision_id, task_id, task_revision, digest)
);

ALTER TABLE ql3.triggers
    ADD CONSTRAINT triggers_head_revision_fkey FOREIGN KEY (trigger_id, head_revision)
    REFERENCES ql3.trigger_revisions (trigger_id, revision) DEFERRABLE INITIALLY DEFERRED;

-- Schedules: exactly one row per trigger head (primary key = trigger).
-- next_fire_at_ms NULL means "not initialised yet" (a new or reset schedule).
-- The claim fence is claim_owner + claim_token + claim_version +
-- claim_expires_at_ms. claim_version is a counter that survives a cleared
-- claim (every claim and every publish bumps it), so owner, token and expiry
-- are either all set (claimed) or all NULL (free).
CREATE TABLE ql3.trigger_schedules (
    trigger_id           uuid   PRIMARY KEY,
    project_id           uuid   NOT NULL,
    trigger_revision     bigint NOT NULL,
    next_fire_at_ms      bigint,
    last_scheduled_at_ms bigint,
    state_version        bigint NOT NULL DEFAULT 1 CHECK (state_version >= 1),
    claim_owner          text   CHECK (octet_length(claim_owner) BETWEEN 1 AND 128),
    claim_token          uuid,
    claim_version        bigint NOT NULL DEFAULT 0 CHECK (claim_version >= 0),
    claim_expires_at_ms  bigint,
    updated_at_ms        bigint NOT NULL CHECK (updated_at_ms >= 0),
    CHECK ((claim_owner IS NULL AND claim_token IS NULL AND claim_expires_at_ms IS NULL)
        OR (claim_owner IS NOT NULL AND claim_token IS NOT NULL AND claim_expires_at_ms IS NOT NULL AND claim_version >= 1)),
    -- The cursor only moves forward past what was admitted: never replay.
    CHECK (next_fire_at_ms IS NULL OR last_scheduled_at_ms IS NULL OR next_fire_at_ms > last_scheduled_at_ms),
    FOREIGN KEY (trigger_id, trigger_revision) REFERENCES ql3.trigger_revisions (trigger_id, revision),
    FOREIGN KEY (project_id) REFERENCES ql3.projects (project_id)
);

-- Claim query: due or uninitialised schedules in the coordinator's order.
CREATE INDEX trigger_schedules_claim_idx
    ON ql3.trigger_schedules (next_fire_at_ms NULLS FIRST, project_id, trigger_id);

-- Runs: one occurrence. Retry policy is copied from the spec at admission.
CREATE TABLE ql3.runs (
    run_id                uuid    PRIMARY KEY,
    project_id            uuid    NOT NULL REFERENCES ql3.projects (project_id),
    task_id               uuid    NOT NULL,
    task_revision         bigint  NOT NULL,
    execution_revision_id uuid    NOT NULL,
    execution_digest      bytea   NOT NULL CHECK (octet_length(execution_digest) = 32),
    origin                text    NOT NULL CHECK (origin IN ('cron', 'manual', 'rerun')),
    trigger_id            uuid,
    trigger_revision      bigint,
    rerun_of_run_id       uuid    REFERENCES ql3.runs (run_id),
    idempotency_key       text    NOT NULL CHECK (octet_length(idempotency_key) BETWEEN 1 AND 256),
    scheduled_for_ms      bigint  NOT NULL CHECK (scheduled_for_ms >= 0),
    priority              integer NOT NULL DEFAULT 0 CHECK (priority BETWEEN -1000 AND 1000),
    status                text    NOT NULL CHECK (status IN ('created', 'queued', 'dispatching', 'running',
                                      'retry_wait', 'lost', 'succeeded', 'failed', 'cancelled', 'timed_out')),
    version               bigint  NOT NULL DEFAULT 1 CHECK (version >= 1),
    attempt_count         integer NOT NULL DEFAULT 0 CHECK (attempt_count BETWEEN 0 AND 16),
    retry_max_attempts    integer NOT NULL CHECK (retry_max_attempts BETWEEN 1 AND 16),
    retry_backoff_base_ms bigint  NOT NULL CHECK (retry_backoff_base_ms BETWEEN 0 AND 86400000),
    retry_backoff_max_ms  bigint  NOT NULL CHECK (retry_backoff_max_ms BETWEEN 0 AND 86400000),
    retry_on_lost         boolean NOT NULL,
    timeout_ms            bigint  NOT NULL CHECK (timeout_ms > 0),
    not_before_ms         bigint  NOT NULL CHECK (not_before_ms >= 0),
    error_class           text    CHECK (error_class IN ('validation', 'dispatch', 'executor_start', 'process_exit',
                                      'cancelled_by_user', 'timeout', 'worker_lost', 'internal')),
    error_message         text    CHECK (octet_length(error_message) <= 1024),
    created_at_ms         bigint  NOT NULL CHECK (created_at_ms >= 0),
    queued_at_ms          bigint,
    cancel_requested_at_ms bigint,
    finished_at_ms        bigint,
    updated_at_ms         bigint  NOT NULL CHECK (updated_at_ms >= created_at_ms),
    UNIQUE (project_id, idempotency_key),
    CHECK (retry_backoff_max_ms >= retry_backoff_base_ms),
    CHECK (attempt_count <= retry_max_attempts),
    CHECK ((trigger_id IS NULL) = (trigger_revision IS NULL)),
    CHECK (origin <> 'cron' OR trigger_id IS NOT NULL),
    CHECK ((origin = 'rerun') = (rerun_of_run_id IS NOT NULL)),
    CHECK ((status IN ('succeeded', 'failed', 'cancelled', 'timed_out')) = (finished_at_ms IS NOT NULL)),
    FOREIGN KEY (execution_revision_id, task_id, task_revision, execution_digest)
        REFERENCES ql3.execution_revisions (execution_revision_id, task_id, task_revision, digest),
    FOREIGN KEY (trigger_id, trigger_revision) REFERENCES ql3.trigger_revisions (trigger_id, revision)
);

-- Candidate discovery: runnable runs by priority DESC, FIFO, stable id.
CREATE INDEX runs_runnable_idx ON ql3.runs (priority DESC, created_at_ms, run_id) WHERE status = 'queued';
-- Retry backoff sweep: retry_wait runs whose not_before_ms has passed.
CREATE INDEX runs_retry_wait_idx ON ql3.runs (not_before_ms, run_id) WHERE status = 'retry_wait';
CREATE INDEX runs_project_created_idx ON ql3.runs (project_id, created_at_ms DESC, run_id);
CREATE INDEX runs_trigger_scheduled_idx ON ql3.runs (trigger_id, scheduled_for_ms) WHERE trigger_id IS NOT NULL;

-- Workers and their credentials. Only the SHA-256 of a credential secret is
-- stored; there is no plaintext column to leak.
CREATE TABLE ql3.workers (
    worker_id      uuid   PRIMARY KEY,
    name           text   NOT NULL UNIQUE CHECK (char_length(name) BETWEEN 1 AND 128),
    tls_identity   text   UNIQUE CHECK (octet_length(tls_identity) BETWEEN 1 AND 256),
    status         text   NOT NULL CHECK (status IN ('active', 'disabled')),
    version        bigint NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at_ms  bigint NOT NULL CHECK (created_at_ms >= 0),
    updated_at_ms  bigint NOT NULL CHECK (updated_at_ms >= created_at_ms),
    disabled_at_ms bigint,
    CHECK ((status = 'disabled') = (disabled_at_ms IS NOT NULL))
);

CREATE TABLE ql3.worker_credentials (
    credential_id  uuid   PRIMARY KEY,
    worker_id      uuid   NOT NULL REFERENCES ql3.workers (worker_id),
    secret_digest  bytea  NOT NULL CHECK (octet_length(secret_digest) = 32),
    status         text   NOT NULL CHECK (status IN ('active', 'revoked')),
    created_at_ms  bigint NOT NULL CHECK (created_at_ms >= 0),
    expires_at_ms  bigint,
    revoked_at_ms  bigint,
    CHECK (expires_at_ms IS NULL OR expires_at_ms > created_at_ms),
    CHECK ((status = 'revoked') = (revoked_at_ms IS NOT NULL))
);

CREATE INDEX worker_credentials_worker_idx ON ql3.worker_credentials (worker_id) WHERE status = 'active';

-- Worker sessions. "expired" is derived (lease_expires_at_ms passed by
-- database time), never stored. A worker has at most one session that is not
-- offline: opening a new generation must close the previous one.
CREATE TABLE ql3.worker_sessions (
    session_id           uuid    PRIMARY KEY,
    worker_id            uuid    NOT NULL REFERENCES ql3.workers (worker_id),
    generation           bigint  NOT NULL CHECK (generation >= 1),
    status               text    NOT NULL CHECK (status IN ('online', 'draining', 'offline')),
    version              bigint  NOT NULL DEFAULT 1 CHECK (version >= 1),
    credential_id        uuid    REFERENCES ql3.worker_credentials (credential_id),
    capacity             integer NOT NULL CHECK (capacity BETWEEN 0 AND 1024),
    capabilities         jsonb   NOT NULL CHECK (jsonb_typeof(capabilities) = 'object'
                                     AND octet_length(capabilities::text) <= 16384),
    capabilities_digest  bytea   NOT NULL CHECK (octet_length(capabilities_digest) = 32),
    heartbeat_at_ms      bigint  NOT NULL CHECK (heartbeat_at_ms >= 0),
    lease_expires_at_ms  bigint  NOT NULL CHECK (lease_expires_at_ms >= heartbeat_at_ms),
    opened_at_ms         bigint  NOT NULL CHECK (opened_at_ms >= 0),
    updated_at_ms        bigint  NOT NULL CHECK (updated_at_ms >= opened_at_ms),
    closed_at_ms         bigint,
    UNIQUE (worker_id, generation),
    UNIQUE (session_id, worker_id, generation),
    CHECK ((status = 'offline') = (closed_at_ms IS NOT NULL))
);

CREATE UNIQUE INDEX worker_sessions_one_live_idx ON ql3.worker_sessions (worker_id) WHERE status <> 'offline';
CREATE INDEX worker_sessions_lease_idx ON ql3.worker_sessions (lease_expires_at_ms) WHERE status <> 'offline';

-- Attempts: one try of a Run on one executor.
CREATE TABLE ql3.attempts (
    attempt_id         uuid    PRIMARY KEY,
    run_id             uuid    NOT NULL REFERENCES ql3.runs (run_id),
    attempt            integer NOT NULL CHECK (attempt BETWEEN 1 AND 16),
    project_id         uuid    NOT NULL,
    status             text    NOT NULL CHECK (status IN ('claimed', 'starting', 'running',
                                   'succeeded', 'failed', 'cancelled', 'timed_out', 'lost')),
    executor           text    NOT NULL CHECK (executor = 'remote_worker'),
    version            bigint  NOT NULL DEFAULT 1 CHECK (version >= 1),
    worker_id          uuid,
    session_id         uuid,
    session_generation bigint,
    offer_id           text    CHECK (octet_length(offer_id) BETWEEN 1 AND 64),
    exit_code          integer,
    error_class        text    CHECK (error_class IN ('validation', 'dispatch', 'executor_start', 'process_exit',
                                   'cancelled_by_user', 'timeout', 'worker_lost', 'internal')),
    error_message      text    CHECK (octet_length(error_message) <= 1024),
    created_at_ms      bigint  NOT NULL CHECK (created_at_ms >= 0),
    started_at_ms      bigint,
    finished_at_ms     bigint,
    updated_at_ms      bigint  NOT NULL CHECK (updated_at_ms >= created_at_ms),
    UNIQUE (run_id, attempt),
    UNIQUE (attempt_id, run_id, attempt),
    CHECK ((worker_id IS NULL) = (session_id IS NULL) AND (session_id IS NULL) = (session_generation IS NULL)),
    CHECK ((status IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'lost')) = (finished_at_ms IS NOT NULL)),
    FOREIGN KEY (session_id, worker_id, session_generation)
        REFERENCES ql3.worker_sessions (session_id, worker_id, generation)
);

-- Run events: append-only, ordered per Run. Payloads are small JSON objects.
CREATE TABLE ql3.run_events (
    run_id        uuid    NOT NULL REFERENCES ql3.runs (run_id),
    sequence      bigint  NOT NULL CHECK (sequence >= 1),
    project_id    uuid    NOT NULL,
    attempt       integer CHECK (attempt BETWEEN 1 AND 16),
    type          text    NOT NULL CHECK (type ~ '^[a-z]+(\.[a-z_]+)+$' AND octet_length(type) <= 64),
    payload       jsonb   NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(payload) = 'object'
                                AND octet_length(payload::text) <= 16384),
    created_at_ms bigint  NOT NULL CHECK (created_at_ms >= 0),
    PRIMARY KEY (run_id, sequence)
);

-- Run leases: the only execution authority. The worker's lease token is
-- stored as its SHA-256 only. At most one live lease per Run.
CREATE TABLE ql3.run_leases (
    lease_id           uuid    PRIMARY KEY,
    run_id             uuid    NOT NULL,
    attempt_id         uuid    NOT NULL,
    attempt            integer NOT NULL,
    project_id         uuid    NOT NULL,
    worker_id          uuid    NOT NULL,
    session_id         uuid    NOT NULL,
    session_generation bigint  NOT NULL,
    offer_id           text    NOT NULL CHECK (octet_length(offer_id) BETWEEN 1 AND 64),
    token_digest       bytea   NOT NULL CHECK (octet_length(token_digest) = 32),
    lease_generation   bigint  NOT NULL CHECK (lease_generation >= 1),
    version            bigint  NOT NULL DEFAULT 1 CHECK (version >= 1),
    status             text    NOT NULL CHECK (status IN ('leased', 'released', 'completed')),
    release_reason     text    CHECK (octet_length(release_reason) BETWEEN 1 AND 64),
    leased_at_ms       bigint  NOT NULL CHECK (leased_at_ms >= 0),
    expires_at_ms      bigint  NOT NULL CHECK (expires_at_ms > leased_at_ms),
    updated_at_ms      bigint  NOT NULL CHECK (updated_at_ms >= leased_at_ms),
    ended_at_ms        bigint,
    UNIQUE (session_id, offer_id),
    UNIQUE (attempt_id, lease_generation),
    CHECK ((status = 'leased') = (ended_at_ms IS NULL)),
    CHECK ((status = 'released') = (release_reason IS NOT NULL)),
    FOREIGN KEY (attempt_id, run_id, attempt) REFERENCES ql3.attempts (attempt_id, run_id, attempt),
    FOREIGN KEY (session_id, worker_id, session_generation)
        REFERENCES ql3.worker_sessions (session_id, worker_id, generation)
);

CREATE UNIQUE INDEX run_leases_one_live_idx ON ql3.run_leases (run_id) WHERE status = 'leased';
-- Lease-expiry sweep.
CREATE INDEX run_leases_expiry_idx ON ql3.run_leases (expires_at_ms, lease_id) WHERE status = 'leased';
-- Live leases per session (capacity accounting, drain).
CREATE INDEX run_leases_session_idx ON ql3.run_leases (session_id) WHERE status = 'leased';

-- Log chunks, addressed by byte offset per stream so uploads are resumable.
CREATE TABLE ql3.run_log_chunks (
    run_id        uuid    NOT NULL,
    attempt       integer NOT NULL,
    stream        text    NOT NULL CHECK (stream IN ('stdout', 'stderr')),
    offset_bytes  bigint  NOT NULL CHECK (offset_bytes BETWEEN 0 AND 1073741824),
    project_id    uuid    NOT NULL,
    data          bytea   NOT NULL CHECK (octet_length(data) BETWEEN 1 AND 1048576),
    created_at_ms bigint  NOT NULL CHECK (created_at_ms >= 0),
    PRIMARY KEY (run_id, attempt, stream, offset_bytes),
    FOREIGN KEY (run_id, attempt) REFERENCES ql3.attempts (run_id, attempt)
);

CREATE INDEX run_log_chunks_created_idx ON ql3.run_log_chunks (created_at_ms);

-- Audit log: low-sensitivity lines (never tokens, secrets or their digests).
-- No foreign keys: the record outlives what it describes.
CREATE TABLE ql3.audit_log (
    audit_id     uuid   PRIMARY KEY,
    at_ms        bigint NOT NULL CHECK (at_ms >= 0),
    actor_kind   text   NOT NULL CHECK (actor_kind IN ('admin', 'worker', 'system')),
    actor_id     text   CHECK (octet_length(actor_id) BETWEEN 1 AND 128),
    action       text   NOT NULL CHECK (octet_length(action) BETWEEN 1 AND 64),
    subject_kind text   CHECK (octet_length(subject_kind) BETWEEN 1 AND 64),
    subject_id   text   CHECK (octet_length(subject_id) BETWEEN 1 AND 128),
    outcome      text   NOT NULL CHECK (outcome IN ('ok', 'denied', 'error')),
    remote_addr  text   CHECK (octet_length(remote_addr) BETWEEN 1 AND 64),
    details      jsonb  NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(details) = 'object'
                               AND octet_length(details::text) <= 4096)
);

CREATE INDEX audit_log_at_idx ON ql3.audit_log (at_ms, audit_id);
CREATE INDEX audit_log_actor_idx ON ql3.audit_log (actor_kind, actor_id, at_ms);
