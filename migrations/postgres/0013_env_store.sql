-- ql3 control-plane schema, version 13: the env store (issue 21, ADR 0038
-- for the format, ADR 0051 for the cluster).
--
-- Entries belong to a project. A value is stored only as AES-256-GCM
-- ciphertext (core/envseal: nonce ‖ sealed value, bound to the entry id and
-- name) under the cluster's data key; value_bytes is the plaintext's length,
-- kept for the joined limits (the ciphertext shows it anyway).
CREATE TABLE ql3.env_entries (
    entry_id      uuid    PRIMARY KEY,
    project_id    uuid    NOT NULL REFERENCES ql3.projects (project_id),
    name          text    NOT NULL CHECK (octet_length(name) BETWEEN 1 AND 256),
    value_ct      bytea   NOT NULL CHECK (octet_length(value_ct) BETWEEN 28 AND 131100),
    value_bytes   integer NOT NULL CHECK (value_bytes BETWEEN 0 AND 131072),
    remarks       text    NOT NULL DEFAULT '' CHECK (octet_length(remarks) <= 1024),
    enabled       boolean NOT NULL,
    pinned        boolean NOT NULL DEFAULT false,
    position      bigint  NOT NULL,
    labels        text[]  NOT NULL DEFAULT '{}' CHECK (cardinality(labels) <= 16),
    created_at_ms bigint  NOT NULL CHECK (created_at_ms >= 0),
    updated_at_ms bigint  NOT NULL CHECK (updated_at_ms >= created_at_ms)
);

-- A project's list (and the join) in QingLong order.
CREATE INDEX env_entries_project_idx ON ql3.env_entries (project_id, pinned DESC, position DESC, created_at_ms, entry_id);

-- The cluster's one data key, wrapped by each key-encryption key that may
-- open it (one row; two during a rotation). kek_id is the key file's random
-- id, never derived from the key.
CREATE TABLE ql3.env_keys (
    kek_id        text   PRIMARY KEY CHECK (kek_id ~ '^[0-9a-f]{16}$'),
    wrapped       bytea  NOT NULL CHECK (octet_length(wrapped) = 60),
    created_at_ms bigint NOT NULL CHECK (created_at_ms >= 0)
);

-- The entries an attempt's process gets, pinned when the attempt was first
-- claimed: a copy of the project's enabled entries (ciphertext only), so a
-- replayed offer is byte-identical and an edit reaches only later attempts.
-- No row: the project had no enabled entry at the claim. Deleted with the
-- attempt (retention).
CREATE TABLE ql3.attempt_envs (
    attempt_id    uuid   PRIMARY KEY REFERENCES ql3.attempts (attempt_id) ON DELETE CASCADE,
    project_id    uuid   NOT NULL,
    entries       jsonb  NOT NULL CHECK (jsonb_typeof(entries) = 'array'),
    created_at_ms bigint NOT NULL CHECK (created_at_ms >= 0)
);

-- How many occurrences of env values the worker masked in the attempt's
-- output (the completion's maskedCount); NULL before it completes.
ALTER TABLE ql3.attempts
    ADD COLUMN masked_count bigint CHECK (masked_count >= 0);
