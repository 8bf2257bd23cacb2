-- ql3 control-plane schema, version 8: a remote run writes fewer index
-- entries (issue 9 benchmark, ADR 0011 amendment "write cost per run").
--
-- Two of the four row versions an Attempt gets per remote run change no
-- indexed column once the timeout index no longer names status: the claim
-- (worker, session, offer) and the running ACK (status starting → running,
-- started time). With free space on the page PostgreSQL writes them as
-- heap-only tuples: no entry in any of the attempts' four indexes.
-- fillfactor 80 leaves that space on pages filled from now on (existing
-- pages keep theirs; nothing is rewritten).
ALTER TABLE ql3.attempts SET (fillfactor = 80);

-- The same rows as before (a deadline is set at the starting ACK, only on
-- a started attempt, and finished_at_ms is set exactly when the attempt
-- ends), now by columns the running ACK does not change. The sweeper's
-- timeout scan states finished_at_ms IS NULL so the planner can use it.
DROP INDEX ql3.attempts_deadline_idx;
CREATE INDEX attempts_deadline_idx ON ql3.attempts (deadline_at_ms, attempt_id)
    WHERE deadline_at_ms IS NOT NULL AND finished_at_ms IS NULL;
