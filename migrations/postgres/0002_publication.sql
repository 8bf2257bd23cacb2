-- ql3 control-plane schema, version 2: what publication and the admin API
-- need beyond version 1.
--
-- Privileges are not granted here: the runner revokes everything and
-- installs the exact matrix after every migration (controlplane/postgres,
-- grants). Both tables belong to ql3_admin's job only; ql3_runtime and
-- ql3_worker_ingress get nothing on them.

-- Publication mutations: one row per client mutationId, written in the same
-- transaction as the publication it records. A retry with the same id and
-- the same request (same kind and request digest) gets result back unchanged;
-- the same id with a different request is a conflict.
CREATE TABLE ql3.publication_mutations (
    mutation_id    text   PRIMARY KEY CHECK (octet_length(mutation_id) BETWEEN 1 AND 128
                                             AND mutation_id ~ '^[A-Za-z0-9._:-]+$'),
    kind           text   NOT NULL CHECK (kind ~ '^[a-z]+(\.[a-z_]+)+$' AND octet_length(kind) <= 64),
    request_digest bytea  NOT NULL CHECK (octet_length(request_digest) = 32),
    result         jsonb  NOT NULL CHECK (jsonb_typeof(result) = 'object' AND octet_length(result::text) <= 262144),
    created_at_ms  bigint NOT NULL CHECK (created_at_ms >= 0)
);

CREATE INDEX publication_mutations_created_idx ON ql3.publication_mutations (created_at_ms);

-- Admin API tokens (ql3c_<16 hex id>_<64 hex secret>). Only the SHA-256 of
-- the whole token text is stored: there is no plaintext column to leak.
CREATE TABLE ql3.api_tokens (
    token_id      text   PRIMARY KEY CHECK (token_id ~ '^[0-9a-f]{16}$'),
    name          text   NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
    token_digest  bytea  NOT NULL UNIQUE CHECK (octet_length(token_digest) = 32),
    status        text   NOT NULL CHECK (status IN ('active', 'revoked')),
    created_at_ms bigint NOT NULL CHECK (created_at_ms >= 0),
    expires_at_ms bigint,
    revoked_at_ms bigint,
    CHECK (expires_at_ms IS NULL OR expires_at_ms > created_at_ms),
    CHECK ((status = 'revoked') = (revoked_at_ms IS NOT NULL))
);
