-- ql3-edge schema, version 2 (SQLite): the shared env store (ADR 0038),
-- an audit trail for reads of secret values, and the count of masked
-- secret occurrences per attempt.

-- The data key that encrypts env values, wrapped (AES-256-GCM) by a
-- key-encryption key from the key file. One data key; normally one
-- wrapping, two for the moment of a key rotation (new one written first,
-- old one removed after the new key file is in place).
CREATE TABLE env_keys (
    kek_id        TEXT    NOT NULL PRIMARY KEY CHECK (length(kek_id) = 16),
    wrapped       BLOB    NOT NULL,
    created_at_ms INTEGER NOT NULL
) STRICT;

-- Values are stored only as ciphertext: nonce || AES-256-GCM(value) with
-- the entry's id and name as additional data, so a ciphertext moved to
-- another row or name does not open. value_bytes (the plaintext length)
-- lets the joined limits be checked without decrypting.
CREATE TABLE envs (
    id            TEXT    NOT NULL PRIMARY KEY,
    name          TEXT    NOT NULL CHECK (length(name) BETWEEN 1 AND 256 AND instr(name, '=') = 0
                                          AND upper(substr(name, 1, 4)) <> 'QL3_'),
    ciphertext    BLOB    NOT NULL,
    value_bytes   INTEGER NOT NULL CHECK (value_bytes BETWEEN 0 AND 131072),
    remarks       TEXT    NOT NULL DEFAULT '' CHECK (length(CAST(remarks AS BLOB)) <= 1024),
    enabled       INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    position      INTEGER NOT NULL,
    pinned        INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
    labels        TEXT    NOT NULL DEFAULT '[]', -- JSON array of strings
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
) STRICT;

CREATE INDEX envs_order ON envs (pinned DESC, position DESC, created_at_ms, id);
CREATE INDEX envs_enabled ON envs (name) WHERE enabled = 1;

-- Who read or changed what in the env store (and other audited actions):
-- never a value.
CREATE TABLE audit_log (
    seq     INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    at_ms   INTEGER NOT NULL,
    action  TEXT    NOT NULL CHECK (length(action) BETWEEN 1 AND 64),
    target  TEXT    NOT NULL DEFAULT '' CHECK (length(target) <= 256),
    actor   TEXT    NOT NULL DEFAULT '' CHECK (length(actor) <= 64),
    detail  TEXT    NOT NULL DEFAULT '' CHECK (length(detail) <= 512)
) STRICT;

ALTER TABLE attempts ADD COLUMN masked_count INTEGER NOT NULL DEFAULT 0 CHECK (masked_count >= 0);
