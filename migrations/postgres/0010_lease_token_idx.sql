-- ql3 control-plane schema, version 10: the offer pull's token check is an
-- index lookup (issue 9 benchmark, ADR 0009 amendment).
--
-- Every pull (idle ones included) asks whether its lease token is already
-- bound to another offer of the session. Without an index on the token
-- that read every lease the session ever had (or, with sequential scans
-- allowed, the whole table): measured 76 buffers per pull after a few
-- thousand runs, growing with the session's lifetime. With this index it
-- reads at most one entry (tokens are 256 random bits).
CREATE INDEX run_leases_token_idx ON ql3.run_leases (session_id, token_digest);
