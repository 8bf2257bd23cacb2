-- ql3 control-plane schema, version 17: scoped API tokens and accounts on
-- the control plane (issue 26, ADR 0060; the edge's half is ADR 0049).
--
-- A token's scopes are core/access's native scopes; a token made before
-- this version holds every right, so it becomes 'admin'.
ALTER TABLE ql3.api_tokens ADD COLUMN scopes text[] NOT NULL DEFAULT ARRAY['admin']
    CHECK (cardinality(scopes) BETWEEN 1 AND 8
           AND scopes <@ ARRAY['read-only', 'runs', 'envs', 'scripts', 'admin']);

-- Accounts: a username, its argon2id PHC hash (core/password), the TOTP
-- secret as base32 text ('' when off; it must be readable to check codes),
-- the last accepted TOTP step (a code counts once) and the lockout state
-- (core/signin).
CREATE TABLE ql3.accounts (
    username          text   PRIMARY KEY CHECK (username ~ '^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$'),
    password_hash     text   NOT NULL CHECK (password_hash LIKE '$argon2id$%' AND octet_length(password_hash) <= 256),
    totp_secret       text   NOT NULL DEFAULT '' CHECK (octet_length(totp_secret) <= 128),
    totp_last_counter bigint NOT NULL DEFAULT 0 CHECK (totp_last_counter >= 0),
    failures          int    NOT NULL DEFAULT 0 CHECK (failures >= 0),
    locked_until_ms   bigint NOT NULL DEFAULT 0 CHECK (locked_until_ms >= 0),
    created_at_ms     bigint NOT NULL CHECK (created_at_ms >= 0)
);

-- The sign-in log: every attempt, never a password or a code. The newest
-- 10,000 lines are kept (the store trims on insert).
CREATE TABLE ql3.signins (
    seq      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at_ms    bigint NOT NULL CHECK (at_ms >= 0),
    username text   NOT NULL CHECK (octet_length(username) <= 256),
    outcome  text   NOT NULL CHECK (outcome IN ('ok', 'bad_password', 'bad_totp', 'locked', 'unknown_user')),
    remote   text   NOT NULL CHECK (octet_length(remote) <= 128)
);
